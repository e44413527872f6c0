//! Starting one rank: its command line, environment, stdio, process group and CPU.
//!
//! A rank on this machine runs the program directly with the contract in its
//! environment. A rank on another host is started by the hosts' [`RemoteStart`]
//! ([`crate::remote`]): a template's process, or an `/xcpu` session, stands for it.
//!
//! Each started process runs in its own process group (so teardown reaches anything it
//! started) and gets SIGKILL if the launcher thread that started it dies
//! (`PR_SET_PDEATHSIG`), so a killed launcher leaves no orphans here. The thread that
//! calls [`spawn_rank`] must therefore outlive the rank, which `run` guarantees by
//! reaping every rank before it returns. Ranks read stdin from /dev/null.

use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use std::os::unix::process::CommandExt;

use nf_pmi::{JobEnv, PmiAddr};

use crate::hosts::{is_local, is_portable_env_name, Hosts, Place};
use crate::remote::{ChildRank, RankProcess, RemoteRank};
use crate::spec::LaunchSpec;

/// The CPUs this job's ranks on a host share, for their waiting policy.
pub(crate) const JOB_CPUS: &str = "NF_JOB_CPUS";

/// What every rank of a job shares.
pub(crate) struct Plan<'a> {
    /// The job.
    pub(crate) spec: &'a LaunchSpec,
    /// The program, resolved to a path (absolute when some ranks run on other hosts).
    pub(crate) program: &'a Path,
    /// The job id.
    pub(crate) job_id: &'a str,
    /// The PMI server.
    pub(crate) pmi_addr: PmiAddr,
    /// The PMI server's secret (TCP).
    pub(crate) secret: Option<String>,
    /// CPUs to pin directly started ranks to, round robin by local rank (`--bind-to core`).
    pub(crate) cpus: Option<&'a [usize]>,
    /// The CPUs this launcher may use, counted once before any rank is pinned, for
    /// the ranks' waiting policy (`NF_JOB_CPUS`); `None` when the user set it.
    pub(crate) job_cpus: Option<usize>,
    /// The hosts of a multi-host job, with every rank's place on them.
    pub(crate) hosts: Option<(&'a Hosts, Vec<Place>)>,
}

impl Plan<'_> {
    /// The host of `rank` in a multi-host job.
    pub(crate) fn host(&self, rank: usize) -> Option<&str> {
        let (hosts, places) = self.hosts.as_ref()?;
        Some(hosts.hosts[places[rank].host].name.as_str())
    }

    /// Whether `rank` is started through the remote template.
    pub(crate) fn is_remote(&self, rank: usize) -> bool {
        self.host(rank).is_some_and(|h| !is_local(h))
    }

    /// How output lines of `rank` are tagged: `3`, or `3@h2` in a multi-host job.
    pub(crate) fn label(&self, rank: usize) -> String {
        match self.host(rank) {
            Some(h) => format!("{rank}@{h}"),
            None => rank.to_string(),
        }
    }

    /// The environment contract of `rank`.
    fn contract(&self, rank: usize) -> JobEnv {
        let size = self.spec.nprocs;
        let (local_rank, local_size) = match &self.hosts {
            Some((_, places)) => (places[rank].local_rank, places[rank].local_size),
            None => (rank, size),
        };
        JobEnv {
            rank,
            size,
            local_rank,
            local_size,
            job_id: self.job_id.to_owned(),
            pmi_addr: self.pmi_addr.clone(),
            secret: self.secret.clone(),
            host: self.host(rank).map(str::to_owned),
            timeout: nf_pmi::env::DEFAULT_TIMEOUT,
        }
    }
}

/// The rank on another host that `rank` is, with its environment (`env`, from
/// [`Plan::remote_env`]); `None` for a rank started directly.
pub(crate) fn remote_rank<'a>(
    plan: &'a Plan<'_>,
    rank: usize,
    env: &'a [(OsString, OsString)],
) -> Option<RemoteRank<'a>> {
    let host = plan.host(rank).filter(|h| !is_local(h))?;
    Some(RemoteRank {
        host,
        rank,
        program: plan.program,
        args: &plan.spec.args,
        env,
        tag_output: plan.spec.tag_output,
    })
}

