//! 9P over shared memory: a client inside a rank talks to its node's server through a
//! [`ByteChannel`] (as CellFS carried 9P over the Cell's on-chip bus, not a socket), set
//! up over a unix socket of its own.
//!
//! Steps for each connection:
//!
//! 1. The client connects to the server's shm socket (`nf serve` puts it beside its unix
//!    socket, as `PATH.shm`).
//! 2. The server offers a channel over it (memfd and eventfds sent with `SCM_RIGHTS`;
//!    see [`nf_transport::shm::channel`]); the client joins it.
//! 3. 9P flows through the shared-memory rings; the socket stays open only to tell each
//!    side when the other closes or dies. The server side keeps the set-up socket's
//!    `SO_PEERCRED` (the client process's pid and uid) as the channel's peer, for the
//!    attach check ([`crate::access`]).

use std::io;
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use nf_ninep::transport::{unix_peer, Transport};
use nf_ninep_client::{Client, ClientConfig, ClientError};
use nf_ninep_server::{Filesystem, Server};
use nf_sys::accept::{thread_per_connection, Acceptor};
use nf_transport::shm::channel::ByteChannel;

pub use nf_transport::shm::channel::DEFAULT_CAPACITY;

/// A [`ByteChannel`] carrying 9P.
#[derive(Debug)]
pub struct ShmTransport {
    channel: ByteChannel,
    /// The pid and uid of the process that set the channel up (server side).
    peer: Option<(u32, u32)>,
}

impl ShmTransport {
    /// A channel whose peer is unknown (the client side).
    pub fn new(channel: ByteChannel) -> Self {
        ShmTransport {
            channel,
            peer: None,
        }
    }
}

impl Transport for ShmTransport {
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.channel.recv(buf)
    }

    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        self.channel.send(bytes)
    }

    fn close(&self) {
        self.channel.close();
    }

    fn peer(&self) -> String {
        match self.peer {
            Some((pid, uid)) => format!("shm pid {pid} uid {uid}"),
            None => String::from("shm"),
        }
    }

    fn peer_uid(&self) -> Option<u32> {
        self.peer.map(|(_, uid)| uid)
    }
}

/// Connects to the shm socket at `path` and negotiates 9P over the channel (steps 1–2).
pub fn connect(path: &Path, config: ClientConfig) -> Result<Client, ClientError> {
    let connect_err = |error| ClientError::Connect {
        addr: format!("shm:{}", path.display()),
        error,
    };
    let sock = UnixStream::connect(path).map_err(connect_err)?;
    // A plain 9P socket never offers a channel: wait for the offer no longer than for
    // a version reply.
    sock.set_read_timeout(Some(config.connect_timeout))
        .map_err(connect_err)?;
    let channel = ByteChannel::join(sock.try_clone().map_err(connect_err)?).map_err(|e| {
        if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            ClientError::TimedOut {
                what: "shared-memory channel offer",
                after: config.connect_timeout,
            }
        } else {
            connect_err(e)
        }
    })?;
    sock.set_read_timeout(None).map_err(connect_err)?;
    Client::with_transport(ShmTransport::new(channel), config)
}

/// Accepts shm set-ups on a unix socket and serves each channel (steps in the module
/// docs). Dropping it (or [`ShmListener::stop`]) stops accepting and removes the socket.
#[derive(Debug)]
pub struct ShmListener {
    path: PathBuf,
    acceptor: Option<Acceptor>,
    /// The socket file is ours to remove (not a service manager's).
    owns_file: bool,
}

impl ShmListener {
    /// Listens at `path` (a stale socket file is replaced) and serves `server` over
    /// channels of `capacity` bytes per direction.
    pub fn start<F: Filesystem>(
        server: Server<F>,
        path: &Path,
        capacity: usize,
    ) -> io::Result<ShmListener> {
        // Its directory and mode as the unix socket's (`listen.rs` rules 1–3).
        crate::listen::socket_dir(path)
            .map_err(|(dir, e)| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        let stale = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
        if stale && UnixStream::connect(path).is_err() {
            std::fs::remove_file(path)?;
        }
        let socket = UnixListener::bind(path)?;
        crate::listen::open_to_every_user(path)?;
        let mut l = Self::serve(server, socket, path, capacity)?;
        l.owns_file = true;
        Ok(l)
    }

    /// Serves `server` on `socket`, bound at `path` by a service manager (socket
    /// activation); the socket file is the manager's and stays when this stops.
    pub fn serve<F: Filesystem>(
        server: Server<F>,
        socket: UnixListener,
        path: &Path,
        capacity: usize,
    ) -> io::Result<ShmListener> {
        let serve = move |sock: UnixStream| {
            let peer = unix_peer(&sock);
            match ByteChannel::offer(sock, capacity) {
                Ok(channel) => {
                    if let Err(e) = server.serve(ShmTransport { channel, peer }) {
                        tracing::warn!(error = %e, "shm connection refused");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "cannot set up a shared-memory channel"),
            }
        };
        let acceptor = Acceptor::start(
            "9p-shm-accept",
            socket,
            thread_per_connection("9p-shm-conn", serve),
        )?;
        tracing::info!(path = %path.display(), "9P server listening (shared-memory channels)");
        Ok(ShmListener {
            path: path.to_path_buf(),
            acceptor: Some(acceptor),
            owns_file: false,
        })
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Stops accepting, waits for the accept thread, removes the socket file.
    pub fn stop(self) {}
}

impl Drop for ShmListener {
    fn drop(&mut self) {
        if let Some(a) = self.acceptor.take() {
            a.stop();
            if self.owns_file {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}
