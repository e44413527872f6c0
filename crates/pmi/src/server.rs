//! The launcher's side: serves one job's ranks on a unix socket in a private directory,
//! or on a TCP port ([`Listen`]).
//!
//! Threads: one acceptor, plus one per connection. Shutdown, in order:
//! 1. set `stopping`; stop the acceptor ([`nf_sys::accept::Acceptor`]: its listening
//!    socket is shut down, so its blocked `accept` returns) and join it;
//! 2. wake every fence waiter (they answer "shutting down");
//! 3. shut the reading side of every connection down, which ends blocked reads; give
//!    the connections up to [`SETTLE`] to send their last answers; then shut the writing
//!    side down too, which ends blocked writes; join them;
//! 4. for a unix socket, remove the socket and the directory.
//!
//! # Who is served
//!
//! A unix socket lives in a directory only its owner can enter, so a connection there may
//! send anything: a malformed line gets an error response and may go on; a line over
//! [`MAX_LINE_LEN`] gets an error response and the connection is closed.
//!
//! A TCP port can be reached by anyone on the network, so a TCP server has a secret
//! ([`crate::secret`]) and admits a connection only when its first line, within
//! [`HELLO_TIMEOUT`] and [`MAX_HELLO_LEN`] bytes, is a hello with the right secret, job
//! id and size. Anything else — garbage, a wrong secret, silence, a rank already
//! connected — gets one error line, is closed, logged (with the peer's address) and
//! counted ([`Server::refused`]); the job goes on. After the hello, the rules of the
//! unix socket apply.
//!
//! Nothing a client sends can make the server allocate more than one line's worth, and
//! at most `2 × size + 8` connections are served at once.

use std::io::BufReader;
use std::net::{Shutdown, SocketAddr, TcpListener};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

use nf_sys::accept::Acceptor;

use crate::addr::PmiAddr;
use crate::env::is_valid_job_id;
use crate::error::PmiError;
use crate::protocol::{self, LineError, Request, Response, MAX_HELLO_LEN, MAX_LINE_LEN};
use crate::secret::{new_secret, secrets_match};
use crate::sock::{send_all, Listener, Stream};
use crate::store::{FenceState, Store};

/// How often shutdown checks whether the connections have settled.
const SETTLE_POLL: Duration = Duration::from_millis(5);
/// How long a fence waiter sleeps before rechecking (a safety net; it is normally woken).
const FENCE_RECHECK: Duration = Duration::from_millis(200);
/// How long the server waits for a client to take a response.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connections get at shutdown to send their last answers.
const SETTLE: Duration = Duration::from_millis(200);
/// How long a TCP connection has to send its hello before it is closed.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest unix socket path, in bytes (`sun_path` less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;
/// Name of the socket inside the server's directory.
const SOCKET_NAME: &str = "pmi.sock";

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A unix socket `pmi.sock` in a new private directory `nf-<job id>` under this
    /// directory (ranks on this machine only).
    Unix(PathBuf),
    /// TCP on this address (port 0: any free port); hellos must carry the server's
    /// secret. Bind an address the ranks can reach: it is the address they are given.
    Tcp(SocketAddr),
}

/// Something a rank asked of the launcher that the server cannot do by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerEvent {
    /// A rank asked for the job to be torn down.
    Abort {
        /// The rank that asked.
        rank: usize,
        /// Its reason.
        message: String,
        /// The job's exit status it asked for, if any.
        status: Option<i32>,
    },
}

/// A running PMI server for one job.
pub struct Server {
    addr: PmiAddr,
    /// The private directory of a unix socket.
    dir: Option<PathBuf>,
    shared: Arc<Shared>,
    acceptor: Option<Acceptor>,
}

struct Shared {
    size: usize,
    job_id: String,
    /// Required in every hello (TCP servers).
    secret: Option<String>,
    /// Connections closed without being served.
    refused: AtomicUsize,
    store: Mutex<Store>,
    fence_done: Condvar,
    stopping: AtomicBool,
    events: Sender<ServerEvent>,
    conns: Mutex<Vec<Connection>>,
    active: AtomicUsize,
}

