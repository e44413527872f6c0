//! `/xcpu`: jobs as files, after LANL's XCPU. A client opens `/xcpu/clone` to get
//! a session, uploads into its `fs/`, writes `argv`, `env` and `exec`, writes `exec`
//! to its `ctl`, then reads `stdout`, `stderr` and `wait`.
//!
//! | path | what |
//! |---|---|
//! | `/xcpu/clone` | opening it makes session `N` for the attached user; reading it returns `N` |
//! | `/xcpu/arch` | `linux/x86_64`: what binaries this node runs |
//! | `/xcpu/procs` | one line per session: id, user, state, pid, start (epoch seconds), command (other users' sessions: the program only); every field escaped ([`escape`]) |
//! | `/xcpu/env` | the environment every job starts from (`NAME=VALUE` lines) |
//! | `/xcpu/N/ctl` | commands ([`ctl`]); reads the id |
//! | `/xcpu/N/argv`, `env`, `exec` | the job's arguments (shell-quoted), extra environment, program |
//! | `/xcpu/N/fs/` | the upload directory the job runs in ([`upload`]) |
//! | `/xcpu/N/stdin` | written bytes reach the job; its end of file when the last writer closes |
//! | `/xcpu/N/stdout`, `stderr` | the job's output; readers follow it ([`output`]) |
//! | `/xcpu/N/wait` | blocks until the job ends, then `exit CODE` or `signal SIG` |
//! | `/xcpu/N/tree` | the output and the end of every node of the session's tree, one record per line: `NODE out TEXT`, `NODE exit CODE` … ([`treeout`]); ends once every node has |
//! | `/xcpu/N/clones` | after `clone`: the nodes it was handed on to, `ADDR SESSION` or `ADDR - failed: WHY` ([`fanout`]) |
//! | `/xcpu/N/state`, `id` | `new`, `running PID`, `exit CODE`, `signal SIG`, `ended` (+ the last `ctl` error); the id |
//!
//! **Who runs what.** Every attach already stands for an authenticated account
//! ([`crate::access`]). A server running as root starts a session's job as that
//! account (its uid, primary group and supplementary groups), root only when root
//! attached; a server running as a user serves only that user, so jobs run as it.
//! A session's files belong to its user, mode 0600 or narrower: other users see the
//! session in `/xcpu/procs` — its program, not its arguments — and nothing more.
//! Limits ([`XcpuConfig`]): sessions per user (`EDQUOT`) and in all (`ENOSPC`), bytes
//! uploaded per session (`EFBIG`), and resource limits on every job (`RLIMIT_NPROC` …),
//! which a session may only lower ([`nf_sys::spawn::job_limits`]).
//!
//! **What a job gets** ([`nf_sys::spawn`]): a session of its own with no controlling
//! terminal, no descriptor of the server's but its three pipes, and — where the host
//! has a cgroup v2 and the server is root — a cgroup of its own
//! (`SERVER/ninefold-PID-N/session-ID`, [`nf_sys::cgroup`]) that every process it
//! makes stays in, so `kill`, `wipe` and the session's end reach also those that left
//! its process group (`setsid`). Without one (not root, no cgroup2 mounted, not
//! writable) jobs are tracked by their process group, which `setsid` leaves; the
//! server says so once in its log.
//!
//! **Where uploads go**: `--xcpu-dir`, else a new `xcpu.XXXXXX` (mode 0711, removed at
//! shutdown) in the server's state directory ([`crate::state`]), never at a path in
//! `/tmp` another user could take first.
//!
//! When sessions end, and what ending does: [`session`]. Driving a session from a
//! client (as `nf exec`, `nf run --hosts` and [`fanout`] do): `nf_xcpu_client`.

pub mod ctl;
pub mod escape;
pub mod fanout;
pub mod files;
pub mod output;
pub mod session;
pub mod treeout;
pub mod upload;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use nf_ninep::errno::{EDQUOT, EIO, ENOSPC};
use nf_ninep::LOpenFlags;
use nf_ninep_server::{Creds, Ctx, FsError, FsResult};
use nf_ninep_trees::synthetic::{
    slice_at, DirOps, DynamicFile, FileNode, OpenFile, Stream, SyntheticTree, TreeError,
};
use nf_sys::cgroup::CgroupRoot;
use nf_sys::spawn::Rlimit;

