//! The node daemon behind `nf serve`: the node tree served on a unix socket and, when
//! asked, on tcp.
//!
//! Start-up steps:
//!
//! 1. Check the listening plan: tcp on an address that is not loopback is remote, and
//!    is refused unless authentication is configured ([`ServeError::RemoteWithoutAuth`]).
//!    With TLS configured every tcp listener speaks TLS and requires client
//!    certificates ([`nf_link::tls`]), loopback included.
//! 2. Build the node tree ([`crate::tree::build`]).
//! 3. Create the unix socket's directory (mode 0700) if it is missing, then listen on
//!    the socket, the shm socket (shared-memory channels, [`nf_link::shm`]) and every tcp
//!    address.
//! 4. With a gateway to join, start registering with it ([`crate::join`]); its
//!    requirements (a `tls:` gateway, a node certificate) are checked before step 2.
//!
//! Shutdown ([`Daemon::shutdown`]): stop registering with the gateway, stop accepting
//! (the unix socket file is removed),
//! end every `/xcpu` session (its jobs are killed), end the log stream so followers
//! see end of file, close every connection and wait
//! for them to release their fids.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use nf_ninep_server::{Server, ServerConfig, ServerError};
use nf_ninep_trees::synthetic::Stream;
use nf_ninep_trees::MountTable;

use crate::join::{JoinConfig, JoinError, JoinPlan, Joiner};
use crate::listen::{Listeners, ShmListener};
use crate::tree::{build, NodeConfig, TreeBuildError};
use crate::xcpu::Xcpu;
use nf_link::shm::DEFAULT_CAPACITY as SHM_CAPACITY;
use nf_link::tls::{TlsError, TlsFiles};

