//! Errors of the server's own operations: binding, accepting, serving a connection.
//!
//! Errors inside a session never appear here: they become `Rlerror` replies, or close
//! the connection with a logged reason.

use std::io;
use std::path::PathBuf;

/// Why the server could not listen or serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServerError {
    /// Binding a TCP listener failed.
    #[error("binding 9P listener on tcp {addr}: {source} (is the port in use, or the address not local?)")]
    BindTcp {
        /// The address asked for.
        addr: String,
        /// The OS error.
        source: io::Error,
    },
    /// Binding a unix-socket listener failed.
    #[error("binding 9P listener on unix socket {}: {source} (does the directory exist and is it writable?)", path.display())]
    BindUnix {
        /// The socket path.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A live server already listens on the unix socket.
    #[error("unix socket {} is in use by a live server; stop it or pick another path", path.display())]
    SocketInUse {
        /// The socket path.
        path: PathBuf,
    },
    /// Spawning a server thread failed.
    #[error("spawning the 9P {what} thread: {source} (out of threads or memory?)")]
    Spawn {
        /// Which thread (`"accept"`, `"connection"`).
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The connection was refused because `max_clients` connections are being served.
    #[error("refused a 9P connection: {clients} clients connected (max_clients = {limit}); raise ServerConfig::max_clients or wait")]
    TooManyClients {
        /// Connections being served.
        clients: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Reading from or writing to the transport failed.
    #[error("9P transport error: {0}")]
    Transport(#[from] io::Error),
}
