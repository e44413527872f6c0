//! How many ranks this machine may start: checked before any rank starts.
//!
//! A mistyped `-n 100000` would otherwise fork until the machine stops answering
//! (it reached 6,128 processes and load 23 on a 2-core machine before anyone noticed).
//!
//! Rules, for the ranks the launcher starts on this machine (a multi-host job's
//! `localhost` entry, or every rank of a single-host job):
//!
//! 1. **Ranks per CPU.** More than [`MAX_RANKS_PER_CPU`] ranks per CPU this launcher
//!    may use (its affinity mask and cgroup quota, [`nf_sys::cpus::usable`]) are
//!    refused unless the job says `oversubscribe` (`nf run --oversubscribe`). Up to
//!    that many run by default, unlike Open MPI's one rank per slot: ranks that
//!    outnumber the cores yield rather than spin (`nf_core::wait`), so a few per core
//!    is a working regime (the demo runs 4 ranks on 2 cores), while a hundred per core
//!    is almost always a typo.
//! 2. **Open files.** The launcher holds one PMI connection per rank and, with piped
//!    output (`--tag-output`), two pipes more. It raises its soft `RLIMIT_NOFILE` to
//!    the hard limit, as MPI launchers do, and refuses a job that still would not fit,
//!    rather than failing the wire-up of the rank that finds no descriptor left.
//! 3. **Processes.** A job whose directly started ranks alone exceed the user's soft
//!    `RLIMIT_NPROC` is refused (the host's root and holders of `CAP_SYS_RESOURCE`, whom
//!    the kernel does not hold to it, are not checked; root of a user namespace is).
//!    Processes the user already runs count against the same limit; a rank that then
//!    cannot be forked is reported by name, and the ranks started before it are stopped
//!    (`crate::job`, step 3).
//!
//! Ranks on other hosts are that host's to bound: its starter ([`crate::host_ranks`],
//! rule 5, which runs these checks there) or its `nf serve`.

use std::io;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

use crate::error::LaunchError;

/// Ranks per usable CPU beyond which a job must say `oversubscribe` (rule 1).
pub const MAX_RANKS_PER_CPU: usize = 16;

/// Descriptors the launcher keeps for itself beyond its ranks' (stdio, the PMI
/// listener, logs, the program's ELF check).
const RESERVED_FILES: u64 = 64;

/// What the job asks of this machine.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Demand {
    /// Ranks started directly by this launcher.
    pub(crate) local_ranks: usize,
    /// Ranks of the job in all (each holds a PMI connection to this launcher).
    pub(crate) all_ranks: usize,
    /// Whether each local rank's output comes through two pipes.
    pub(crate) piped: bool,
    /// Whether the job accepts more than [`MAX_RANKS_PER_CPU`] per CPU.
    pub(crate) oversubscribe: bool,
}

/// The CPUs rule 1 counts: those this process may run on.
pub fn usable_cpus() -> usize {
    nf_sys::cpus::usable().max(1)
}

/// Checks `demand` against this machine (rules 1–3), raising the soft open-file
/// limit as far as the hard one allows.
pub(crate) fn check(demand: Demand) -> Result<(), LaunchError> {
    check_cpus(demand, usable_cpus())?;
    check_files(demand)?;
    check_processes(demand)
}

/// Rule 1 against `cpus` usable CPUs.
fn check_cpus(demand: Demand, cpus: usize) -> Result<(), LaunchError> {
    let cpus = cpus.max(1);
    if demand.oversubscribe || demand.local_ranks <= cpus.saturating_mul(MAX_RANKS_PER_CPU) {
        return Ok(());
    }
    Err(LaunchError::Oversubscribed {
        ranks: demand.local_ranks,
        cpus,
        per_cpu: MAX_RANKS_PER_CPU,
    })
}

/// Descriptors the launcher needs for `demand` (rule 2).
fn files_needed(demand: Demand) -> u64 {
    let per_local = if demand.piped { 2 } else { 0 };
    (demand.local_ranks as u64)
        .saturating_mul(per_local)
        .saturating_add(demand.all_ranks as u64)
        .saturating_add(RESERVED_FILES)
}

/// Rule 2: raises the soft open-file limit to the hard one when the job needs more.
fn check_files(demand: Demand) -> Result<(), LaunchError> {
    let need = files_needed(demand);
    let limit = getrlimit(Resource::Nofile);
    let (soft, hard) = (limit.current, limit.maximum);
    if soft.is_none_or(|s| s >= need) {
        return Ok(());
    }
    if hard.is_none_or(|h| h >= need) {
        let raised = Rlimit {
            current: hard,
            maximum: hard,
        };
        return setrlimit(Resource::Nofile, raised).map_err(|e| LaunchError::Files {
            ranks: demand.all_ranks,
            need,
            limit: soft.unwrap_or(0),
            why: format!(
                "raising the soft limit to the hard one failed: {}",
                io::Error::from(e)
            ),
        });
    }
    Err(LaunchError::Files {
        ranks: demand.all_ranks,
        need,
        limit: hard.unwrap_or(0),
        why: "the hard limit is below that".to_owned(),
    })
}

