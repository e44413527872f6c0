//! Starting a program as another user, in a session of its own with nothing inherited,
//! with resource limits: what a service running as root does to run a job for the user
//! it serves (OpenSSH's `sshd` and Slurm's `slurmstepd` are the references).
//!
//! The child does, in this order, between `fork` and `exec` (only async-signal-safe
//! calls, every value prepared before the fork):
//!
//! 1. `setsid`: a new session and process group, both the job's pid, with no
//!    controlling terminal — so the job cannot open the terminal the service was
//!    started from (`/dev/tty` is `ENXIO`) nor push input into it with `TIOCSTI`, and
//!    one `kill(-pid)` reaches its group;
//! 2. every descriptor but 0, 1 and 2 marked close-on-exec (`close_range(3, ~0,
//!    CLOSE_RANGE_CLOEXEC)`, Linux 5.11; older kernels: `fcntl` on each descriptor
//!    below the hard `RLIMIT_NOFILE`), so nothing the service holds or inherited
//!    reaches the job — marked, not closed, because std reports a failed `exec` through
//!    a close-on-exec pipe of its own;
//! 3. joining the job's cgroup, if given ([`crate::cgroup`], rule 2), while still root;
//! 4. `setrlimit` for each limit asked for (while still privileged, so a limit can be
//!    set below or above the service's own soft limit; [`job_limits`] keeps a session
//!    from raising the node's); without an open-files limit, the soft one goes back
//!    to [`JOB_SOFT_NOFILE`] (the hard one stays), since the service raised its own
//!    for its many connections and a job's `select(2)` breaks past 1024, as systemd
//!    does for the services it starts;
//! 5. `setgroups`, `setgid`, `setuid` to the user's identity (groups first: only root
//!    may set them);
//! 6. `chdir` to the working directory, *as the user*: a directory the user could not
//!    enter is refused, as it would be for the user's own shell (std's `current_dir`
//!    would run it before step 5, as root);
//! 7. `exec`, which resolves the program as the user.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use crate::cgroup::JobCgroup;

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

    /// The value.
    pub fn value(self) -> u64 {
        self.resource().1
    }

    /// This limit's kind with value `n`.
    pub fn with_value(self, n: u64) -> Rlimit {
        match self {
            Rlimit::Processes(_) => Rlimit::Processes(n),
            Rlimit::CpuSeconds(_) => Rlimit::CpuSeconds(n),
            Rlimit::AddressSpace(_) => Rlimit::AddressSpace(n),
            Rlimit::OpenFiles(_) => Rlimit::OpenFiles(n),
        }
    }

    /// True if `other` limits the same resource.
    pub fn same_kind(self, other: Rlimit) -> bool {
        self.resource().0 == other.resource().0
    }

    /// This process's own hard limit of this kind (`None`: unlimited).
    pub fn own_hard_limit(self) -> Option<u64> {
        let resource = match self {
            Rlimit::Processes(_) => rustix::process::Resource::Nproc,
            Rlimit::CpuSeconds(_) => rustix::process::Resource::Cpu,
            Rlimit::AddressSpace(_) => rustix::process::Resource::As,
            Rlimit::OpenFiles(_) => rustix::process::Resource::Nofile,
        };
        rustix::process::getrlimit(resource).maximum
    }
}

/// The limits a job starts with: the node's (`node`), with each of the session's
/// (`session`) in place of the node's of its kind — lowered to the node's value of that
/// kind, or where the node sets none, to this process's own hard limit. A session may
/// lower a limit, never raise it, even where the service could (root, or
/// `CAP_SYS_RESOURCE`).
pub fn job_limits(node: &[Rlimit], session: &[Rlimit]) -> Vec<Rlimit> {
    let mut out: Vec<Rlimit> = node
        .iter()
        .filter(|n| !session.iter().any(|s| s.same_kind(**n)))
        .copied()
        .collect();
    for &s in session {
        let ceiling = match node.iter().rev().find(|n| n.same_kind(s)) {
            Some(n) => Some(n.value()),
            None => s.own_hard_limit(),
        };
        let value = ceiling.map_or(s.value(), |c| s.value().min(c));
        out.retain(|o| !o.same_kind(s));
        out.push(s.with_value(value));
    }
    out
}

/// The soft open-files limit of a job that asks for none (step 4): `select(2)`'s.
pub const JOB_SOFT_NOFILE: u64 = 1024;

