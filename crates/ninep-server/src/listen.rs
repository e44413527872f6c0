//! Accept loops for TCP and unix sockets, and the [`Listener`] handle that stops them.
//!
//! Each listener has one accept thread ([`Acceptor`]). An accepted connection is
//! admitted (by the rules of `slots`) and served on its own reader thread; a refused
//! one is answered on a short-lived thread that waits at most `refuse_timeout` for the
//! client's first frame (at most 64 such threads at once; more are closed unanswered). Stopping shuts the listening socket down (never a connection
//! to itself, which is unsafe across network namespaces); a unix socket file is then
//! removed.

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nf_sys::accept::{Acceptor, Listening};

use crate::error::ServerError;
use crate::handler::Filesystem;
use crate::srv::Server;

/// Where a listener listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAddr {
    /// A TCP address (with the real port when 0 was asked for).
    Tcp(SocketAddr),
    /// A unix socket path.
    Unix(PathBuf),
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "tcp:{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// A running accept loop. Dropping it (or [`Listener::stop`]) stops accepting; the
/// connections already accepted go on until they close or the server shuts down.
pub struct Listener {
    addr: ListenAddr,
    acceptor: Option<Acceptor>,
    /// The unix socket file is ours to remove when we stop (not one a service
    /// manager made and passed to us).
    owns_file: bool,
}

impl Listener {
    /// The address being listened on.
    pub fn addr(&self) -> &ListenAddr {
        &self.addr
    }

    /// The TCP address, for a TCP listener.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        match self.addr {
            ListenAddr::Tcp(addr) => Some(addr),
            ListenAddr::Unix(_) => None,
        }
    }

    /// Stops accepting and waits for the accept thread.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        acceptor.stop();
        match &self.addr {
            ListenAddr::Unix(path) if self.owns_file => {
                let _ = std::fs::remove_file(path);
            }
            _ => {}
        }
    }
}

impl fmt::Debug for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listener")
            .field("addr", &self.addr)
            .field("running", &self.acceptor.is_some())
            .finish()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// A stream the accept loop can serve: a transport whose read timeout can be set.
trait Accepted: nf_link::Transport + Sized {
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()>;
    /// Socket options set before serving.
    fn prepare(&self) {}
}

impl Accepted for TcpStream {
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(timeout)
    }

    fn prepare(&self) {
        let _ = self.set_nodelay(true);
    }
}

impl Accepted for UnixStream {
    fn set_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(timeout)
    }
}

/// Admits `stream` and serves it, or refuses it on a short-lived thread.
fn serve_accepted<F: Filesystem, S: Accepted>(server: &Server<F>, stream: S) {
    match server.admit(stream) {
        Ok(conn) => {
            if let Err(e) = server.spawn_conn(conn) {
                tracing::error!(error = %e, "cannot serve an accepted 9P connection");
            }
        }
        Err(stream) => {
            let _ = stream.set_timeout(Some(server.config().refuse_timeout));
            if let Err(e) = server.refuse_later(stream) {
                tracing::error!(error = %e, "cannot answer a refused 9P connection; closed it");
            }
        }
    }
}

/// Starts the accept thread of a listener on `socket`, reachable at `addr`.
fn start<F: Filesystem, L: Listening>(
    server: Server<F>,
    addr: ListenAddr,
    socket: L,
) -> Result<Listener, ServerError>
where
    L::Stream: Accepted,
{
    let acceptor = Acceptor::start("9p-accept", socket, move |stream: L::Stream| {
        stream.prepare();
        serve_accepted(&server, stream);
    })
    .map_err(|source| ServerError::Spawn {
        what: "accept",
        source,
    })?;
    tracing::info!(%addr, "9P server listening");
    Ok(Listener {
        addr,
        acceptor: Some(acceptor),
        owns_file: true,
    })
}

/// Starts accepting on a unix socket bound at `path` by someone else (a service
/// manager's socket activation); the socket file stays when the listener stops.
pub(crate) fn unix_passed<F: Filesystem>(
    server: Server<F>,
    listener: UnixListener,
    path: &Path,
) -> Result<Listener, ServerError> {
    let mut l = start(server, ListenAddr::Unix(path.to_path_buf()), listener)?;
    l.owns_file = false;
    Ok(l)
}

/// Binds `addr` and starts accepting TCP connections.
pub(crate) fn tcp<F: Filesystem>(
    server: Server<F>,
    addr: impl ToSocketAddrs,
) -> Result<Listener, ServerError> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|source| ServerError::BindTcp {
            addr: String::from("<unresolvable>"),
            source,
        })?
        .collect();
    let bind_error = |source| ServerError::BindTcp {
        addr: addrs
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        source,
    };
    let listener = TcpListener::bind(&addrs[..]).map_err(bind_error)?;
    let local = listener.local_addr().map_err(bind_error)?;
    start(server, ListenAddr::Tcp(local), listener)
}

/// Binds a unix socket at `path` and starts accepting connections.
pub(crate) fn unix<F: Filesystem>(server: Server<F>, path: &Path) -> Result<Listener, ServerError> {
    let bind_error = |source| ServerError::BindUnix {
        path: path.to_path_buf(),
        source,
    };
    let listener = match UnixListener::bind(path) {
        Ok(l) => l,
        Err(e) if e.kind() == io::ErrorKind::AddrInUse => {
            if UnixStream::connect(path).is_ok() {
                return Err(ServerError::SocketInUse {
                    path: path.to_path_buf(),
                });
            }
            // Nobody answers: a stale socket file from a dead server. Anything that is
            // not a socket is left alone.
            let is_socket =
                std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
            if !is_socket {
                return Err(bind_error(e));
            }
            std::fs::remove_file(path).map_err(bind_error)?;
            UnixListener::bind(path).map_err(bind_error)?
        }
        Err(e) => return Err(bind_error(e)),
    };
    start(server, ListenAddr::Unix(path.to_path_buf()), listener)
}
