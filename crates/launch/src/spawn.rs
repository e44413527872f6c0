//! Starting one rank: its command line, environment, stdio, process group and CPU.
//!
//! Each rank runs in its own process group (so teardown reaches anything it started) and
//! gets SIGKILL if the launcher thread that started it dies (`PR_SET_PDEATHSIG`), so a
//! killed launcher leaves no orphans. The thread that calls [`spawn_rank`] must therefore
//! outlive the rank, which `run` guarantees by reaping every rank before it returns.
//! Ranks read stdin from /dev/null.

use std::io;
use std::path::Path;
use std::process::{Child, Command, Stdio};

use std::os::unix::process::CommandExt;

use nf_pmi::JobEnv;

use crate::spec::LaunchSpec;

/// What every rank of a job shares.
pub(crate) struct Plan<'a> {
    /// The job.
    pub(crate) spec: &'a LaunchSpec,
    /// The program, resolved to a path.
    pub(crate) program: &'a Path,
    /// The job id.
    pub(crate) job_id: &'a str,
    /// The PMI socket.
    pub(crate) pmi_addr: &'a Path,
    /// CPUs to pin ranks to, round robin (`--bind-to core`).
    pub(crate) cpus: Option<&'a [usize]>,
}

/// Starts rank `rank` of the plan.
pub(crate) fn spawn_rank(plan: &Plan<'_>, rank: usize) -> io::Result<Child> {
    let spec = plan.spec;
    let mut cmd = Command::new(plan.program);
    cmd.arg0(&spec.program).args(&spec.args);
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let contract = JobEnv {
        rank,
        size: spec.nprocs,
        local_rank: rank,
        local_size: spec.nprocs,
        job_id: plan.job_id.to_owned(),
        pmi_addr: plan.pmi_addr.to_owned(),
        timeout: nf_pmi::env::DEFAULT_TIMEOUT,
    };
    for (k, v) in contract.vars() {
        cmd.env(k, v);
    }
    cmd.stdin(Stdio::null());
    if spec.tag_output {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    }
    cmd.process_group(0);
    let cpu_set = match plan.cpus {
        Some(cpus) if !cpus.is_empty() => Some(cpu_set_of(cpus[rank % cpus.len()])),
        _ => None,
    };
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec; it only makes system
    // calls (prctl, getppid, sched_setaffinity) on values prepared before the fork and
    // builds errors without allocating, so it is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || child_setup(parent, cpu_set.as_ref()));
    }
    cmd.spawn()
}

/// Runs in the child before exec: die with the launcher, and pin to a CPU if asked.
fn child_setup(parent: u32, cpu_set: Option<&libc::cpu_set_t>) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // The launcher may have died between fork and prctl; then nobody would kill us.
    // SAFETY: getppid has no preconditions.
    if u32::try_from(unsafe { libc::getppid() }).ok() != Some(parent) {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
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
