//! One session (`/xcpu/N`): its settings, its job's life, and when it ends.
//!
//! Life of a session:
//!
//! 1. **Made** by opening `/xcpu/clone`, for the attached user, within the limits of
//!    [`super::XcpuConfig`] (sessions per user: `EDQUOT`; in all: `ENOSPC`). Its upload
//!    directory is made on the host (mode 0700, owned by the user).
//! 2. **Held** by every open file of the session (the `clone` open included). When the
//!    last one closes — also when its client disconnects — the session lingers for
//!    [`super::XcpuConfig::linger`], so that separate commands (`nf cat`, `echo`) can
//!    script it, and ends unless it is held again meanwhile. After `close`, it ends as
//!    soon as its job has exited and nothing holds it.
//! 3. **Runs** one job on `exec`: in a session of its own with nothing inherited, in
//!    a cgroup of its own where the server has them ([`super`]), as the session's user
//!    (when the server is root), with the node's limits as lowered by the session's,
//!    in `fs/` or the `dir` set. `kill SIG` signals every process in the job's cgroup
//!    (without one: its process group).
//! 4. **Ends** ([`Session::end`]) on `wipe`, on release (rule 2) or when the server
//!    stops: every process in the job's cgroup is killed (`cgroup.kill`; without one:
//!    the process group, `SIGKILL`) — also those a job left behind after it exited —
//!    its output streams end, its entry leaves `/xcpu`, its upload directory is
//!    removed, and its cgroup once its processes are gone.

use std::collections::VecDeque;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nf_ninep::errno::{EAGAIN, EBUSY, EINVAL, ENOENT, EPERM, EPIPE, ESRCH};
use nf_ninep_server::{Cancel, Creds, FsError, FsResult, Monitor};
use nf_sys::cgroup::JobCgroup;
use nf_sys::spawn::RunAs;

use super::ctl::{Command as Ctl, Refusal, Settings};
use super::escape;
use super::fanout::{Fanout, Op, Reach, Replay};
use super::output::Output;
use super::treeout::TreeOut;
use super::Registry;

/// Where a session's job is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Not started.
    New,
    /// Running as process `pid` (also its process group).
    Running {
        /// The job's pid.
        pid: u32,
    },
    /// Exited.
    Done(Exit),
    /// The session has ended.
    Ended,
}

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exit status.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exit {c}"),
            Exit::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

impl From<ExitStatus> for Exit {
    fn from(s: ExitStatus) -> Exit {
        use std::os::unix::process::ExitStatusExt;
        match (s.code(), s.signal()) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        }
    }
}

/// The mutable part of a session.
pub struct Job {
    /// What `argv`, `env`, `exec`, `dir` and `limits` set.
    pub settings: Settings,
    /// Where the job is.
    pub phase: Phase,
    /// The last `ctl` command's failure, shown in `state` until the next command.
    pub error: Option<String>,
    /// `close` was asked for: end once the job exited and nothing holds the session.
    pub closing: bool,
    /// The job's cgroup, from `exec` until the session ends; `None`: the job is
    /// tracked by its process group.
    pub cgroup: Option<Arc<JobCgroup>>,
}

/// How long a thread waits for an ended job's processes to be gone before it removes
/// the job's cgroup (`SIGKILL` takes a moment; a process stuck in the kernel longer).
const CGROUP_REMOVAL: Duration = Duration::from_secs(10);

/// The job's standard input: bytes written to `stdin`, waiting for the job to read.
pub struct Stdin {
    /// Bytes not yet handed to the job.
    pub buf: VecDeque<u8>,
    /// Open writers.
    pub writers: usize,
    /// Some writer opened and the last one closed: the job gets end of file.
    pub eof: bool,
    /// The job or the session is gone: writes fail with `EPIPE`.
    pub broken: bool,
}

/// Most bytes buffered for the job's stdin.
pub const STDIN_CAPACITY: usize = 64 * 1024;

/// How many opens hold the session, and a count of releases (so a lingering end can
/// tell that the session was held again meanwhile).
#[derive(Default)]
struct Holds {
    count: usize,
    releases: u64,
}