use crate::state::{StateDir, StateError};
use files::{Kind, SessionFile};
use output::OutputFile;
use session::{Hold, Session, SessionRef};
use upload::UploadDir;

/// The environment jobs start from unless configured otherwise.
pub const DEFAULT_ENV: &str = "PATH=/usr/local/bin:/usr/bin:/bin\n";

/// Limits and places of `/xcpu`.
#[derive(Clone, Debug)]
pub struct XcpuConfig {
    /// Where sessions' upload directories are made; `None`: a new directory
    /// `xcpu.XXXXXX` in the server's state directory ([`crate::state`]), removed at
    /// shutdown.
    pub dir: Option<PathBuf>,
    /// How long a session nobody holds open lives on ([`session`], rule 2).
    pub linger: Duration,
    /// Sessions one user may have at once.
    pub sessions_per_user: usize,
    /// Sessions in all.
    pub sessions_total: usize,
    /// Bytes one session may upload into `fs/`.
    pub upload_limit: u64,
    /// Bytes of each output stream kept for readers that open later.
    pub output_history: usize,
    /// Resource limits every job starts with; a session may lower, never raise them.
    pub limits: Vec<Rlimit>,
    /// What `/xcpu/arch` says; `None`: this machine's (`linux/x86_64`).
    pub arch: Option<String>,
    /// `/xcpu/env`: `NAME=VALUE` lines every job starts from.
    pub env: String,
    /// This node's certificate, to hand sessions on to `tls:` nodes (tree spawn);
    /// `nf serve` uses its own `--tls-cert`.
    pub forward_tls: Option<nf_link::tls::TlsFiles>,
}

impl Default for XcpuConfig {
    fn default() -> Self {
        XcpuConfig {
            dir: None,
            linger: Duration::from_secs(30),
            sessions_per_user: 64,
            sessions_total: 1024,
            upload_limit: 1 << 30,
            output_history: 1 << 20,
            limits: Vec::new(),
            arch: None,
            env: DEFAULT_ENV.to_string(),
            forward_tls: None,
        }
    }
}

impl XcpuConfig {
    /// What `/xcpu/arch` says.
    pub fn arch(&self) -> String {
        self.arch
            .clone()
            .unwrap_or_else(|| format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH))
    }
}

/// Why `/xcpu` could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum XcpuError {
    /// The server's state directory cannot be used.
    #[error(transparent)]
    State(#[from] StateError),
    /// The directory for uploads could not be made.
    #[error("making the xcpu upload directory {}: {source} (choose another with --xcpu-dir, or a state directory with --state-dir)", dir.display())]
    Dir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The synthetic tree refused an entry.
    #[error(transparent)]
    Tree(#[from] TreeError),
}

/// The sessions of one node.
pub struct Registry {
    tree: SyntheticTree,
    config: XcpuConfig,
    base: PathBuf,
    /// Whether the base directory is ours to remove at shutdown.
    made_base: bool,
    /// The state directory the base was made in (kept: a fresh one goes with it).
    _state: Option<StateDir>,
    /// Where jobs' cgroups are made; `None`: jobs are tracked by process group.
    cgroups: Option<CgroupRoot>,
    sessions: Mutex<BTreeMap<u64, Arc<Session>>>,
    next: AtomicU64,
    log: Stream,
    /// The server is root: jobs run as their session's user.
    run_as: bool,
}

/// `/xcpu` of one node: a handle on its sessions.
#[derive(Clone)]
pub struct Xcpu(Arc<Registry>);

impl std::fmt::Debug for Xcpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Xcpu").field("base", &self.0.base).finish()
    }
}

