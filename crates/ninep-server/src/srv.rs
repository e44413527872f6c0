//! [`Server`]: a tree, its limits, its worker pool and its live connections.

use std::collections::HashMap;
use std::net::ToSocketAddrs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::budget::{Account, Budget, DESCRIPTORS, MEMORY};
use crate::cancel::lock;
use crate::config::ServerConfig;
use crate::conn::{Conn, Identity};
use crate::error::ServerError;
use crate::handler::Filesystem;
use crate::listen::{self, Listener};
use crate::nofile::{self, FdLimits};
use crate::pool::{Pool, Shares};
use crate::slots::{plan, Limits, Owner, Slot};
use crate::tally::Tallies;
use crate::watch::{self, Clock};
use nf_link::Transport;
use nf_ninep::errno::EAGAIN;
use nf_ninep::frame::{encode_frame, FrameDecoder};
use nf_ninep::message::{Rlerror, Rmessage};

/// What a server holds, shared by its handles, listeners and connections.
pub(crate) struct Shared<F: Filesystem> {
    pub fs: Arc<F>,
    pub config: ServerConfig,
    pub pool: Pool,
    conns: Mutex<HashMap<u64, Arc<Conn<F>>>>,
    next_id: AtomicU64,
    /// What clients can make the server log at will, counted (`tally`).
    pub tallies: Tallies,
    /// The server's memory budget, charged by every connection.
    pub memory: Arc<Budget>,
    /// The descriptor budgets (`nofile`), and the server's, charged by every
    /// connection.
    fd_limits: FdLimits,
    fds: Arc<Budget>,
    /// The coarse clock connections stamp their last frame with.
    pub clock: Clock,
    /// Threads answering refused connections now (at most [`MAX_REFUSING`]).
    refusing: Arc<AtomicUsize>,
    /// Set when a connection ends: the watcher then gives memory back (`trim`).
    pub ended: AtomicBool,
}

/// Most refused connections answered at once; more are closed without an answer, so
/// that a client connecting in a loop cannot make the server start threads at will.
const MAX_REFUSING: usize = 64;

/// Counters describing a server at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections being served.
    pub clients: usize,
    /// Fids held, over all connections.
    pub fids: usize,
    /// Requests in flight, over all connections.
    pub in_flight: usize,
    /// Worker threads alive.
    pub workers: usize,
    /// Connections refused so far for the slot limits (`max_clients`,
    /// `max_clients_per_user`, the reserve).
    pub refused_clients: u64,
    /// Idle connections closed so far to make room for new ones.
    pub evicted_clients: u64,
    /// Requests refused so far with `ENOMEM` for a memory budget.
    pub refused_requests: u64,
    /// Bytes charged to the server's memory budget now (buffers, requests in flight,
    /// what trees hold for their fids).
    pub memory: usize,
    /// Descriptors trees keep open for fids now (the server's descriptor budget).
    pub fds: usize,
    /// Opens refused so far with `EMFILE` for a descriptor budget.
    pub refused_fds: u64,
    /// Requests waiting for a worker now (each in its user's queue).
    pub waiting: usize,
}

/// A 9P2000.L server for one tree. Cheap to clone: clones share everything.
///
/// ```no_run
/// use nf_ninep_server::Server;
/// use nf_ninep_trees::PassthroughFs;
///
/// let server = Server::new(PassthroughFs::new("/srv/export")?);
/// let listener = server.listen_tcp("127.0.0.1:5640")?;
/// println!("serving on {}", listener.addr());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Server<F: Filesystem> {
    shared: Arc<Shared<F>>,
}