/// What `nf serve` serves, and where.
#[derive(Clone, Debug, Default)]
pub struct ServeConfig {
    /// The unix socket to listen on; `None`: none.
    pub unix: Option<PathBuf>,
    /// The unix socket where clients set up shared-memory channels; `None`: none.
    pub shm: Option<PathBuf>,
    /// Tcp addresses to listen on.
    pub tcp: Vec<SocketAddr>,
    /// TLS for the tcp listeners (required for addresses that are not loopback).
    pub tls: Option<TlsFiles>,
    /// The tree.
    pub node: NodeConfig,
    /// Limits: msize, fids, requests in flight, clients.
    pub limits: ServerConfig,
    /// The gateway to register with, if any (needs `tls`).
    pub join: Option<JoinConfig>,
    /// Use the unix sockets a service manager passed (systemd socket activation,
    /// [`nf_sys::activation`]) for `unix` and `shm` where it passed them.
    pub socket_activation: bool,
}

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Tcp on a non-loopback address without authentication.
    #[error("refusing to listen on {addr} without authentication: it is reachable from other hosts; configure TLS client certificates (--tls-cert, --tls-key, --tls-client-ca) or listen on loopback (127.0.0.1)")]
    RemoteWithoutAuth {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// Nothing to listen on.
    #[error("nothing to listen on: give --unix PATH or --tcp ADDR:PORT")]
    NoListener,
    /// The sockets a service manager passed could not be taken.
    #[error("socket activation: {0}")]
    Activation(#[from] nf_sys::activation::ActivationError),
    /// A service manager passed sockets the options do not name.
    #[error("socket activation: the service manager passed {0}, which neither --unix nor --shm names (make ListenStream= in the .socket unit and the options agree; tcp is given with --tcp, not passed)")]
    UnusedSockets(String),
    /// The tree could not be built.
    #[error(transparent)]
    Tree(#[from] TreeBuildError),
    /// The unix socket's directory could not be made.
    #[error("creating the socket directory {}: {source} (choose another place with --unix PATH)", dir.display())]
    SocketDir {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A listener could not start.
    #[error(transparent)]
    Listen(#[from] ServerError),
    /// TLS could not be set up.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// Registering with the gateway cannot be set up.
    #[error(transparent)]
    Join(#[from] JoinError),
    /// The shm socket could not be bound.
    #[error("listening for shared-memory channels on {}: {source}", path.display())]
    BindShm {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A TLS listener could not bind.
    #[error("listening on {addr} (TLS): {source}")]
    BindTls {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A running node server.
pub struct Daemon {
    server: Server<MountTable>,
    listeners: Listeners,
    shm_listener: Option<ShmListener>,
    log: Stream,
    xcpu: Xcpu,
    joiner: Option<Joiner>,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("listeners", &self.listeners)
            .finish()
    }
}

impl Daemon {
    /// Starts serving (the steps in the module docs).
    pub fn start(config: &ServeConfig) -> Result<Daemon, ServeError> {
        if config.unix.is_none() && config.tcp.is_empty() && config.shm.is_none() {
            return Err(ServeError::NoListener);
        }
        crate::listen::check_plan(&config.tcp, config.tls.as_ref())?;
        let join = config
            .join
            .as_ref()
            .map(|j| JoinPlan::new(j, config.tls.as_ref(), !config.tcp.is_empty()))
            .transpose()?;
        let mut node = config.node.clone();
        if node.xcpu.forward_tls.is_none() {
            // Tree spawn hands sessions on as this node, with its own certificate.
            node.xcpu.forward_tls.clone_from(&config.tls);
        }
        let tree = build(&node)?;
        let server = Server::with_config(tree.table, config.limits.clone());
        let mut passed = if config.socket_activation {
            nf_sys::activation::take()?
        } else {
            Vec::new()
        };
        let listeners = Listeners::start_with(
            &server,
            config.unix.as_deref(),
            &config.tcp,
            config.tls.as_ref(),
            &mut passed,
        )?;
        let shm_listener = match &config.shm {
            Some(path) => {
                let bind_error = |source| ServeError::BindShm {
                    path: path.clone(),
                    source,
                };
                Some(
                    match nf_sys::activation::take_unix(&mut passed, path) {
                        Some(l) => ShmListener::serve(server.clone(), l, path, SHM_CAPACITY),
                        None => ShmListener::start(server.clone(), path, SHM_CAPACITY),
                    }
                    .map_err(bind_error)?,
                )
            }
            None => None,
        };
        if !passed.is_empty() {
            return Err(ServeError::UnusedSockets(
                passed
                    .iter()
                    .map(|p| format!("{p}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ));
        }
        let tls_port = listeners.tls_port();
        let joiner = join.map(|plan| plan.start(tls_port)).transpose()?;
        Ok(Daemon {
            server,
            listeners,
            shm_listener,
            log: tree.log,
            xcpu: tree.xcpu,
            joiner,
        })
    }

    /// Where it listens, as the `nf` commands take addresses: `unix:PATH`, `tcp:IP:PORT`,
    /// `tls:IP:PORT` or `shm:PATH` (the real port
    /// when 0 was asked for).
    pub fn addrs(&self) -> Vec<String> {
        let shm = self
            .shm_listener
            .iter()
            .map(|l| format!("shm:{}", l.path().display()));
        self.listeners.addrs().chain(shm).collect()
    }

    /// The tcp address of the first tcp or TLS listener.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        self.listeners.tcp_addr()
    }

    /// The server, for counters and extra transports.
    pub fn server(&self) -> &Server<MountTable> {
        &self.server
    }

    /// `/log`: what is pushed here reaches its readers.
    pub fn log(&self) -> &Stream {
        &self.log
    }

    /// `/xcpu`'s sessions.
    pub fn xcpu(&self) -> &Xcpu {
        &self.xcpu
    }

    /// Stops (the steps in the module docs); true if every connection let go of its
    /// fids within `timeout`.
    pub fn shutdown(self, timeout: Duration) -> bool {
        if let Some(j) = self.joiner {
            j.stop();
        }
        self.listeners.stop();
        if let Some(l) = self.shm_listener {
            l.stop();
        }
        self.xcpu.shutdown();
        self.log.close();
        self.server.shutdown(timeout)
    }
}
