//! Jobs in cgroups (v2): every process a job starts — also one that leaves the job's
//! process group and session with `setsid` — stays in the job's cgroup, so signalling
//! and ending the job reaches all of them (what systemd does for a service and Slurm's
//! `slurmstepd` for a step).
//!
//! Layout: `SERVER/ninefold-PID-N/NAME`, where `SERVER` is the server's own cgroup (its
//! `0::PATH` line in `/proc/self/cgroup`, under the cgroup2 mount found in
//! `/proc/self/mountinfo`), `ninefold-PID-N` one [`CgroupRoot`] (a server process may
//! hold several: each in-process server of the tests has its own), and `NAME` one
//! job's [`JobCgroup`]. The server (root) makes them mode 0755: the job's user cannot
//! write any of their files, so cannot move itself out, nor kill or freeze another's.
//!
//! Rules:
//!
//! 1. **Usable** where the server is root, a cgroup2 file system is mounted, the
//!    server's own cgroup is found under it and `ninefold-PID-N` can be made there.
//!    Otherwise [`CgroupRoot::create`] says which of these failed, and the caller falls
//!    back to process groups (which a `setsid` leaves).
//! 2. **Joining** happens in the child between fork and exec
//!    ([`crate::spawn::spawn`], step 3): it writes `0` to the job cgroup's
//!    `cgroup.procs` through a descriptor opened before the fork, while still root. The
//!    job's first instruction already runs inside, and so does every process it makes.
//! 3. **Killing** ([`JobCgroup::kill`]) writes `1` to `cgroup.kill` (Linux 5.14: the
//!    kernel kills every member at once, and no fork escapes it). Older kernels: the
//!    cgroup is frozen (`cgroup.freeze`, 5.2), every member is sent `SIGKILL`, it is
//!    thawed, and this is repeated until it is empty (at most [`KILL_ROUNDS`] times).
//! 4. **Signalling** with another signal ([`JobCgroup::signal`]) freezes the cgroup
//!    (so nothing forks or leaves while its members are listed), signals every member
//!    in `cgroup.procs`, and thaws it.
//! 5. **Removing** ([`JobCgroup::remove`]) waits, bounded, until `cgroup.events` says
//!    `populated 0` (killed processes take a moment to exit), then removes the
//!    directory. [`CgroupRoot::close`] (also on drop) kills and removes everything
//!    under the root, then the root.
//! 6. **Leftovers** of a server that was killed outright (`SIGKILL`: nothing ran rule
//!    5) are removed by the next [`CgroupRoot::create`] beside them, if empty: roots
//!    named after a pid that no longer runs, and their job cgroups. Nothing in them is
//!    killed — the pid may belong to a server in another pid namespace, whose root
//!    is then made again at its next job ([`CgroupRoot::job`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Most rounds of freeze, kill every member, thaw, on kernels without `cgroup.kill`.
pub const KILL_ROUNDS: usize = 100;

/// How long [`CgroupRoot::close`] waits for each job's killed processes to exit.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// How often a wait on `cgroup.events` looks again.
const POLL: Duration = Duration::from_millis(2);

/// Why jobs cannot get cgroups here (rule 1); the caller falls back to process groups.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CgroupError {
    /// The server is not root: it could not move its jobs into cgroups.
    #[error("the server is not running as root")]
    NotRoot,
    /// No cgroup2 file system is mounted.
    #[error("no cgroup2 file system is mounted (none in /proc/self/mountinfo)")]
    NotMounted,
    /// The server's own cgroup is not under a cgroup2 mount.
    #[error("this process's cgroup v2 ({}) is not found under a cgroup2 mount", own.as_deref().unwrap_or("no 0:: line in /proc/self/cgroup"))]
    NoOwnCgroup {
        /// Its path from `/proc/self/cgroup`, if there is one.
        own: Option<String>,
    },
    /// The server's directory under its cgroup could not be made.
    #[error("making the cgroup {}: {source}", dir.display())]
    Create {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        source: io::Error,
    },
}