/// One session (see the module docs).
pub struct Session {
    /// Its number.
    pub id: u64,
    /// The account it belongs to.
    pub user: String,
    /// The account's identity.
    pub creds: Creds,
    /// The upload directory on the host (`fs/`).
    pub dir: PathBuf,
    /// Seconds since the epoch at creation.
    pub created: u64,
    /// Settings and phase.
    pub job: Arc<Monitor<Job>>,
    /// The job's stdin.
    pub stdin: Arc<Monitor<Stdin>>,
    /// The job's stdout.
    pub stdout: Output,
    /// The job's stderr.
    pub stderr: Output,
    /// The output and ends of the session's whole tree ([`super::treeout`]).
    pub tree: TreeOut,
    /// Cancelled when the session ends: wakes everything that waits for it.
    pub ended: Cancel,
    /// Bytes written into `fs/` so far.
    pub uploaded: AtomicU64,
    /// The nodes this session is handed on to (tree spawn), once `clone` was written.
    pub fanout: OnceLock<Fanout>,
    holds: Mutex<Holds>,
    registry: Weak<Registry>,
}

/// A shared session handle, as the session's files keep it.
#[derive(Clone)]
pub struct SessionRef(pub Arc<Session>);

impl std::ops::Deref for SessionRef {
    type Target = Session;
    fn deref(&self) -> &Session {
        &self.0
    }
}

/// One open that keeps a session alive; dropping it releases the session (rule 2).
pub struct Hold(Arc<Session>);

impl Drop for Hold {
    fn drop(&mut self) {
        let releases = {
            let mut h = self.0.holds();
            h.count -= 1;
            h.releases += 1;
            if h.count > 0 {
                return;
            }
            h.releases
        };
        self.0.released(releases);
    }
}