/// Starts `cmd` in a session of its own with nothing inherited, in `cgroup` if given,
/// with `limits`, as `run_as` (`None`: as this process's user) in `dir` (the steps in
/// the module docs).
pub fn spawn(
    mut cmd: Command,
    run_as: Option<&RunAs>,
    dir: &Path,
    limits: &[Rlimit],
    cgroup: Option<&JobCgroup>,
) -> io::Result<Child> {
    let dir = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "directory holds a NUL"))?;
    let soft_nofile = (!limits.iter().any(|l| matches!(l, Rlimit::OpenFiles(_)))).then(|| {
        let hard = Rlimit::OpenFiles(0)
            .own_hard_limit()
            .unwrap_or(JOB_SOFT_NOFILE);
        libc::rlimit {
            rlim_cur: JOB_SOFT_NOFILE.min(hard),
            rlim_max: hard,
        }
    });
    let limits: Vec<(libc::__rlimit_resource_t, u64)> =
        limits.iter().map(|l| l.resource()).collect();
    let run_as = run_as.cloned();
    let cgroup_procs = cgroup.map(JobCgroup::procs_fd);
    let open_files = crate::fds::open_files_bound();
    // SAFETY: the closure runs in the forked child before exec and makes only
    // async-signal-safe system calls (setsid, close_range or fcntl, write, setrlimit,
    // setgroups, setgid, setuid, chdir) on values prepared before the fork; it
    // allocates nothing and takes no locks. The cgroup descriptor stays open until
    // `spawn` returns, since `cgroup` is borrowed for the call.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            crate::fds::mark_close_on_exec(3, open_files)?;
            if let Some(fd) = cgroup_procs {
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(io::Error::last_os_error());
                }
            }
            for &(resource, value) in &limits {
                let lim = libc::rlimit {
                    rlim_cur: value,
                    rlim_max: value,
                };
                if libc::setrlimit(resource, &lim) != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(lim) = &soft_nofile {
                if libc::setrlimit(libc::RLIMIT_NOFILE, lim) != 0 {
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
    spawn_unless_busy(&mut cmd)
}

/// Tries of [`spawn_unless_busy`], napping 1, 2, 4 … up to 50 ms between them (about
/// 0.7 s in all).
const BUSY_TRIES: u32 = 20;

/// `cmd.spawn()`, tried again while exec fails with `ETXTBSY`. A program just uploaded
/// is "busy" while any process holds it open for writing, and that includes a child
/// that another thread of this process forked while the upload's descriptor was open,
/// until the child execs and the close-on-exec descriptor goes. The window is short,
/// grows on a busy host, and is no fault of the program; a program still busy after
/// the last try is the error.
fn spawn_unless_busy(cmd: &mut Command) -> io::Result<Child> {
    let mut nap = Duration::from_millis(1);
    for _ in 1..BUSY_TRIES {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(50));
            }
            other => return other,
        }
    }
    cmd.spawn()
}