/// One server's cgroup for its jobs (see the module docs).
#[derive(Debug)]
pub struct CgroupRoot {
    dir: PathBuf,
}

/// A process-wide count, so servers in one process get roots of their own.
static ROOTS: AtomicU64 = AtomicU64::new(0);

impl CgroupRoot {
    /// Makes `SERVER/ninefold-PID-N` (rule 1).
    pub fn create() -> Result<CgroupRoot, CgroupError> {
        if !rustix::process::geteuid().is_root() {
            return Err(CgroupError::NotRoot);
        }
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mounts = cgroup2_mounts(&mountinfo);
        if mounts.is_empty() {
            return Err(CgroupError::NotMounted);
        }
        let own = own_cgroup(&std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default());
        let server = own
            .as_deref()
            .and_then(|own| place(&mounts, own))
            .ok_or(CgroupError::NoOwnCgroup { own: own.clone() })?;
        sweep_leftovers(&server);
        let pid = std::process::id();
        loop {
            let n = ROOTS.fetch_add(1, Ordering::Relaxed);
            let dir = server.join(format!("ninefold-{pid}-{n}"));
            match std::fs::DirBuilder::new().mode(0o755).create(&dir) {
                Ok(()) => return Ok(CgroupRoot { dir }),
                // Left by an earlier process with this pid: take the next number.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 1 << 20 => {}
                Err(source) => return Err(CgroupError::Create { dir, source }),
            }
        }
    }

    /// The root's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Makes the cgroup of one job, `NAME` under the root, ready to be joined.
    pub fn job(&self, name: &str) -> io::Result<JobCgroup> {
        if name.is_empty() || name.contains('/') || name.starts_with('.') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name:?} is not a cgroup name"),
            ));
        }
        let dir = self.dir.join(name);
        let made = std::fs::DirBuilder::new().mode(0o755).create(&dir);
        match made {
            // Removed by another server's sweep (rule 6): made again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new().mode(0o755).create(&self.dir)?;
                std::fs::DirBuilder::new().mode(0o755).create(&dir)?;
            }
            other => other?,
        }
        let procs = OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
            .inspect_err(|_| {
                let _ = std::fs::remove_dir(&dir);
            })?;
        Ok(JobCgroup { dir, procs })
    }

    /// Kills every job under the root and removes their cgroups and the root (rule 5);
    /// what is gone already is not an error.
    pub fn close(&self) -> io::Result<()> {
        if !self.dir.exists() {
            return Ok(());
        }
        let mut first_error = kill_tree(&self.dir).err();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    if let Err(e) = remove_when_empty(&entry.path(), CLOSE_WAIT) {
                        first_error.get_or_insert(e);
                    }
                }
            }
        }
        if let Err(e) = remove_when_empty(&self.dir, CLOSE_WAIT) {
            first_error.get_or_insert(e);
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for CgroupRoot {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!(cgroup = %self.dir.display(), "removing the jobs' cgroups: {e}");
        }
    }
}

/// One job's cgroup (see the module docs).
#[derive(Debug)]
pub struct JobCgroup {
    dir: PathBuf,
    /// `cgroup.procs`, opened before the fork for the child to join through (rule 2).
    procs: File,
}

impl JobCgroup {
    /// The cgroup's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The descriptor a child writes `0` to, to join (rule 2).
    pub(crate) fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// The pids in the cgroup now.
    pub fn members(&self) -> io::Result<Vec<u32>> {
        members(&self.dir)
    }

    /// Kills every process in the cgroup (rule 3).
    pub fn kill(&self) -> io::Result<()> {
        kill_tree(&self.dir)
    }

    /// Sends `signal` to every process in the cgroup (rule 4; `SIGKILL`: rule 3).
    pub fn signal(&self, signal: i32) -> io::Result<()> {
        if signal == libc::SIGKILL {
            return self.kill();
        }
        let frozen = freeze(&self.dir, true);
        let sent = signal_members(&self.dir, signal);
        if frozen {
            freeze(&self.dir, false);
        }
        sent
    }