struct Connection {
    stream: Stream,
    thread: JoinHandle<()>,
}

impl Server {
    /// Creates `parent/nf-<job_id>/` (mode 0700), binds `pmi.sock` in it and serves `size`
    /// ranks; abort requests are sent to `events`.
    pub fn start(
        parent: &Path,
        job_id: &str,
        size: usize,
        events: Sender<ServerEvent>,
    ) -> Result<Server, PmiError> {
        Server::start_on(Listen::Unix(parent.to_owned()), job_id, size, events)
    }

    /// Binds `bind` (port 0: any free port) with a fresh secret and serves `size` ranks
    /// over TCP; abort requests are sent to `events`.
    pub fn start_tcp(
        bind: SocketAddr,
        job_id: &str,
        size: usize,
        events: Sender<ServerEvent>,
    ) -> Result<Server, PmiError> {
        Server::start_on(Listen::Tcp(bind), job_id, size, events)
    }

    /// Starts serving `size` ranks of job `job_id` where `listen` says.
    pub fn start_on(
        listen: Listen,
        job_id: &str,
        size: usize,
        events: Sender<ServerEvent>,
    ) -> Result<Server, PmiError> {
        if size == 0 {
            return Err(PmiError::BadServerConfig {
                detail: "a job needs at least one rank".into(),
            });
        }
        if !is_valid_job_id(job_id) {
            return Err(PmiError::BadServerConfig {
                detail: format!(
                    "job id {job_id:?} is not safe in a file name (use A-Z a-z 0-9 . _ -)"
                ),
            });
        }
        let (listener, addr, dir, secret) = match listen {
            Listen::Unix(parent) => {
                let (listener, dir, path) = bind_unix(&parent, job_id)?;
                (listener, PmiAddr::Unix(path), Some(dir), None)
            }
            Listen::Tcp(bind) => {
                let secret = new_secret()?;
                let (listener, local) = bind_tcp(bind)?;
                (listener, PmiAddr::Tcp(local), None, Some(secret))
            }
        };
        let shared = Arc::new(Shared {
            size,
            job_id: job_id.to_owned(),
            secret,
            refused: AtomicUsize::new(0),
            store: Mutex::new(Store::new(size)),
            fence_done: Condvar::new(),
            stopping: AtomicBool::new(false),
            events,
            conns: Mutex::new(Vec::new()),
            active: AtomicUsize::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            Acceptor::start("nf-pmi-accept", listener, move |(stream, from)| {
                accepted(&shared, stream, from)
            })
        };
        let acceptor = match acceptor {
            Ok(t) => t,
            Err(source) => {
                remove_files(&addr, dir.as_deref());
                return Err(PmiError::Thread { source });
            }
        };
        debug!(%addr, size, job = job_id, "PMI server started");
        Ok(Server {
            addr,
            dir,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// The address to give to ranks as `NF_PMI_ADDR` (for TCP, the port actually bound).
    pub fn addr(&self) -> &PmiAddr {
        &self.addr
    }

    /// The private directory of a unix socket (removed by [`Server::stop`]); `None` for TCP.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The secret every hello must carry (`NF_PMI_SECRET`); `None` for a unix socket.
    pub fn secret(&self) -> Option<&str> {
        self.shared.secret.as_deref()
    }

    /// How many connections were closed without being served (failed hellos, garbage,
    /// too many connections).
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::Acquire)
    }

    /// The ranks waiting at the open fence for the others, in order: what a launcher
    /// reports when a job hangs in wire-up.
    pub fn fence_waiters(&self) -> Vec<usize> {
        lock(&self.shared.store).waiting()
    }

    /// Stops serving, closes every connection and removes the socket and its directory.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        let shared = &self.shared;
        shared.stopping.store(true, Ordering::Release);
        acceptor.stop();
        {
            let _store = lock(&shared.store);
            shared.fence_done.notify_all();
        }
        let conns = std::mem::take(&mut *lock(&shared.conns));
        for c in &conns {
            let _ = c.stream.shutdown(Shutdown::Read);
        }
        let settle = Instant::now() + SETTLE;
        while Instant::now() < settle && conns.iter().any(|c| !c.thread.is_finished()) {
            thread::sleep(SETTLE_POLL);
        }
        for c in &conns {
            let _ = c.stream.shutdown(Shutdown::Both);
        }
        for c in conns {
            let _ = c.thread.join();
        }
        remove_files(&self.addr, self.dir.as_deref());
        debug!(addr = %self.addr, "PMI server stopped");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("size", &self.shared.size)
            .finish_non_exhaustive()
    }
}

/// Creates the private directory and binds the socket in it.
fn bind_unix(parent: &Path, job_id: &str) -> Result<(Listener, PathBuf, PathBuf), PmiError> {
    let dir = parent.join(format!("nf-{job_id}"));
    let path = dir.join(SOCKET_NAME);
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(PmiError::SocketPathTooLong {
            path,
            len,
            max: MAX_SOCKET_PATH,
        });
    }
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|source| PmiError::ServerDir {
            path: dir.clone(),
            source,
        })?;
    let err = |source| PmiError::Bind {
        addr: PmiAddr::Unix(path.clone()),
        source,
    };
    let bound = UnixListener::bind(&path).map_err(err);
    match bound {
        Ok(l) => Ok((Listener::Unix(l), dir, path)),
        Err(e) => {
            let _ = std::fs::remove_dir(&dir);
            Err(e)
        }
    }
}