impl Xcpu {
    /// Adds `/xcpu` to `tree`, logging session events to `log`; uploads go to
    /// `config.dir`, else into the state directory `state_dir` (`--state-dir`; `None`:
    /// the default, [`StateDir::open`]).
    pub fn install(
        tree: &SyntheticTree,
        config: XcpuConfig,
        state_dir: Option<&Path>,
        log: Stream,
    ) -> Result<Xcpu, XcpuError> {
        let dir_error = |dir: &Path| {
            let dir = dir.to_path_buf();
            move |source| XcpuError::Dir { dir, source }
        };
        let (base, made_base, state) = match &config.dir {
            Some(d) => {
                make_base(d).map_err(dir_error(d))?;
                (d.clone(), false, None)
            }
            None => {
                let state = StateDir::open(state_dir)?;
                let base = state
                    .private_dir("xcpu", 0o711)
                    .map_err(dir_error(state.path()))?;
                (base, true, Some(state))
            }
        };
        let run_as = rustix::process::geteuid().is_root();
        let registry = Arc::new(Registry {
            tree: tree.clone(),
            config,
            base,
            made_base,
            _state: state,
            cgroups: job_cgroups(run_as),
            sessions: Mutex::default(),
            next: AtomicU64::new(1),
            log,
            run_as,
        });
        let weak = Arc::downgrade(&registry);
        tree.add_dir("/xcpu")?;
        tree.add_file("/xcpu/clone", CloneFile(weak.clone()))?;
        let arch = registry.config.arch();
        tree.add_file(
            "/xcpu/arch",
            DynamicFile::new(move || format!("{arch}\n").into_bytes()),
        )?;
        let env = registry.config.env.clone();
        tree.add_file(
            "/xcpu/env",
            DynamicFile::new(move || env.clone().into_bytes()),
        )?;
        tree.add_file("/xcpu/procs", ProcsFile(weak))?;
        Ok(Xcpu(registry))
    }

    /// Ends every session (server shutdown), removes the jobs' cgroups, and the upload
    /// directory if it was made by [`Xcpu::install`].
    pub fn shutdown(&self) {
        self.0.end_all();
    }

    /// Where the sessions' upload directories are made.
    pub fn base(&self) -> &Path {
        &self.0.base
    }

    /// Whether jobs get cgroups of their own here (else process groups: module docs).
    pub fn has_cgroups(&self) -> bool {
        self.0.cgroups.is_some()
    }

    /// Live sessions' ids.
    pub fn sessions(&self) -> Vec<u64> {
        self.0.lock().keys().copied().collect()
    }

    /// A counter of the sessions present now (`/status`'s `sessions`). It holds the
    /// registry weakly: a file of the tree that owns the registry must not keep it
    /// alive, or dropping the tree would never end the sessions.
    pub fn session_counter(&self) -> impl Fn() -> usize + Send + Sync + 'static {
        let registry = Arc::downgrade(&self.0);
        move || registry.upgrade().map_or(0, |r| r.lock().len())
    }
}

impl Drop for Registry {
    /// A tree dropped without [`Xcpu::shutdown`] still leaves no job running.
    fn drop(&mut self) {
        self.end_all();
    }
}

/// The root of the jobs' cgroups of a server that is root (`run_as`), or `None` (jobs
/// tracked by process group), said once in the log.
fn job_cgroups(run_as: bool) -> Option<CgroupRoot> {
    const FALLBACK: &str = "jobs are tracked by their process group: a process that leaves it (setsid) is not reached by kill, wipe or the session's end";
    match CgroupRoot::create() {
        Ok(root) => {
            tracing::debug!(cgroup = %root.path().display(), "xcpu: each job gets a cgroup of its own");
            Some(root)
        }
        Err(e) if run_as => {
            tracing::warn!("xcpu: no cgroup v2 for jobs ({e}); {FALLBACK}");
            None
        }
        Err(e) => {
            tracing::info!("xcpu: no cgroup v2 for jobs ({e}); {FALLBACK}");
            None
        }
    }
}

/// Makes the upload base: mode 0711, so jobs reach their own directory by path
/// without anyone listing the others. One that exists must be the server's own and
/// writable by nobody else: whoever could rename entries in it could swap a session's
/// directory for a link while the server sets its owner.
fn make_base(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    match std::fs::DirBuilder::new().mode(0o711).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir)?;
            let euid = rustix::process::geteuid().as_raw();
            let why = if !meta.is_dir() {
                Some("it exists and is not a directory")
            } else if meta.uid() != euid {
                Some("it exists and belongs to another user")
            } else if meta.mode() & 0o022 != 0 {
                Some("it exists and others may write in it")
            } else {
                None
            };
            match why {
                Some(why) => Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, why)),
                None => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)),
            }
        }
        Err(e) => Err(e),
    }
}

impl Registry {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn log(&self, line: &str) {
        self.log.push(line.as_bytes());
    }