impl SessionRef {
    /// A hold on the session, or `ENOENT` if it has ended.
    pub fn hold(&self) -> FsResult<Hold> {
        let mut h = self.0.holds();
        if self.0.ended.is_cancelled() {
            return Err(FsError::Errno(ENOENT));
        }
        h.count += 1;
        Ok(Hold(Arc::clone(&self.0)))
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Session {
    /// A new session of `user` with upload directory `dir` (already made).
    pub(super) fn new(
        id: u64,
        user: String,
        creds: Creds,
        dir: PathBuf,
        history: usize,
        registry: Weak<Registry>,
    ) -> Session {
        let owner = (creds.uid(), creds.gid());
        let ended = Cancel::new();
        Session {
            id,
            user,
            creds,
            dir,
            created: now_secs(),
            job: Arc::new(Monitor::new(Job {
                settings: Settings::default(),
                phase: Phase::New,
                error: None,
                closing: false,
                cgroup: None,
            })),
            stdin: Arc::new(Monitor::new(Stdin {
                buf: VecDeque::new(),
                writers: 0,
                eof: false,
                broken: false,
            })),
            stdout: Output::new(history, owner),
            stderr: Output::new(history, owner),
            tree: TreeOut::new(history, owner, ended.clone()),
            ended,
            uploaded: AtomicU64::new(0),
            fanout: OnceLock::new(),
            holds: Mutex::default(),
            registry,
        }
    }

    fn holds(&self) -> std::sync::MutexGuard<'_, Holds> {
        self.holds.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The owner (uid, gid) of the session's files.
    pub fn owner(&self) -> (u32, u32) {
        (self.creds.uid(), self.creds.gid())
    }

    /// The last hold went away (rule 2): end now after `close` and an exited job,
    /// else after the linger unless held again.
    fn released(self: &Arc<Self>, releases: u64) {
        let done = {
            let job = self.job.lock();
            job.closing && !matches!(job.phase, Phase::Running { .. })
        };
        let Some(registry) = self.registry.upgrade() else {
            return;
        };
        if done {
            self.end("closed");
            return;
        }
        let linger = registry.config.linger;
        let me = Arc::clone(self);
        let spawned = super::server_thread(format!("xcpu-linger-{}", self.id), move || {
            if me.ended.sleep(linger).is_err() {
                return;
            }
            let h = me.holds();
            let idle = h.count == 0 && h.releases == releases;
            drop(h);
            if idle {
                me.end("released: no file of the session was open");
            }
        });
        if spawned.is_err() {
            self.end("released (no thread to linger on)");
        }
    }

    /// One line of `/xcpu/procs`: id, user, state, pids, start time, command — every
    /// field escaped ([`escape`]); the command with its arguments if `full`, else the
    /// program only (for other users).
    pub fn procs_line(&self, full: bool) -> String {
        let job = self.job.lock();
        let (state, pids) = match &job.phase {
            Phase::New => ("new".to_string(), "-".to_string()),
            Phase::Running { pid } => ("running".to_string(), pid.to_string()),
            Phase::Done(e) => (e.to_string().replace(' ', ":"), "-".to_string()),
            Phase::Ended => ("ended".to_string(), "-".to_string()),
        };
        format!(
            "{} {} {} {} {} {}\n",
            self.id,
            escape::field(&self.user),
            state,
            pids,
            self.created,
            job.settings.shown(full)
        )
    }

    /// What `state` reads: the phase, then the last command's failure if any.
    pub fn state_text(&self) -> String {
        let job = self.job.lock();
        let mut s = match &job.phase {
            Phase::New => "new\n".to_string(),
            Phase::Running { pid } => format!("running {pid}\n"),
            Phase::Done(e) => format!("{e}\n"),
            Phase::Ended => "ended\n".to_string(),
        };
        if let Some(e) = &job.error {
            s.push_str(&format!("error {}\n", escape::text(e)));
        }
        s
    }

    /// Queues `op` to the nodes this session is handed on to, if any.
    pub fn forward(&self, op: impl Fn() -> Op) {
        if let Some(f) = self.fanout.get() {
            f.send(op);
        }
    }

    /// Runs one `ctl` command (`line` as written); a refusal is also shown in `state`.
    /// Commands that succeed here are handed on to the session's children.
    pub fn control(self: &Arc<Self>, cmd: Ctl, line: &str) -> FsResult<()> {
        let forwards = !matches!(cmd, Ctl::Clone { .. } | Ctl::Wipe);
        if matches!(cmd, Ctl::Kill(_)) {
            // A job that ended here may still run below: signals go down regardless.
            let line = line.trim().to_string();
            self.forward(|| Op::Ctl(line.clone()));
        }
        let forwards = forwards && !matches!(cmd, Ctl::Kill(_));
        let result = match cmd {
            Ctl::Exec => self.exec(),
            Ctl::Kill(sig) => self.kill(sig),
            Ctl::Close => {
                self.job.update(|j| j.closing = true);
                Ok(())
            }
            Ctl::Wipe => {
                if let Some(f) = self.fanout.get() {
                    f.wipe(true);
                }
                self.end("wiped");
                Ok(())
            }
            Ctl::Set(change) => self.job.update(|j| match j.phase {
                Phase::New => change.apply(&mut j.settings),
                _ => Err(Refusal::new(
                    EBUSY,
                    format!(
                        "the job has started: {} can only be set before exec",
                        change.name()
                    ),
                )),
            }),
            Ctl::Clone { count, addrs } => self.clone_to(count, &addrs),
        };
        match result {
            Ok(()) => {
                self.job.update(|j| j.error = None);
                if forwards {
                    let line = line.trim().to_string();
                    self.forward(|| Op::Ctl(line.clone()));
                }
                Ok(())
            }
            Err(r) => {
                let why = escape::text(&r.why);
                tracing::warn!(session = self.id, user = %self.user, "xcpu: {why}");
                self.job.update(|j| j.error = Some(r.why));
                Err(FsError::Errno(r.errno))
            }
        }
    }

    /// `clone COUNT ADDR…`: hands this session on ([`super::fanout`]).
    fn clone_to(&self, count: usize, addrs: &[String]) -> Result<(), Refusal> {
        let registry = self
            .registry
            .upgrade()
            .ok_or_else(|| Refusal::new(ESRCH, "the server is stopping"))?;
        if addrs.is_empty() {
            return Err(Refusal::new(EINVAL, "clone: no nodes given"));
        }
        if addrs.len() > super::ctl::MAX_CLONE_NODES {
            return Err(Refusal::new(
                EINVAL,
                format!("clone: at most {} nodes", super::ctl::MAX_CLONE_NODES),
            ));
        }
        for a in addrs {
            let addr = nf_link::addr::parse_addr(a)
                .map_err(|e| Refusal::new(EINVAL, format!("clone: {a:?}: {e}")))?;
            if registry.run_as && matches!(addr, nf_link::addr::Addr::Tcp(_)) {
                return Err(Refusal::new(
                    EPERM,
                    format!("clone: {a:?}: this server runs as root, and a node reached over plain tcp would take the connection for root's; hand sessions on over tls:HOST:PORT (this node's certificate), or unix:PATH / shm:PATH (reached with your rights)"),
                ));
            }
        }
        let reach = Reach {
            user: self.user.clone(),
            local_as: registry.run_as.then(|| self.run_as()),
            tls: registry.config.forward_tls.clone(),
            count,
        };
        // Checked and set under the job's lock, so two clones cannot both start
        // forwarders, and none starts once the job has.
        {
            let job = self.job.lock();
            if job.phase != Phase::New {
                return Err(Refusal::new(EBUSY, "clone: the job has started already"));
            }
            if self.fanout.get().is_some() {
                return Err(Refusal::new(
                    EBUSY,
                    "clone: this session is handed on already",
                ));
            }
            let s = &job.settings;
            let replay = Arc::new(Replay {
                settings: vec![
                    ("argv", s.argv.clone()),
                    ("env", s.env.clone()),
                    ("exec", s.exec.clone()),
                ],
                ctl: s.ctl_lines(),
                dir: self.dir.clone(),
                creds: self.creds.clone(),
            });
            let _ = self
                .fanout
                .set(Fanout::start(addrs, &reach, &replay, &self.tree));
        }
        registry.log(&format!(
            "xcpu: session {} ({}) handed on to {} nodes, fan-out {count}\n",
            self.id,
            self.user,
            addrs.len()
        ));
        Ok(())
    }

    /// The identity the session's job runs as, and its connections are made with.
    fn run_as(&self) -> RunAs {
        RunAs {
            uid: self.creds.uid(),
            gid: self.creds.gid(),
            groups: self.creds.groups().to_vec(),
        }
    }

    /// `kill SIG`: every process of the job's cgroup, else of its process group.
    fn kill(&self, sig: i32) -> Result<(), Refusal> {
        let job = self.job.lock();
        let Phase::Running { pid } = job.phase else {
            return Err(Refusal::new(ESRCH, "kill: the job is not running"));
        };
        match &job.cgroup {
            Some(cg) => super::as_server(|| cg.signal(sig)).map_err(|e| {
                Refusal::new(
                    EINVAL,
                    format!(
                        "kill: signalling the job's cgroup {}: {e}",
                        cg.path().display()
                    ),
                )
            }),
            None => nf_sys::spawn::signal_group(pid, sig).map_err(|e| {
                Refusal::new(EINVAL, format!("kill: signalling process group {pid}: {e}"))
            }),
        }
    }

    /// `exec`: starts the job (rule 3).
    fn exec(self: &Arc<Self>) -> Result<(), Refusal> {
        let registry = self
            .registry
            .upgrade()
            .ok_or_else(|| Refusal::new(ESRCH, "the server is stopping"))?;
        let mut job = self.job.lock();
        if job.phase != Phase::New {
            return Err(Refusal::new(
                EBUSY,
                "exec: the job has started already (one job per session)",
            ));
        }
        let settings = job.settings.clone();
        let argv = settings.argv()?;
        let program = settings.program(&argv, &self.dir)?;
        let dir = settings.workdir(&self.dir);
        let mut cmd = Command::new(&program);
        cmd.arg0(&argv[0])
            .args(&argv[1..])
            .env_clear()
            .envs(registry.job_env(self))
            .envs(settings.env_pairs())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let run_as = registry.run_as.then(|| self.run_as());
        let limits = nf_sys::spawn::job_limits(&registry.config.limits, &settings.limits);
        let cgroup = super::as_server(|| registry.job_cgroup(self.id)).map_err(|e| {
            let errno = e.raw_os_error().map_or(EAGAIN, |n| n as u32);
            Refusal::new(errno, format!("exec: making the job's cgroup: {e}"))
        })?;
        // Forked as the server: the child joins its cgroup while still root (older
        // kernels check that write against the writer's filesystem identity); it takes
        // the user's identity before it enters `dir` and execs.
        let spawned = super::as_server(|| {
            nf_sys::spawn::spawn(cmd, run_as.as_ref(), &dir, &limits, cgroup.as_ref())
        });
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => {
                if let Some(cg) = &cgroup {
                    let _ = super::as_server(|| cg.remove(Duration::ZERO));
                }
                let errno = e.raw_os_error().map_or(EINVAL, |n| n as u32);
                return Err(Refusal::new(
                    errno,
                    format!("exec {}: {e}", program.display()),
                ));
            }
        };
        let pid = child.id();
        job.phase = Phase::Running { pid };
        job.cgroup = cgroup.map(Arc::new);
        drop(job);
        self.job.update(|_| ());
        registry.log(&format!(
            "xcpu: session {} ({}) started {} as pid {pid}\n",
            self.id,
            escape::field(&self.user),
            settings.shown(false)
        ));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let pumps = [
            stdout.and_then(|s| self.pump_out(Box::new(s), self.stdout.clone(), "out")),
            stderr.and_then(|s| self.pump_out(Box::new(s), self.stderr.clone(), "err")),
        ];
        if let Some(s) = stdin {
            self.pump_in(s);
        }
        let me = Arc::clone(self);
        super::server_thread(format!("xcpu-wait-{}", self.id), move || {
            me.reap(child, pumps)
        })
        .map_err(|e| Refusal::new(EAGAIN, format!("exec: no thread to wait for the job: {e}")))?;
        Ok(())
    }

    /// Copies the job's `pipe` into `out` and, as `kind` (`out`, `err`) records, the
    /// session's `tree` until the pipe ends, then ends `out`.
    fn pump_out(
        self: &Arc<Self>,
        mut pipe: Box<dyn std::io::Read + Send>,
        out: Output,
        kind: &'static str,
    ) -> Option<std::thread::JoinHandle<()>> {
        let ended = self.ended.clone();
        let unpumped = out.clone();
        let mut lines = self.tree.lines(kind);
        let spawn = super::server_thread(format!("xcpu-std{kind}-{}", self.id), move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if !out.push(&buf[..n], &ended) || !lines.feed(&buf[..n]) {
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            lines.finish();
            out.close();
        });
        match spawn {
            Ok(h) => Some(h),
            Err(e) => {
                // Nobody will fill it: end it, so its readers are not left waiting.
                tracing::warn!(
                    session = self.id,
                    "xcpu: no thread to copy the job's std{kind}: {e}"
                );
                unpumped.close();
                None
            }
        }
    }

    /// Hands what is written to `stdin` to the job, and end of file after the last
    /// writer closes.
    fn pump_in(self: &Arc<Self>, mut pipe: std::process::ChildStdin) {
        let state = Arc::clone(&self.stdin);
        let ended = self.ended.clone();
        let _ = super::server_thread(format!("xcpu-stdin-{}", self.id), move || {
            use std::io::Write;
            loop {
                let chunk = ended.wait(&state, |st| {
                    if !st.buf.is_empty() {
                        let n = st.buf.len().min(64 * 1024);
                        Some(Some(st.buf.drain(..n).collect::<Vec<u8>>()))
                    } else if st.eof || st.broken {
                        Some(None)
                    } else {
                        None
                    }
                });
                state.update(|_| ());
                match chunk {
                    Ok(Some(bytes)) => {
                        if pipe.write_all(&bytes).is_err() {
                            break;
                        }
                    }
                    Ok(None) | Err(_) => break,
                }
            }
            state.update(|st| {
                st.broken = true;
                st.buf.clear();
            });
        });
    }

    /// Waits for the job, records how it ended, and ends a closing session.
    fn reap(
        self: Arc<Self>,
        mut child: std::process::Child,
        pumps: [Option<std::thread::JoinHandle<()>>; 2],
    ) {
        let exit = child.wait().map(Exit::from).unwrap_or(Exit::Code(-1));
        self.job.update(|j| {
            if j.phase != Phase::Ended {
                j.phase = Phase::Done(exit);
            }
        });
        if let Some(registry) = self.registry.upgrade() {
            registry.log(&format!(
                "xcpu: session {} ({}) job ended: {exit}\n",
                self.id, self.user
            ));
        }
        for p in pumps.into_iter().flatten() {
            let _ = p.join();
        }
        let (kind, value) = match exit {
            Exit::Code(c) => ("exit", c),
            Exit::Signal(s) => ("signal", s),
        };
        self.tree.own_end(kind, &value.to_string());
        let unheld = self.holds().count == 0;
        if unheld && self.job.lock().closing {
            self.end("closed");
        }
    }

    /// Ends the session (rule 4); later calls do nothing.
    pub fn end(&self, why: &str) {
        let (pid, cgroup, never_ran) = {
            let mut job = self.job.lock();
            if job.phase == Phase::Ended {
                return;
            }
            let pid = match job.phase {
                Phase::Running { pid } => Some(pid),
                _ => None,
            };
            let never_ran = job.phase == Phase::New;
            job.phase = Phase::Ended;
            (pid, job.cgroup.take(), never_ran)
        };
        self.job.update(|_| ());
        if never_ran {
            self.tree
                .own_end("failed", &format!("the session ended before exec: {why}"));
        }
        // What was handed on ends with it, now rather than when the connections go
        // (never waiting here for a forwarder's full queue).
        if let Some(f) = self.fanout.get() {
            f.wipe(false);
        }
        self.ended.cancel();
        self.tree.close();
        match (cgroup, pid) {
            (Some(cg), _) => self.kill_cgroup(cg),
            (None, Some(pid)) => {
                let _ = nf_sys::spawn::signal_group(pid, libc_sigkill());
            }
            (None, None) => {}
        }
        self.stdin.update(|st| st.broken = true);
        self.stdout.close();
        self.stderr.close();
        // The directory sits in the server's base: removing it is the server's work,
        // whichever thread ends the session.
        let removed = Creds::as_server(|| std::fs::remove_dir_all(&self.dir));
        if let Ok(Err(e)) = removed {
            if e.kind() != std::io::ErrorKind::NotFound {
                tracing::warn!(dir = %self.dir.display(), "xcpu: removing a session's upload directory: {e}");
            }
        }
        if let Some(registry) = self.registry.upgrade() {
            registry.forget(self.id);
            registry.log(&format!(
                "xcpu: session {} ({}) ended: {why}\n",
                self.id, self.user
            ));
        }
    }

    /// Kills every process of the ended job's cgroup, and removes the cgroup once they
    /// are gone, from a thread of its own (`end` may run on a connection's reader
    /// thread, which must not wait).
    fn kill_cgroup(&self, cg: Arc<JobCgroup>) {
        // The cgroup's files are root's: written as the server, whichever thread ends
        // the session.
        if let Err(e) = super::as_server(|| cg.kill()) {
            tracing::warn!(session = self.id, cgroup = %cg.path().display(), "xcpu: killing the job's cgroup: {e}");
        }
        let id = self.id;
        let remove = move || {
            if let Err(e) = cg.remove(CGROUP_REMOVAL) {
                tracing::warn!(session = id, "xcpu: {e}");
            }
        };
        if let Err(e) = super::server_thread(format!("xcpu-cgroup-{id}"), remove) {
            tracing::warn!(
                session = id,
                "xcpu: no thread to remove the job's cgroup: {e}; it goes at shutdown"
            );
        }
    }

    /// Appends `data` to the job's stdin, waiting for room; `EPIPE` once the job or
    /// session is gone.
    pub fn write_stdin(&self, ctx: &nf_ninep_server::Ctx, data: &[u8]) -> FsResult<u32> {
        let n = ctx.wait(&self.stdin, |st| {
            if st.broken {
                Some(Err(FsError::Errno(EPIPE)))
            } else if st.buf.len() < STDIN_CAPACITY {
                let n = data.len().min(STDIN_CAPACITY - st.buf.len());
                st.buf.extend(&data[..n]);
                Some(Ok(n as u32))
            } else {
                None
            }
        })??;
        self.stdin.update(|_| ());
        Ok(n)
    }

    /// The exit, once the job has ended; `None` if the session ended without one.
    pub fn wait_exit(&self, ctx: &nf_ninep_server::Ctx) -> FsResult<Option<Exit>> {
        ctx.wait(&self.job, |j| match j.phase {
            Phase::Done(e) => Some(Some(e)),
            Phase::Ended => Some(None),
            _ => None,
        })
    }
}

fn libc_sigkill() -> i32 {
    nf_sys::spawn::signal_number("KILL").unwrap_or(9)
}