/// Binds a TCP listener; returns it with the address actually bound.
fn bind_tcp(bind: SocketAddr) -> Result<(Listener, SocketAddr), PmiError> {
    let err = |source| PmiError::Bind {
        addr: PmiAddr::Tcp(bind),
        source,
    };
    let l = TcpListener::bind(bind).map_err(err)?;
    let local = l.local_addr().map_err(err)?;
    Ok((Listener::Tcp(l), local))
}

/// Removes a unix socket and its directory (nothing to do for TCP).
fn remove_files(addr: &PmiAddr, dir: Option<&Path>) {
    if let PmiAddr::Unix(path) = addr {
        if let Err(e) = std::fs::remove_file(path) {
            warn!(path = %path.display(), "cannot remove the PMI socket: {e}");
        }
    }
    if let Some(dir) = dir {
        if let Err(e) = std::fs::remove_dir(dir) {
            warn!(path = %dir.display(), "cannot remove the PMI directory: {e}");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Serves one accepted connection on a thread of its own, unless too many are open.
fn accepted(shared: &Arc<Shared>, stream: Stream, from: String) {
    // Ranks plus room for strays; more than this is not a job of ours misbehaving politely.
    let max_conns = 2 * shared.size + 8;
    if shared.active.load(Ordering::Acquire) >= max_conns {
        shared.refused.fetch_add(1, Ordering::AcqRel);
        warn!(%from, max_conns, "PMI server refusing a connection: too many open");
        return;
    }
    if let Err(e) = spawn_connection(shared, stream, from) {
        warn!("PMI server cannot serve a connection: {e}");
    }
}

fn spawn_connection(shared: &Arc<Shared>, stream: Stream, from: String) -> std::io::Result<()> {
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let handle = stream.try_clone()?;
    let worker = Arc::clone(shared);
    shared.active.fetch_add(1, Ordering::AcqRel);
    let thread = thread::Builder::new()
        .name("nf-pmi-conn".into())
        .spawn(move || {
            serve_connection(&worker, &stream, &from);
            worker.active.fetch_sub(1, Ordering::AcqRel);
        });
    match thread {
        Ok(thread) => {
            let mut conns = lock(&shared.conns);
            conns.retain(|c| !c.thread.is_finished());
            conns.push(Connection {
                stream: handle,
                thread,
            });
            Ok(())
        }
        Err(e) => {
            shared.active.fetch_sub(1, Ordering::AcqRel);
            Err(e)
        }
    }
}

/// What a connection knows about its peer.
#[derive(Default)]
struct Peer {
    rank: Option<usize>,
    finalized: bool,
}

fn serve_connection(shared: &Shared, stream: &Stream, from: &str) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut peer = Peer::default();
    if shared.secret.is_some() {
        match admit(shared, stream, &mut reader, &mut line, &mut peer) {
            Ok(()) => {
                if respond(stream, &Response::Ok).is_err() {
                    return leave(shared, stream, &peer);
                }
            }
            Err(why) => {
                shared.refused.fetch_add(1, Ordering::AcqRel);
                warn!(%from, "PMI: refusing a connection: {why}");
                let _ = respond(stream, &error(format!("connection refused: {why}")));
                let _ = stream.shutdown(Shutdown::Both);
                return;
            }
        }
    }
    loop {
        let req = match protocol::read_line(&mut reader, MAX_LINE_LEN, &mut line) {
            Ok(true) => serde_json::from_slice::<Request>(&line),
            Ok(false) | Err(LineError::Truncated) | Err(LineError::Io(_)) => break,
            Err(LineError::TooLong) => {
                let message = format!(
                    "request line longer than {MAX_LINE_LEN} bytes; closing the connection"
                );
                warn!(rank = ?peer.rank, "PMI: {message}");
                let _ = respond(stream, &Response::Error { message });
                break;
            }
        };
        let resp = match req {
            Ok(req) => handle(shared, &mut peer, req),
            Err(e) => {
                warn!(rank = ?peer.rank, "PMI: malformed request: {e}");
                Response::Error {
                    message: format!(
                        "malformed request (expected one JSON PMI request per line): {e}"
                    ),
                }
            }
        };
        if respond(stream, &resp).is_err() || peer.finalized {
            break;
        }
    }
    leave(shared, stream, &peer);
}

/// Reads and checks a TCP connection's first line, which must be a good hello; on
/// success the rank has joined and still needs its `ok`.
fn admit(
    shared: &Shared,
    stream: &Stream,
    reader: &mut BufReader<&Stream>,
    line: &mut Vec<u8>,
    peer: &mut Peer,
) -> Result<(), String> {
    stream
        .set_read_timeout(Some(HELLO_TIMEOUT))
        .map_err(|e| format!("cannot bound the wait for its hello: {e}"))?;
    let req = match protocol::read_line(reader, MAX_HELLO_LEN, line) {
        Ok(true) => serde_json::from_slice::<Request>(line)
            .map_err(|_| "its first line is not a PMI request (expected a hello)".to_owned())?,
        Ok(false) => return Err("it closed without saying hello".into()),
        Err(LineError::TooLong) => {
            return Err(format!(
                "its first line is longer than {MAX_HELLO_LEN} bytes, so not a hello"
            ))
        }
        Err(LineError::Truncated) => return Err("it closed in the middle of its hello".into()),
        Err(LineError::Io(e))
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            return Err(format!("no hello within {HELLO_TIMEOUT:?}"))
        }
        Err(LineError::Io(e)) => return Err(format!("reading its hello failed: {e}")),
    };
    if !matches!(req, Request::Hello { .. }) {
        return Err(format!("its first request is {}, not hello", req.op()));
    }
    match handle(shared, peer, req) {
        Response::Ok => {}
        Response::Error { message } => return Err(message),
        other => return Err(format!("unexpected answer to its hello: {other:?}")),
    }
    stream
        .set_read_timeout(None)
        .map_err(|e| format!("cannot lift the hello deadline: {e}"))
}

/// Ends a connection: the peer sees the end now, and its rank (if any) has left.
fn leave(shared: &Shared, stream: &Stream, peer: &Peer) {
    // The server keeps a clone of the socket for shutdown; make the peer see the end now.
    let _ = stream.shutdown(Shutdown::Both);
    if let Some(rank) = peer.rank {
        debug!(rank, finalized = peer.finalized, "PMI rank left");
        lock(&shared.store).leave(rank, peer.finalized);
        shared.fence_done.notify_all();
    }
}

fn respond(stream: &Stream, resp: &Response) -> std::io::Result<()> {
    send_all(stream, &protocol::encode(resp))
}

fn error(message: impl Into<String>) -> Response {
    Response::Error {
        message: message.into(),
    }
}

fn handle(shared: &Shared, peer: &mut Peer, req: Request) -> Response {
    if let Err(e) = req.check_limits() {
        return error(e.to_string());
    }
    let rank = match (&req, peer.rank) {
        (
            Request::Hello {
                rank,
                size,
                job_id,
                secret,
            },
            None,
        ) => return hello(shared, peer, *rank, *size, job_id, secret.as_deref()),
        (Request::Hello { .. }, Some(r)) => {
            return error(format!("this connection already belongs to rank {r}"))
        }
        (_, None) => {
            return error(format!(
                "{} before hello: introduce the rank first",
                req.op()
            ))
        }
        (_, Some(r)) => r,
    };
    match req {
        Request::Hello { .. } => error("hello twice"),
        Request::Put { key, value } => match lock(&shared.store).put(key, value) {
            Ok(()) => Response::Ok,
            Err(m) => error(m),
        },
        Request::Get { key } => match lock(&shared.store).get(&key) {
            Some(v) => Response::Value {
                value: v.to_owned(),
            },
            None => Response::NotFound { key },
        },
        Request::Fence { epoch } => fence(shared, rank, epoch),
        Request::Abort { message, status } => {
            match status {
                None => warn!(rank, "PMI: rank asks to abort the job: {message}"),
                Some(status) => info!(rank, status, "PMI: rank ends the job: {message}"),
            }
            if shared
                .events
                .send(ServerEvent::Abort {
                    rank,
                    message,
                    status,
                })
                .is_err()
            {
                return error("the launcher is no longer listening for aborts");
            }
            Response::Ok
        }
        Request::Finalize => {
            peer.finalized = true;
            Response::Ok
        }
    }
}

fn hello(
    shared: &Shared,
    peer: &mut Peer,
    rank: usize,
    size: usize,
    job_id: &str,
    secret: Option<&str>,
) -> Response {
    if let Some(expected) = &shared.secret {
        if !secret.is_some_and(|s| secrets_match(s, expected)) {
            return error(
                "wrong or missing secret: the hello must carry the NF_PMI_SECRET the launcher gave this job",
            );
        }
    }
    if job_id != shared.job_id {
        return error(format!(
            "rank {rank} belongs to job {job_id:?}, this server serves job {:?}",
            shared.job_id
        ));
    }
    if size != shared.size {
        return error(format!(
            "rank {rank} thinks the job has {size} ranks, it has {}",
            shared.size
        ));
    }
    match lock(&shared.store).join(rank) {
        Ok(()) => {
            debug!(rank, "PMI rank connected");
            peer.rank = Some(rank);
            Response::Ok
        }
        Err(m) => error(m),
    }
}

fn fence(shared: &Shared, rank: usize, epoch: u64) -> Response {
    let mut store = lock(&shared.store);
    if let Err(m) = store.arrive(rank, epoch) {
        return error(m);
    }
    shared.fence_done.notify_all();
    loop {
        let state = store.fence_state(epoch);
        if state == FenceState::Done {
            return Response::Ok;
        }
        // Before Broken: at shutdown, ranks leave because the server closes them.
        if shared.stopping.load(Ordering::Acquire) {
            return error(format!(
                "fence {epoch} abandoned: the launcher is shutting the job down"
            ));
        }
        if let FenceState::Broken(m) = state {
            return error(m);
        }
        store = shared
            .fence_done
            .wait_timeout(store, FENCE_RECHECK)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}
