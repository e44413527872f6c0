//! The server's two error types: [`FsError`], what a tree answers instead of a reply,
//! and [`ServerError`], why the server itself could not listen or serve.
//!
//! Errors inside a session never reach [`ServerError`]: they become `Rlerror` replies,
//! or close the connection with a logged reason.

use std::io;
use std::path::PathBuf;

use nf_ninep::errno::{EINTR, EIO};
use nf_ninep::Rlerror;

use crate::cancel::Cancelled;

/// Result of a tree method: the reply, or why there is none.
///
/// `?` works on I/O calls and on anything that gives an [`Rlerror`].
pub type FsResult<T> = Result<T, FsError>;

/// Why a tree method gave no reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// Answer the request with `Rlerror` carrying this Linux errno.
    #[error("errno {0}")]
    Errno(u32),
    /// The method would have to wait, but [`Ctx::may_block`](crate::Ctx::may_block) is
    /// false: the server runs the request again on a worker thread, where it may wait.
    /// Never sent to a client.
    #[error("the request would wait on the connection's reader thread")]
    WouldBlock,
}

impl FsError {
    /// The errno, or `None` for [`FsError::WouldBlock`].
    pub fn errno(self) -> Option<u32> {
        match self {
            FsError::Errno(code) => Some(code),
            FsError::WouldBlock => None,
        }
    }

    /// The reply for the client. The server has resolved every `WouldBlock` before it
    /// replies (run again on a worker, or `EIO` from a tree that said it where it may
    /// wait), so here it can only be a tree bug; it too becomes `EIO`.
    pub(crate) fn to_wire(self) -> Rlerror {
        Rlerror::new(self.errno().unwrap_or(EIO))
    }
}

impl From<Rlerror> for FsError {
    fn from(e: Rlerror) -> Self {
        FsError::Errno(e.ecode)
    }
}

impl From<io::Error> for FsError {
    fn from(e: io::Error) -> Self {
        Rlerror::from(e).into()
    }
}

impl From<Cancelled> for FsError {
    fn from(_: Cancelled) -> Self {
        FsError::Errno(EINTR)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep::errno::ENOENT;

    #[test]
    fn io_errors_become_their_errno_and_would_block_never_reaches_the_wire() {
        let e: FsError = io::Error::from_raw_os_error(ENOENT as i32).into();
        assert_eq!(e, FsError::Errno(ENOENT));
        assert_eq!(e.to_wire().ecode, ENOENT);
        assert_eq!(FsError::from(Cancelled), FsError::Errno(EINTR));
        assert_eq!(FsError::WouldBlock.errno(), None);
        assert_eq!(FsError::WouldBlock.to_wire().ecode, EIO);
    }
}
