//! Starting a program as another user, in its own process group, with resource limits:
//! what a service running as root does to run a job for the user it serves.
//!
//! The child does, in this order, between `fork` and `exec` (only async-signal-safe
//! calls, every value prepared before the fork):
//!
//! 1. `setrlimit` for each limit asked for (while still privileged, so a limit can be
//!    set below or above the service's own soft limit);
//! 2. `setgroups`, `setgid`, `setuid` to the user's identity (groups first: only root
//!    may set them);
//! 3. `chdir` to the working directory, *as the user*: a directory the user could not
//!    enter is refused, as it would be for the user's own shell (std's `current_dir`
//!    would run it before step 2, as root);
//! 4. `exec`, which resolves the program as the user.
//!
//! std puts the child in its own process group ([`CommandExt::process_group`]) before
//! these steps, so the whole job can be signalled with one `kill(-pgid)`.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};

/// Who a started program runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Primary group id.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

/// One resource limit, set as both soft and hard limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rlimit {
    /// Processes of the user (`RLIMIT_NPROC`).
    Processes(u64),
    /// CPU seconds (`RLIMIT_CPU`).
    CpuSeconds(u64),
    /// Bytes of address space (`RLIMIT_AS`).
    AddressSpace(u64),
    /// Open files (`RLIMIT_NOFILE`).
    OpenFiles(u64),
}

impl Rlimit {
    fn resource(self) -> (libc::__rlimit_resource_t, u64) {
        match self {
            Rlimit::Processes(n) => (libc::RLIMIT_NPROC, n),
            Rlimit::CpuSeconds(n) => (libc::RLIMIT_CPU, n),
            Rlimit::AddressSpace(n) => (libc::RLIMIT_AS, n),
            Rlimit::OpenFiles(n) => (libc::RLIMIT_NOFILE, n),
        }
    }
}

/// Starts `cmd` in a process group of its own, with `limits`, as `run_as` (`None`:
/// as this process's user) in `dir` (the steps in the module docs).
pub fn spawn(
    mut cmd: Command,
    run_as: Option<&RunAs>,
    dir: &Path,
    limits: &[Rlimit],
) -> io::Result<Child> {
    let dir = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "directory holds a NUL"))?;
    let limits: Vec<(libc::__rlimit_resource_t, u64)> =
        limits.iter().map(|l| l.resource()).collect();
    let run_as = run_as.cloned();
    cmd.process_group(0);
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe system calls (setrlimit, setgroups, setgid, setuid, chdir) on
    // values prepared before the fork; it allocates nothing and takes no locks.
    unsafe {
        cmd.pre_exec(move || {
            for &(resource, value) in &limits {
                let lim = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &lim) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(id) = &run_as {
                if libc::setgroups(id.groups.len(), id.groups.as_ptr()) != 0
                    || libc::setgid(id.gid) != 0
                    || libc::setuid(id.uid) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            if libc::chdir(dir.as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Sends `signal` to every process of process group `pgid`; a group that is gone
/// already is not an error.
pub fn signal_group(pgid: u32, signal: i32) -> io::Result<()> {
    let pgid = i32::try_from(pgid).map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
    // SAFETY: killpg takes plain integers and touches no memory of ours.
    if unsafe { libc::killpg(pgid, signal) } != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            return Err(err);
        }
    }
    Ok(())
}

/// The number of signal `name` (`TERM`, `SIGKILL`, `9`), if it is one.
pub fn signal_number(name: &str) -> Option<i32> {
    if let Ok(n) = name.parse::<i32>() {
        return (1..=64).contains(&n).then_some(n);
    }
    let name = name.strip_prefix("SIG").unwrap_or(name);
    Some(match name.to_ascii_uppercase().as_str() {
        "HUP" => libc::SIGHUP,
        "INT" => libc::SIGINT,
        "QUIT" => libc::SIGQUIT,
        "KILL" => libc::SIGKILL,
        "USR1" => libc::SIGUSR1,
        "USR2" => libc::SIGUSR2,
        "TERM" => libc::SIGTERM,
        "CONT" => libc::SIGCONT,
        "STOP" => libc::SIGSTOP,
        "ALRM" => libc::SIGALRM,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_in_its_own_group_in_the_directory_with_limits() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "pwd; ulimit -n; ps -o pgid= -p $$"])
            .stdout(std::process::Stdio::piped());
        let child = spawn(cmd, None, dir.path(), &[Rlimit::OpenFiles(77)]).unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(lines[0], real.to_str().unwrap());
        assert_eq!(lines[1], "77");
        assert_eq!(lines[2], pid.to_string(), "the job leads its own group");
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_silent_cwd() {
        let err = spawn(
            Command::new("/bin/true"),
            None,
            Path::new("/nonexistent/nowhere"),
            &[],
        )
        .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_number("TERM"), Some(libc::SIGTERM));
        assert_eq!(signal_number("SIGKILL"), Some(libc::SIGKILL));
        assert_eq!(signal_number("9"), Some(9));
        assert_eq!(signal_number("0"), None);
        assert_eq!(signal_number("BOGUS"), None);
    }
}