impl<F: Filesystem> Clone for Server<F> {
    fn clone(&self) -> Self {
        Server {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<F: Filesystem> std::fmt::Debug for Server<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("config", &self.shared.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<F: Filesystem> Server<F> {
    /// A server for `fs` with the default limits.
    pub fn new(fs: F) -> Self {
        Server::with_config(fs, ServerConfig::default())
    }

    /// A server for `fs` with `config`.
    ///
    /// The first server of a process raises the process's soft descriptor limit to
    /// its hard limit (`RLIMIT_NOFILE`; see [`ServerConfig::max_user_fds`]).
    pub fn with_config(fs: F, config: ServerConfig) -> Self {
        let pool = Pool::new(Shares::from(&config), config.worker_idle);
        let fd_limits = FdLimits::new(&config, nofile::raised());
        let shared = Arc::new(Shared {
            fs: Arc::new(fs),
            memory: Budget::server(&MEMORY, config.max_server_memory()),
            fds: Budget::server(&DESCRIPTORS, fd_limits.server),
            fd_limits,
            config,
            pool,
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            tallies: Tallies::default(),
            clock: Clock::new(),
            refusing: Arc::new(AtomicUsize::new(0)),
            ended: AtomicBool::new(false),
        });
        watch::start(Arc::downgrade(&shared));
        Server { shared }
    }

    /// The tree being served.
    pub fn fs(&self) -> &Arc<F> {
        &self.shared.fs
    }

    /// The limits in force.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// Listens on a TCP address (use `127.0.0.1:PORT` unless remote access is wanted;
    /// port 0 picks a free one) and serves every connection on its own thread.
    pub fn listen_tcp(&self, addr: impl ToSocketAddrs) -> Result<Listener, ServerError> {
        listen::tcp(self.clone(), addr)
    }

    /// Listens on `127.0.0.1:port` only (port 0 picks a free one): the default for a
    /// node's server, reachable from this host alone.
    pub fn listen_tcp_loopback(&self, port: u16) -> Result<Listener, ServerError> {
        self.listen_tcp((std::net::Ipv4Addr::LOCALHOST, port))
    }

    /// Listens on a unix socket at `path` (a stale socket file is replaced) and serves
    /// every connection on its own thread.
    pub fn listen_unix(&self, path: impl AsRef<Path>) -> Result<Listener, ServerError> {
        listen::unix(self.clone(), path.as_ref())
    }

    /// Serves connections accepted on `listener`, a unix socket bound at `path` by a
    /// service manager (socket activation): the socket file is left in place when the
    /// listener stops, since it is the manager's.
    pub fn listen_unix_passed(
        &self,
        listener: std::os::unix::net::UnixListener,
        path: impl AsRef<Path>,
    ) -> Result<Listener, ServerError> {
        listen::unix_passed(self.clone(), listener, path.as_ref())
    }

    /// Serves one connection on this thread until it closes.
    ///
    /// Fails with [`ServerError::TooManyClients`] (after answering the client's first
    /// request with `EAGAIN`) when `max_clients` connections are being served.
    pub fn serve<T: Transport>(&self, transport: T) -> Result<(), ServerError> {
        match self.admit(transport) {
            Ok(conn) => {
                self.run(&conn);
                Ok(())
            }
            Err(transport) => {
                refuse(&transport, self.shared.config.max_msize);
                Err(self.too_many())
            }
        }
    }

    /// Serves one connection on a new thread.
    pub fn spawn<T: Transport>(&self, transport: T) -> Result<(), ServerError> {
        match self.admit(transport) {
            Ok(conn) => self.spawn_conn(conn),
            Err(transport) => {
                self.refuse_later(transport)?;
                Err(self.too_many())
            }
        }
    }

    /// Counters: clients, fids, requests in flight, workers.
    pub fn stats(&self) -> ServerStats {
        let conns: Vec<_> = lock(&self.shared.conns).values().cloned().collect();
        let mut stats = ServerStats {
            clients: conns.len(),
            workers: self.shared.pool.threads(),
            refused_clients: self.shared.tallies.refused.total(),
            evicted_clients: self.shared.tallies.evicted.total(),
            refused_requests: self.shared.tallies.memory.total(),
            memory: self.shared.memory.used(),
            fds: self.shared.fds.used(),
            refused_fds: self.shared.tallies.fds.total(),
            waiting: self.shared.pool.waiting(),
            ..ServerStats::default()
        };
        for conn in conns {
            let (fids, in_flight) = conn.counts();
            stats.fids += fids;
            stats.in_flight += in_flight;
        }
        stats
    }

    /// Closes every connection (listeners keep accepting until stopped) and waits up to
    /// `timeout` for them to release their fids; true if they all did.
    pub fn shutdown(&self, timeout: Duration) -> bool {
        let conns: Vec<_> = lock(&self.shared.conns).values().cloned().collect();
        for conn in conns {
            conn.close();
        }
        let deadline = Instant::now() + timeout;
        while !lock(&self.shared.conns).is_empty() {
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Registers a connection, making room by the rules of `slots`, or gives the
    /// transport back when there is none.
    pub(crate) fn admit<T: Transport>(&self, transport: T) -> Result<Arc<Conn<F>>, T> {
        let who = Identity::of(&transport);
        let owner = Owner::of(&who);
        let shared = &self.shared;
        let limits = Limits::from(&shared.config);
        let now = shared.clock.now();
        let mut conns = lock(&shared.conns);
        let view: Vec<Slot> = conns.values().map(|c| c.slot(now)).collect();
        let victims = match plan(&view, &owner, &limits) {
            Ok(victims) => victims,
            Err(refusal) => {
                drop(conns);
                shared.tallies.refused.hit(|| {
                    format!(
                        "refusing 9P connection from {:?} ({owner}) with EAGAIN: {} ({})",
                        transport.peer(),
                        refusal.why,
                        refusal.limit
                    )
                });
                return Err(transport);
            }
        };
        for id in victims {
            if let Some(v) = conns.remove(&id) {
                shared.tallies.evicted.hit(|| {
                    format!(
                        "closing idle 9P connection {} of {} ({:?}) to make room for one of {owner}",
                        v.id(),
                        v.owner(),
                        v.peer()
                    )
                });
                v.close();
            }
        }
        // The user's budgets, shared with the user's other connections.
        let (user_memory, user_fds) = match conns.values().find(|c| *c.owner() == owner) {
            Some(c) => (Arc::clone(c.account().user()), Arc::clone(c.fds().user())),
            None => (
                Budget::user(&MEMORY, shared.config.max_user_memory),
                Budget::user(&DESCRIPTORS, shared.fd_limits.user),
            ),
        };
        let account = Account::new(
            &MEMORY,
            shared.config.max_conn_memory,
            user_memory,
            Arc::clone(&shared.memory),
            Arc::clone(&shared.tallies.memory),
        );
        let fds = Account::new(
            &DESCRIPTORS,
            shared.fd_limits.conn,
            user_fds,
            Arc::clone(&shared.fds),
            Arc::clone(&shared.tallies.fds),
        );
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let conn = Conn::new(
            id,
            Arc::clone(shared),
            Arc::new(transport),
            who,
            owner,
            account,
            fds,
        );
        conns.insert(id, Arc::clone(&conn));
        Ok(conn)
    }

    /// Answers a refused connection on a short-lived thread (`EAGAIN` to its first
    /// frame; the caller bounds the wait with the stream's read timeout), or closes it
    /// at once when [`MAX_REFUSING`] are being answered already.
    pub(crate) fn refuse_later<T: Transport>(&self, transport: T) -> Result<(), ServerError> {
        let refusing = Arc::clone(&self.shared.refusing);
        if refusing.fetch_add(1, Ordering::AcqRel) >= MAX_REFUSING {
            refusing.fetch_sub(1, Ordering::AcqRel);
            transport.close();
            return Ok(());
        }
        let msize = self.shared.config.max_msize;
        let spawned = thread::Builder::new()
            .name("9p-refuse".into())
            .spawn(move || {
                refuse(&transport, msize);
                refusing.fetch_sub(1, Ordering::AcqRel);
            });
        spawned.map(|_| ()).map_err(|source| {
            self.shared.refusing.fetch_sub(1, Ordering::AcqRel);
            ServerError::Spawn {
                what: "refusal",
                source,
            }
        })
    }

    /// Every connection being served now.
    pub(crate) fn conns(shared: &Shared<F>) -> Vec<Arc<Conn<F>>> {
        lock(&shared.conns).values().cloned().collect()
    }

    /// Runs an admitted connection on a new thread.
    pub(crate) fn spawn_conn(&self, conn: Arc<Conn<F>>) -> Result<(), ServerError> {
        let server = self.clone();
        let runner = Arc::clone(&conn);
        thread::Builder::new()
            .name(format!("9p-conn-{}", conn.id()))
            .spawn(move || server.run(&runner))
            .map(|_| ())
            .map_err(|source| {
                lock(&self.shared.conns).remove(&conn.id());
                conn.close();
                ServerError::Spawn {
                    what: "connection",
                    source,
                }
            })
    }

    fn run(&self, conn: &Arc<Conn<F>>) {
        conn.run();
        lock(&self.shared.conns).remove(&conn.id());
        self.shared.ended.store(true, Ordering::Relaxed);
    }

    fn too_many(&self) -> ServerError {
        ServerError::TooManyClients {
            clients: lock(&self.shared.conns).len(),
            limit: self.shared.config.max_clients,
        }
    }
}

/// Answers a refused connection's first request (normally its `Tversion`) with
/// `Rlerror(EAGAIN)`, so the client can say why, then closes it.
pub(crate) fn refuse(transport: &dyn Transport, max_msize: u32) {
    const LIMIT: usize = 8192;
    let decoder = FrameDecoder::new(max_msize);
    let mut buf = vec![0u8; LIMIT];
    let mut filled = 0;
    loop {
        match decoder.split(&buf[..filled]) {
            Ok(Some(raw)) => {
                let mut out = Vec::new();
                let reply = Rmessage::from(Rlerror::new(EAGAIN));
                if encode_frame(raw.tag, &reply, max_msize, &mut out).is_ok() {
                    let _ = transport.send(&out);
                }
                break;
            }
            Ok(None) if filled < LIMIT => match transport.recv(&mut buf[filled..]) {
                Ok(0) | Err(_) => break,
                Ok(n) => filled += n,
            },
            _ => break,
        }
    }
    transport.close();
}