    /// `/xcpu/procs` as `reader` sees it: every session, with the arguments of the
    /// reader's own (all of them for root, or a reader the tree does not name).
    fn procs(&self, reader: Option<&Creds>) -> Vec<u8> {
        let all: Vec<Arc<Session>> = self.lock().values().cloned().collect();
        all.iter()
            .map(|s| {
                let full = reader.is_none_or(|r| r.is_root() || r.uid() == s.creds.uid());
                s.procs_line(full)
            })
            .collect::<String>()
            .into_bytes()
    }

    /// Ends every session, then removes the jobs' cgroups and the base directory if it
    /// is ours; safe to call again.
    fn end_all(&self) {
        let all: Vec<Arc<Session>> = std::mem::take(&mut *self.lock()).into_values().collect();
        for s in all {
            s.end("the server is stopping");
        }
        if let Some(cgroups) = &self.cgroups {
            if let Err(e) = cgroups.close() {
                tracing::warn!("xcpu: removing the jobs' cgroups: {e}");
            }
        }
        if self.made_base {
            let removed = Creds::as_server(|| std::fs::remove_dir_all(&self.base));
            if let Ok(Err(e)) = removed {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(dir = %self.base.display(), "xcpu: removing the upload directory: {e}");
                }
            }
        }
    }

    /// A job's cgroup for session `id`, if jobs get cgroups here.
    fn job_cgroup(&self, id: u64) -> std::io::Result<Option<nf_sys::cgroup::JobCgroup>> {
        self.cgroups
            .as_ref()
            .map(|c| c.job(&format!("session-{id}")))
            .transpose()
    }

    fn forget(&self, id: u64) {
        self.lock().remove(&id);
        let _ = self.tree.remove(&format!("/xcpu/{id}"));
    }

    /// The environment a job of `session` starts from: `/xcpu/env`, then who it runs
    /// as (`HOME`, `USER`, `LOGNAME`, `SHELL`), then `NF_XCPU_SESSION`.
    fn job_env(&self, session: &Session) -> Vec<(String, String)> {
        let mut env = ctl::env_lines(&self.config.env);
        if let Ok(Some(u)) = nix::unistd::User::from_uid(session.creds.uid().into()) {
            env.push(("HOME".into(), u.dir.display().to_string()));
            env.push(("SHELL".into(), u.shell.display().to_string()));
        }
        env.push(("USER".into(), session.user.clone()));
        env.push(("LOGNAME".into(), session.user.clone()));
        env.push(("NF_XCPU_SESSION".into(), session.id.to_string()));
        env
    }

    /// Makes a session for the request's user (rule 1 of [`session`]).
    fn create(self: &Arc<Self>, ctx: &Ctx) -> FsResult<(SessionRef, Hold)> {
        let creds = ctx.maker().clone();
        let user =
            crate::access::account_name(creds.uid()).unwrap_or_else(|| creds.uid().to_string());
        let id = {
            let sessions = self.lock();
            let mine = sessions
                .values()
                .filter(|s| s.creds.uid() == creds.uid())
                .count();
            if mine >= self.config.sessions_per_user {
                tracing::warn!(%user, limit = self.config.sessions_per_user, "xcpu: session refused: the user has as many sessions as allowed (EDQUOT)");
                return Err(FsError::Errno(EDQUOT));
            }
            if sessions.len() >= self.config.sessions_total {
                tracing::warn!(
                    limit = self.config.sessions_total,
                    "xcpu: session refused: the node has as many sessions as allowed (ENOSPC)"
                );
                return Err(FsError::Errno(ENOSPC));
            }
            self.next.fetch_add(1, Ordering::Relaxed)
        };
        let dir = self.base.join(id.to_string());
        as_server(|| make_session_dir(&dir, &creds)).map_err(|e| {
            tracing::warn!(dir = %dir.display(), "xcpu: making a session's upload directory: {e}");
            FsError::Errno(e.raw_os_error().map_or(EIO, |n| n as u32))
        })?;
        let session = SessionRef(Arc::new(Session::new(
            id,
            user.clone(),
            creds,
            dir,
            self.config.output_history,
            Arc::downgrade(self),
        )));
        let hold = session.hold()?;
        self.lock().insert(id, Arc::clone(&session.0));
        if let Err(e) = self.add_entries(&session) {
            tracing::warn!("xcpu: adding session {id} to the tree: {e}");
            session.end("could not be added to the tree");
            return Err(FsError::Errno(EIO));
        }
        self.log(&format!("xcpu: session {id} made for {user}\n"));
        Ok((session, hold))
    }

    fn add_entries(&self, s: &SessionRef) -> Result<(), TreeError> {
        let root = format!("/xcpu/{}", s.id);
        self.tree.add_dir(&root)?;
        self.tree.set_dir_ops(&root, SessionDir(s.owner()))?;
        for (kind, name) in Kind::ALL {
            let file = SessionFile {
                kind,
                session: s.clone(),
            };
            self.tree.add_file(&format!("{root}/{name}"), file)?;
        }
        let streams = [
            ("stdout", &s.stdout),
            ("stderr", &s.stderr),
            ("tree", s.tree.output()),
        ];
        for (name, output) in streams {
            let file = OutputFile {
                output: output.clone(),
                session: s.clone(),
            };
            self.tree.add_file(&format!("{root}/{name}"), file)?;
        }
        let fs = format!("{root}/fs");
        self.tree.add_dir(&fs)?;
        self.tree.set_dir_ops(
            &fs,
            UploadDir {
                session: s.clone(),
                limit: self.config.upload_limit,
            },
        )
    }
}