/// In a forked child before exec: asks for `signal` when the thread that forked it
/// ends (`PR_SET_PDEATHSIG`), and fails with `ESRCH` if `parent` (the forking
/// process's pid) is already gone, since the kernel would then never send it.
/// Async-signal-safe: two system calls, no allocation.
pub fn parent_death_signal(parent: u32, signal: i32) -> io::Result<()> {
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, signal) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getppid has no preconditions.
    if u32::try_from(unsafe { libc::getppid() }).ok() != Some(parent) {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// Makes the child `cmd` starts get `signal` when the calling thread ends, so a tool
/// killed outright leaves no helper process running ([`parent_death_signal`]). Call
/// it from a thread that outlives the child.
pub fn die_with_parent(cmd: &mut Command, signal: i32) {
    let parent = std::process::id();
    // SAFETY: the closure runs in the child between fork and exec and only calls
    // `parent_death_signal`, which is async-signal-safe, on values copied before fork.
    unsafe {
        cmd.pre_exec(move || parent_death_signal(parent, signal));
    }
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
    fn runs_in_its_own_session_in_the_directory_with_limits() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "pwd; ulimit -n; ps -o pgid= -o sid= -p $$"])
            .stdout(std::process::Stdio::piped());
        let child = spawn(cmd, None, dir.path(), &[Rlimit::OpenFiles(77)], None).unwrap();
        let pid = child.id();
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(lines[0], real.to_str().unwrap());
        assert_eq!(lines[1], "77");
        let ids: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(
            ids,
            [pid.to_string(), pid.to_string()],
            "the job leads its own group and session"
        );
    }

    /// A script at `dir/name` that exits 0, and a descriptor holding it open for
    /// writing (what makes exec fail with `ETXTBSY`).
    fn busy_script(dir: &Path, name: &str) -> (std::path::PathBuf, std::fs::File) {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join(name);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&path)
            .unwrap();
        std::io::Write::write_all(&mut f, b"#!/bin/sh\nexit 0\n").unwrap();
        (path, f)
    }

    #[test]
    fn a_program_busy_for_a_moment_runs_and_one_busy_for_good_is_the_error() {
        let dir = tempfile::tempdir().unwrap();
        // Released by another thread shortly: the spawn waits it out.
        let (path, writer) = busy_script(dir.path(), "briefly.sh");
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            drop(writer);
        });
        let child = spawn(Command::new(&path), None, dir.path(), &[], None);
        release.join().unwrap();
        let status = child.expect("spawned once released").wait().unwrap();
        assert!(status.success(), "{status}");
        // Never released: ETXTBSY after the tries, not a hang.
        let (path, _writer) = busy_script(dir.path(), "always.sh");
        let err = spawn(Command::new(&path), None, dir.path(), &[], None).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ETXTBSY), "{err}");
    }

    #[test]
    fn nothing_but_stdio_is_inherited() {
        use std::os::fd::AsRawFd;
        // A descriptor this process holds without close-on-exec (dup(2) clears it).
        let file = std::fs::File::open("/proc/self/status").unwrap();
        let open = rustix::io::dup(&file).unwrap();
        let fd = open.as_raw_fd();
        let mut cmd = Command::new("/bin/sh");
        cmd.args([
            "-c",
            &format!("ls /proc/self/fd; ls /proc/$$/fd/{fd} >/dev/null 2>&1 || echo gone"),
        ])
        .stdout(std::process::Stdio::piped());
        let out = spawn(cmd, None, Path::new("/"), &[], None)
            .unwrap()
            .wait_with_output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let mut words: Vec<&str> = text.split_whitespace().collect();
        assert_eq!(
            words.pop(),
            Some("gone"),
            "fd {fd} did not reach the job: {text}"
        );
        // 0-2, and the descriptor ls lists /proc/self/fd through.
        assert_eq!(words, ["0", "1", "2", "3"], "{text}");
    }

    #[test]
    fn a_session_may_lower_the_nodes_limits_never_raise_them() {
        let node = [Rlimit::OpenFiles(64), Rlimit::Processes(77)];
        assert_eq!(
            job_limits(&node, &[Rlimit::OpenFiles(1 << 30), Rlimit::Processes(5)]),
            [Rlimit::OpenFiles(64), Rlimit::Processes(5)]
        );
        assert_eq!(job_limits(&node, &[]), node);
        // A kind the node sets none of: this process's own hard limit bounds it.
        let own = Rlimit::OpenFiles(0).own_hard_limit().unwrap();
        assert_eq!(
            job_limits(&[], &[Rlimit::OpenFiles(u64::MAX)]),
            [Rlimit::OpenFiles(own)]
        );
        assert_eq!(
            job_limits(&[], &[Rlimit::CpuSeconds(9)]),
            [Rlimit::CpuSeconds(9)]
        );
    }

    #[test]
    fn a_job_without_an_open_files_limit_gets_selects_soft_limit_back() {
        // As a server does at start: its own soft limit raised to the hard one.
        let hard = Rlimit::OpenFiles(0).own_hard_limit().unwrap();
        let raised = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct we pass and touches nothing else.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) }, 0);
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "ulimit -Sn; ulimit -Hn"])
            .stdout(std::process::Stdio::piped());
        let out = spawn(cmd, None, dir.path(), &[], None)
            .unwrap()
            .wait_with_output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let hard_text = if hard == libc::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            hard.to_string()
        };
        assert_eq!(
            text.lines().collect::<Vec<_>>(),
            [JOB_SOFT_NOFILE.min(hard).to_string(), hard_text],
            "soft back to select's, hard kept"
        );
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_silent_cwd() {
        let err = spawn(
            Command::new("/bin/true"),
            None,
            Path::new("/nonexistent/nowhere"),
            &[],
            None,
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
