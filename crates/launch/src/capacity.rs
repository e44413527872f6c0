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
//!    `RLIMIT_NPROC` is refused (root, which the kernel does not hold to it, is not
//!    checked). Processes the user already runs count against the same limit; a rank
//!    that then cannot be forked is reported by name, and the ranks started before it
//!    are stopped (`crate::job`, step 3).
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
    if rustix::process::getuid().is_root() {
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