/// Rule 3.
fn check_processes(demand: Demand) -> Result<(), LaunchError> {
    if exempt_from_nproc() {
        return Ok(());
    }
    match getrlimit(Resource::Nproc).current {
        Some(limit) if demand.local_ranks as u64 > limit => Err(LaunchError::Processes {
            ranks: demand.local_ranks,
            limit,
        }),
        _ => Ok(()),
    }
}

/// Whether the kernel lets this process fork past `RLIMIT_NPROC`: its real user is the
/// host's root, or it holds `CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN` in the host's user
/// namespace. Root of a user namespace of its own (a rootless container) is neither, and
/// the kernel holds it to the limit.
fn exempt_from_nproc() -> bool {
    let read = |path| std::fs::read_to_string(path).ok();
    exempt(
        rustix::process::getuid().as_raw(),
        read("/proc/self/uid_map").as_deref(),
        read("/proc/self/status").as_deref(),
    )
}

/// [`exempt_from_nproc`] from this process's real uid, `uid_map` and `status` (`None`:
/// unreadable, taken as the host's namespace with no capabilities known).
fn exempt(uid: u32, uid_map: Option<&str>, status: Option<&str>) -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    const CAP_SYS_RESOURCE: u32 = 24;
    let ranges: Vec<[u32; 3]> = uid_map
        .unwrap_or("0 0 4294967295")
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace().map(|w| w.parse::<u32>().ok());
            Some([w.next()??, w.next()??, w.next()??])
        })
        .collect();
    let host_uid = ranges
        .iter()
        .find(|[inside, _, count]| uid.checked_sub(*inside).is_some_and(|d| d < *count))
        .map(|[inside, outside, _]| outside + (uid - inside));
    let host_namespace = ranges == [[0, 0, u32::MAX]];
    let caps = status
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("CapEff:")))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .unwrap_or(0);
    let capable = caps & (1 << CAP_SYS_ADMIN | 1 << CAP_SYS_RESOURCE) != 0;
    host_uid == Some(0) || (host_namespace && capable)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(local_ranks: usize, oversubscribe: bool) -> Demand {
        Demand {
            local_ranks,
            all_ranks: local_ranks,
            piped: false,
            oversubscribe,
        }
    }

    #[test]
    fn ranks_beyond_the_per_cpu_bound_need_oversubscribe() {
        assert!(check_cpus(demand(32, false), 2).is_ok());
        let err = check_cpus(demand(33, false), 2).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("33 ranks") && text.contains("--oversubscribe"),
            "{text}"
        );
        assert!(check_cpus(demand(33, true), 2).is_ok());
        // A machine that reports no CPU still runs a job of the bound's size.
        assert!(check_cpus(demand(MAX_RANKS_PER_CPU, false), 0).is_ok());
    }

    #[test]
    fn only_the_hosts_root_or_capabilities_escape_the_process_limit() {
        const HOST: &str = "         0          0 4294967295\n";
        const ALL: &str = "Name:\tnf\nCapEff:\t000001ffffffffff\n";
        const NONE: &str = "Name:\tnf\nCapEff:\t0000000000000000\n";
        const RESOURCE: &str = "CapEff:\t0000000001000000\n";
        assert!(exempt(0, Some(HOST), Some(NONE)), "the host's root");
        assert!(!exempt(1000, Some(HOST), Some(NONE)), "a user");
        assert!(exempt(1000, Some(HOST), Some(RESOURCE)), "CAP_SYS_RESOURCE");
        // `unshare -U -r` as user 65534: root inside, every capability, held anyway.
        let rootless = "         0      65534          1\n";
        assert!(!exempt(0, Some(rootless), Some(ALL)));
        // The host's root in a namespace of its own stays the host's root.
        assert!(exempt(
            0,
            Some("         0          0          1\n"),
            Some(ALL)
        ));
        // A user mapped to root through a range.
        assert!(exempt(5, Some("5 0 1\n6 100000 65536\n"), Some(NONE)));
        assert!(!exempt(7, Some("5 0 1\n6 100000 65536\n"), Some(ALL)));
        // Nothing readable: the host's namespace, no capabilities known.
        assert!(exempt(0, None, None));
        assert!(!exempt(1000, None, None));
    }

    #[test]
    fn piped_output_costs_two_descriptors_per_local_rank() {
        let plain = files_needed(demand(10, false));
        let piped = files_needed(Demand {
            piped: true,
            ..demand(10, false)
        });
        assert_eq!(piped - plain, 20);
        assert_eq!(plain, 10 + RESERVED_FILES);
        // A rank count near usize::MAX is refused, not an overflow.
        assert_eq!(files_needed(demand(usize::MAX, true)), u64::MAX);
    }
}