    /// Waits up to `within` for the cgroup's processes to be gone, then removes it
    /// (rule 5); one removed already is not an error.
    pub fn remove(&self, within: Duration) -> io::Result<()> {
        remove_when_empty(&self.dir, within)
    }
}

/// Rule 6: removes the empty roots (and their empty job cgroups) that servers no
/// longer running left in `server`.
fn sweep_leftovers(server: &Path) {
    let Ok(entries) = std::fs::read_dir(server) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let pid = name
            .to_str()
            .and_then(|n| n.strip_prefix("ninefold-"))
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        let Some(pid) = pid else { continue };
        if pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        let root = entry.path();
        if let Ok(jobs) = std::fs::read_dir(&root) {
            for job in jobs
                .flatten()
                .filter(|j| j.file_type().is_ok_and(|t| t.is_dir()))
            {
                let _ = std::fs::remove_dir(job.path());
            }
        }
        let _ = std::fs::remove_dir(&root);
    }
}

/// Kills everything in `dir` and below (rule 3).
fn kill_tree(dir: &Path) -> io::Result<()> {
    match std::fs::write(dir.join("cgroup.kill"), "1") {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound && dir.exists() => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    // Before Linux 5.14: freeze, kill each member, thaw, until none is left.
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    for _ in 0..KILL_ROUNDS {
        let mut left = false;
        for d in &dirs {
            let frozen = freeze(d, true);
            let _ = signal_members(d, libc::SIGKILL);
            if frozen {
                freeze(d, false);
            }
            left |= !members(d).unwrap_or_default().is_empty();
        }
        if !left {
            return Ok(());
        }
        std::thread::sleep(POLL);
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "processes of {} survived {KILL_ROUNDS} rounds of SIGKILL",
            dir.display()
        ),
    ))
}

/// The pids listed in `dir/cgroup.procs`.
fn members(dir: &Path) -> io::Result<Vec<u32>> {
    Ok(std::fs::read_to_string(dir.join("cgroup.procs"))?
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect())
}

/// Sends `signal` to each member of `dir`; one that is gone already is skipped.
fn signal_members(dir: &Path, signal: i32) -> io::Result<()> {
    for pid in members(dir)? {
        let Ok(pid) = i32::try_from(pid) else {
            continue;
        };
        // SAFETY: kill takes plain integers and touches no memory of ours.
        if unsafe { libc::kill(pid, signal) } != 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::ESRCH) {
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Freezes (`on`) or thaws `dir`; true if the cgroup has a freezer and, freezing,
/// reported itself frozen within a second (a member stuck in the kernel may delay it).
fn freeze(dir: &Path, on: bool) -> bool {
    if std::fs::write(dir.join("cgroup.freeze"), if on { "1" } else { "0" }).is_err() {
        return false;
    }
    !on || wait_for_event(dir, "frozen 1", Duration::from_secs(1))
}

/// Waits up to `within` for `dir/cgroup.events` to hold the line `line`; true if it
/// did (a cgroup that is gone counts as unpopulated and unfrozen: false).
fn wait_for_event(dir: &Path, line: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        match std::fs::read_to_string(dir.join("cgroup.events")) {
            Ok(events) if events.lines().any(|l| l.trim() == line) => return true,
            Ok(_) if Instant::now() < deadline => std::thread::sleep(POLL),
            _ => return false,
        }
    }
}

/// Rule 5 for `dir`: waits up to `within` for it to be unpopulated, then removes it.
fn remove_when_empty(dir: &Path, within: Duration) -> io::Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    wait_for_event(dir, "populated 0", within);
    match std::fs::remove_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("removing the cgroup {}: {e}", dir.display()),
        )),
        Ok(()) => Ok(()),
    }
}

/// This process's cgroup v2 directory, if cgroup2 is mounted and holds it.
pub(crate) fn own_dir() -> Option<PathBuf> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let own = own_cgroup(&std::fs::read_to_string("/proc/self/cgroup").ok()?)?;
    place(&cgroup2_mounts(&mountinfo), &own)
}

