//! The launcher's side: serves one job's ranks on a unix socket in a private directory.
//!
//! Threads: one acceptor, plus one per connection. Shutdown, in order:
//! 1. set `stopping`; the acceptor sees it within [`ACCEPT_POLL`] and returns; join it;
//! 2. wake every fence waiter (they answer "shutting down");
//! 3. shut the reading side of every connection down, which ends blocked reads; give
//!    the connections up to [`SETTLE`] to send their last answers; then shut the writing
//!    side down too, which ends blocked writes; join them;
//! 4. remove the socket and the directory.
//!
//! A connection that sends a malformed line gets an error response and may go on; a line
//! over [`MAX_LINE_LEN`] gets an error response and the connection is closed. Nothing a
//! client sends can make the server allocate more than one line's worth.

use std::io::BufReader;
use std::net::Shutdown;
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use crate::env::is_valid_job_id;
use crate::error::PmiError;
use crate::protocol::{self, LineError, Request, Response, MAX_LINE_LEN};
use crate::sock::send_all;
use crate::store::{FenceState, Store};

/// How often the acceptor checks whether it should stop.
const ACCEPT_POLL: Duration = Duration::from_millis(5);
/// How long a fence waiter sleeps before rechecking (a safety net; it is normally woken).
const FENCE_RECHECK: Duration = Duration::from_millis(200);
/// How long the server waits for a client to take a response.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connections get at shutdown to send their last answers.
const SETTLE: Duration = Duration::from_millis(200);
/// Longest unix socket path, in bytes (`sun_path` less its terminating NUL).
const MAX_SOCKET_PATH: usize = 107;
/// Name of the socket inside the server's directory.
const SOCKET_NAME: &str = "pmi.sock";

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
    },
}

/// A running PMI server for one job.
pub struct Server {
    dir: PathBuf,
    path: PathBuf,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    size: usize,
    job_id: String,
    store: Mutex<Store>,
    fence_done: Condvar,
    stopping: AtomicBool,
    events: Sender<ServerEvent>,
    conns: Mutex<Vec<Connection>>,
    active: AtomicUsize,
}

struct Connection {
    stream: UnixStream,
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
        let listener = match bind(&path) {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let shared = Arc::new(Shared {
            size,
            job_id: job_id.to_owned(),
            store: Mutex::new(Store::new(size)),
            fence_done: Condvar::new(),
            stopping: AtomicBool::new(false),
            events,
            conns: Mutex::new(Vec::new()),
            active: AtomicUsize::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("nf-pmi-accept".into())
                .spawn(move || accept_loop(&listener, &shared))
        };
        let acceptor = match acceptor {
            Ok(t) => t,
            Err(source) => {
                let _ = std::fs::remove_file(&path);
                let _ = std::fs::remove_dir(&dir);
                return Err(PmiError::Thread { source });
            }
        };
        debug!(path = %path.display(), size, job = job_id, "PMI server started");
        Ok(Server {
            dir,
            path,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// Path of the socket, to give to ranks as `NF_PMI_ADDR`.
    pub fn addr(&self) -> &Path {
        &self.path
    }

    /// The server's private directory (removed by [`Server::stop`]).
    pub fn dir(&self) -> &Path {
        &self.dir
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
        let _ = acceptor.join();
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
            thread::sleep(ACCEPT_POLL);
        }
        for c in &conns {
            let _ = c.stream.shutdown(Shutdown::Both);
        }
        for c in conns {
            let _ = c.thread.join();
        }
        if let Err(e) = std::fs::remove_file(&self.path) {
            warn!(path = %self.path.display(), "cannot remove the PMI socket: {e}");
        }
        if let Err(e) = std::fs::remove_dir(&self.dir) {
            warn!(path = %self.dir.display(), "cannot remove the PMI directory: {e}");
        }
        debug!(path = %self.path.display(), "PMI server stopped");
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
            .field("path", &self.path)
            .field("size", &self.shared.size)
            .finish_non_exhaustive()
    }
}

fn bind(path: &Path) -> Result<UnixListener, PmiError> {
    let err = |source| PmiError::Bind {
        path: path.to_owned(),
        source,
    };
    let listener = UnixListener::bind(path).map_err(err)?;
    if let Err(e) = listener.set_nonblocking(true) {
        let _ = std::fs::remove_file(path);
        return Err(err(e));
    }
    Ok(listener)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn accept_loop(listener: &UnixListener, shared: &Arc<Shared>) {
    // Ranks plus room for strays; more than this is not a job of ours misbehaving politely.
    let max_conns = 2 * shared.size + 8;
    while !shared.stopping.load(Ordering::Acquire) {
        match listener.accept() {
            Ok((stream, _)) => {
                if shared.active.load(Ordering::Acquire) >= max_conns {
                    warn!(max_conns, "PMI server refusing a connection: too many open");
                    continue;
                }
                if let Err(e) = spawn_connection(shared, stream) {
                    warn!("PMI server cannot serve a connection: {e}");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => thread::sleep(ACCEPT_POLL),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                warn!("PMI server accept failed: {e}");
                thread::sleep(ACCEPT_POLL);
            }
        }
    }
}

fn spawn_connection(shared: &Arc<Shared>, stream: UnixStream) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let handle = stream.try_clone()?;
    let worker = Arc::clone(shared);
    shared.active.fetch_add(1, Ordering::AcqRel);
    let thread = thread::Builder::new()
        .name("nf-pmi-conn".into())
        .spawn(move || {
            serve_connection(&worker, &stream);
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

fn serve_connection(shared: &Shared, stream: &UnixStream) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let mut peer = Peer::default();
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
    // The server keeps a clone of the socket for shutdown; make the peer see the end now.
    let _ = stream.shutdown(Shutdown::Both);
    if let Some(rank) = peer.rank {
        debug!(rank, finalized = peer.finalized, "PMI rank left");
        lock(&shared.store).leave(rank, peer.finalized);
        shared.fence_done.notify_all();
    }
}

fn respond(stream: &UnixStream, resp: &Response) -> std::io::Result<()> {
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
        (Request::Hello { rank, size, job_id }, None) => {
            return hello(shared, peer, *rank, *size, job_id)
        }
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
        Request::Abort { message } => {
            warn!(rank, "PMI: rank asks to abort the job: {message}");
            if shared
                .events
                .send(ServerEvent::Abort { rank, message })
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

fn hello(shared: &Shared, peer: &mut Peer, rank: usize, size: usize, job_id: &str) -> Response {
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
        match store.fence_state(epoch) {
            FenceState::Done => return Response::Ok,
            FenceState::Broken(m) => return error(m),
            FenceState::Waiting => {}
        }
        if shared.stopping.load(Ordering::Acquire) {
            return error(format!(
                "fence {epoch} abandoned: the launcher is shutting the job down"
            ));
        }
        store = shared
            .fence_done
            .wait_timeout(store, FENCE_RECHECK)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}