/// Runs `f` as the server itself (making and chowning a directory in the root-owned
/// base), then takes the request's identity back on.
fn as_server<R>(f: impl FnOnce() -> std::io::Result<R>) -> std::io::Result<R> {
    Creds::as_server(f)
        .map_err(|e| std::io::Error::from_raw_os_error(e.ecode as i32))
        .and_then(|r| r)
}

/// Starts a thread for the server's own work on sessions. A thread inherits the
/// filesystem identity of the request thread that starts it, so it first takes the
/// server's back ([`Creds::assume`]).
pub(crate) fn server_thread(
    name: String,
    f: impl FnOnce() + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        if let Err(e) = Creds::server().assume() {
            tracing::warn!(
                "xcpu: a server thread could not act as the server (errno {})",
                e.ecode
            );
            return;
        }
        f()
    })
}

/// The session's upload directory: mode 0700, owned by its user.
fn make_session_dir(dir: &std::path::Path, creds: &Creds) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)?;
    std::os::unix::fs::lchown(dir, Some(creds.uid()), Some(creds.gid()))
}

/// `/xcpu/N` itself: the session's user's, read and search only.
struct SessionDir((u32, u32));

impl DirOps for SessionDir {
    fn mode(&self) -> u32 {
        0o500
    }

    fn owner(&self) -> Option<(u32, u32)> {
        Some(self.0)
    }
}

/// `/xcpu/procs`: a snapshot per open, as its reader may see it.
struct ProcsFile(Weak<Registry>);

impl FileNode for ProcsFile {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        0o444
    }

    fn open(&self, ctx: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        if flags.access_mode() != LOpenFlags::RDONLY.0 {
            return Err(FsError::Errno(nf_ninep::errno::EACCES));
        }
        let text = self
            .0
            .upgrade()
            .map(|r| r.procs(ctx.creds()))
            .unwrap_or_default();
        Ok(Box::new(Snapshot(text)))
    }
}

/// `/xcpu/clone`.
struct CloneFile(Weak<Registry>);

impl FileNode for CloneFile {
    fn mode(&self) -> u32 {
        0o444
    }

    fn open(&self, ctx: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        if flags.access_mode() != LOpenFlags::RDONLY.0 {
            return Err(FsError::Errno(nf_ninep::errno::EACCES));
        }
        let registry = self.0.upgrade().ok_or(FsError::Errno(ENOSPC))?;
        let (session, hold) = registry.create(ctx)?;
        Ok(Box::new(CloneOpen {
            text: format!("{}\n", session.id).into_bytes(),
            _hold: hold,
        }))
    }
}

struct CloneOpen {
    text: Vec<u8>,
    _hold: Hold,
}

impl OpenFile for CloneOpen {
    fn read(&self, _: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        Ok(slice_at(&self.text, offset, count))
    }
}

/// Text taken at open.
struct Snapshot(Vec<u8>);

impl OpenFile for Snapshot {
    fn read(&self, _: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        Ok(slice_at(&self.0, offset, count))
    }
}