/// The cgroup2 mounts in `mountinfo` (proc(5)): (mount root, mount point).
fn cgroup2_mounts(mountinfo: &str) -> Vec<(String, PathBuf)> {
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            if after.split(' ').next()? != "cgroup2" {
                return None;
            }
            let fields: Vec<&str> = before.split(' ').collect();
            let root = unescape(fields.get(3)?);
            let point = unescape(fields.get(4)?);
            Some((root, PathBuf::from(point)))
        })
        .collect()
}

/// This process's cgroup v2 path: the `0::PATH` line of `/proc/self/cgroup`.
fn own_cgroup(cgroup: &str) -> Option<String> {
    cgroup
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .map(str::to_string)
}

/// Where cgroup `own` is on the host: under the first mount whose root holds it.
fn place(mounts: &[(String, PathBuf)], own: &str) -> Option<PathBuf> {
    mounts.iter().find_map(|(root, point)| {
        let rest = Path::new(own).strip_prefix(root).ok()?;
        let dir = point.join(rest);
        dir.join("cgroup.procs").exists().then_some(dir)
    })
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|d| {
            let text = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(b)) => {
                out.push(b);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount_and_the_servers_cgroup_under_it() {
        let mountinfo = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
41 31 0:38 / /sys/fs/cgroup/uni\\040fied rw,relatime shared:9 - cgroup2 cgroup2 rw
";
        let mounts = cgroup2_mounts(mountinfo);
        assert_eq!(
            mounts,
            [("/".to_string(), PathBuf::from("/sys/fs/cgroup/uni fied"))]
        );
        let cgroup = "5:devices:/\n0::/system.slice/nf.service\n";
        assert_eq!(
            own_cgroup(cgroup).as_deref(),
            Some("/system.slice/nf.service")
        );
        assert_eq!(own_cgroup("4:memory:/x\n"), None);
        assert!(cgroup2_mounts("36 31 0:33 / /x rw - cgroup cgroup rw\n").is_empty());
    }

    /// Root only, on a host with a cgroup v2 (skipped elsewhere, saying so): a
    /// process that left its session is killed with the cgroup, which then goes.
    #[test]
    fn a_job_cgroup_reaches_a_process_that_left_its_session() {
        let root = match CgroupRoot::create() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let job = root.job("t").unwrap();
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.args(["-c", "setsid sleep 1000 >/dev/null 2>&1 & echo $!"])
            .stdout(std::process::Stdio::piped());
        let out = crate::spawn::spawn(cmd, None, Path::new("/"), &[], Some(&job))
            .unwrap()
            .wait_with_output()
            .unwrap();
        let pid: u32 = String::from_utf8(out.stdout)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(
            job.members().unwrap(),
            [pid],
            "the escaped grandchild is inside"
        );
        job.signal(libc::SIGCONT).unwrap();
        job.kill().unwrap();
        job.remove(Duration::from_secs(10)).unwrap();
        assert!(!job.path().exists());
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty() || stat.contains(") Z "), "killed: {stat}");
        let dir = root.path().to_path_buf();
        drop(root);
        assert!(!dir.exists(), "the root goes with its server");
    }

    /// Root only, as above: what a server killed outright left is swept by the next
    /// one, if empty; a running server's root is left alone.
    #[test]
    fn leftovers_of_a_killed_server_are_swept() {
        let live = match CgroupRoot::create() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: {e}");
                return;
            }
        };
        let server = live.path().parent().unwrap().to_path_buf();
        let dead_pid = (4_000_000..4_100_000)
            .find(|p| !Path::new(&format!("/proc/{p}")).exists())
            .unwrap();
        let left = server.join(format!("ninefold-{dead_pid}-0"));
        std::fs::create_dir_all(left.join("session-1")).unwrap();
        let next = CgroupRoot::create().unwrap();
        assert!(!left.exists(), "the dead server's empty cgroups are gone");
        assert!(live.path().exists(), "a running server's root stays");
        drop((live, next));
    }
}
