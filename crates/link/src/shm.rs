//! 9P over shared memory: a client inside a rank talks to its node's server through a
//! [`ByteChannel`] (as CellFS carried 9P over the Cell's on-chip bus, not a socket), set
//! up over a unix socket of its own. The server's accept loop is the node's
//! (`nf_node::listen::ShmListener`): it serves a `Server`, which sits above this crate.
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
//!    attach check ([`Transport::peer_uid`]).

use std::io;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use nf_transport::shm::channel::ByteChannel;

use crate::transport::{unix_peer, Transport};

// Re-exported so that a server sizes its channels without linking nf-transport itself.
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

    /// One publication and wake-up for a frame's head and data together.
    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        self.channel.send_parts(parts)
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

/// Connects to the shm socket at `path` and joins the channel the server offers over it
/// (steps 1–2), waiting at most `limit` for the offer: a plain 9P socket never offers
/// one. The offer not coming in time is an error of kind `WouldBlock` or `TimedOut`.
pub fn join(path: &Path, limit: Duration) -> io::Result<ShmTransport> {
    let sock = UnixStream::connect(path)?;
    sock.set_read_timeout(Some(limit))?;
    let channel = ByteChannel::join(sock.try_clone()?)?;
    sock.set_read_timeout(None)?;
    Ok(ShmTransport::new(channel))
}

/// Offers a channel of `capacity` bytes per direction on the accepted set-up socket
/// `sock` (step 2, the server side); the socket's `SO_PEERCRED` becomes the peer.
pub fn offer(sock: UnixStream, capacity: usize) -> io::Result<ShmTransport> {
    let peer = unix_peer(&sock);
    let channel = ByteChannel::offer(sock, capacity)?;
    Ok(ShmTransport { channel, peer })
}