impl Plan<'_> {
    /// The environment of `rank` when it runs on another host.
    pub(crate) fn remote_env(&self, rank: usize) -> Vec<(OsString, OsString)> {
        remote_env(self.spec, &self.contract(rank))
    }
}

/// Starts rank `rank` of the plan on this machine.
pub(crate) fn spawn_local(plan: &Plan<'_>, rank: usize) -> io::Result<Box<dyn RankProcess>> {
    let spec = plan.spec;
    let contract = plan.contract(rank);
    let mut cmd = Command::new(plan.program);
    cmd.arg0(&spec.program).args(&spec.args);
    // Counted before any rank is pinned (see nf_core's waiting policy); one the
    // user set wins.
    if let Some(n) = plan.job_cpus {
        cmd.env(JOB_CPUS, n.to_string());
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    for (k, v) in contract.vars() {
        cmd.env(k, v);
    }
    let cpu_set = match plan.cpus {
        Some(cpus) if !cpus.is_empty() => Some(cpu_set_of(cpus[contract.local_rank % cpus.len()])),
        _ => None,
    };
    let child = spawn_process(cmd, spec.tag_output, cpu_set, true)?;
    Ok(Box::new(ChildRank(child)))
}

/// Starts `cmd` as a rank's process: stdin from /dev/null, stdout and stderr piped
/// when `piped` (else the launcher's), a process group of its own when `own_group`,
/// SIGKILL when the launcher thread dies, pinned to `cpu_set` if given.
pub(crate) fn spawn_process(
    mut cmd: Command,
    piped: bool,
    cpu_set: Option<libc::cpu_set_t>,
    own_group: bool,
) -> io::Result<Child> {
    cmd.stdin(Stdio::null());
    if piped {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    if own_group {
        cmd.process_group(0);
    }
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec; it only makes system
    // calls (prctl, getppid, sched_setaffinity) on values prepared before the fork and
    // builds errors without allocating, so it is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || child_setup(parent, cpu_set.as_ref()));
    }
    cmd.spawn()
}

/// The environment a remote rank gets on its command line, later sources winning: the
/// launcher's `NF_*` variables, the spec's extras, the contract.
pub(crate) fn remote_env(spec: &LaunchSpec, contract: &JobEnv) -> Vec<(OsString, OsString)> {
    let mut inherited: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| k.as_bytes().starts_with(b"NF_") && is_portable_env_name(k))
        .collect();
    inherited.sort();
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let sources = inherited
        .into_iter()
        .chain(spec.env.iter().cloned())
        .chain(contract.vars().into_iter().map(|(k, v)| (k.into(), v)));
    for (k, v) in sources {
        match env.iter_mut().find(|(name, _)| *name == k) {
            Some(slot) => slot.1 = v,
            None => env.push((k, v)),
        }
    }
    env
}

/// Runs in the child before exec: die with the launcher, and pin to a CPU if asked.
fn child_setup(parent: u32, cpu_set: Option<&libc::cpu_set_t>) -> io::Result<()> {
    nf_sys::spawn::parent_death_signal(parent, libc::SIGKILL)?;
    if let Some(set) = cpu_set {
        // SAFETY: `set` points to a valid cpu_set_t of the size passed.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A CPU set holding only `cpu` (which must be below `CPU_SETSIZE`, as all ids from
/// [`allowed_cpus`] are).
fn cpu_set_of(cpu: usize) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bit array, for which all zeroes is the empty set, and
    // CPU_SET only writes inside it for cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        set
    }
}

/// The CPUs the launcher may run on, ascending.
pub(crate) fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: zeroed is a valid empty cpu_set_t; sched_getaffinity writes at most the size
    // passed; CPU_ISSET reads inside the set for every cpu < CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        let max = usize::try_from(libc::CPU_SETSIZE).unwrap_or(0);
        Ok((0..max).filter(|&cpu| libc::CPU_ISSET(cpu, &set)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launcher_has_at_least_one_cpu() {
        let cpus = allowed_cpus().unwrap();
        assert!(!cpus.is_empty());
        assert!(cpus.windows(2).all(|w| w[0] < w[1]));
    }
}
