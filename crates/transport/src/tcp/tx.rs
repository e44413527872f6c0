//! One peer's connection, sending side: vectored writes and a bounded outgoing queue.
//!
//! Sending a packet to a peer (the caller's thread, under the peer's lock):
//! 1. If bytes are queued from earlier packets, try to write them first.
//! 2. Queue still not empty → append the frame if the queue stays within the limit,
//!    else [`SendStatus::NoCredit`] (the caller polls and retries). Per-pair order holds
//!    because a frame is written directly only when nothing is queued before it.
//! 3. Queue empty → write header, metadata and payload with one `sendmsg`; what the
//!    socket did not take is copied into the queue.
//!
//! The progress thread drains the queue when the socket becomes writable, and the
//! owner at every poll while it holds the connection (`handoff.rs`, rule 4). So that
//! neither need take the lock when there is nothing to do, a flag (`backlog`) says
//! whether bytes are queued. Rules, which make sure queued bytes are never stranded:
//! 1. The flag changes only under the peer's lock; it is true whenever the lock is
//!    released with bytes queued.
//! 2. When bytes stay queued, the flag was set *before* the last write attempt. A
//!    write that leaves bytes behind makes the kernel report the next writable edge,
//!    and an edge reported after that write finds the flag set. (Set after it, the
//!    flag could miss an edge that came in between, and the bytes would wait for the
//!    next send, perhaps forever.)
//!
//! Both rules are model-checked (`loom_tests.rs`, over a stand-in socket: [`Wire`]).
//!
//! A write error marks the link lost and posts one [`TransportError::PeerLost`] to
//! the inbox; every later send to that peer fails with the same reason.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;

use socket2::SockRef;

use super::faults::{describe, lose};
use super::handoff::Rx;
use super::inbox::Inbox;
use super::sync::{lock, AtomicBool, Mutex, Ordering};
use super::wire::Header;
use crate::error::TransportError;
use crate::SendStatus;

/// The sending side of a connection: a [`TcpStream`], or the loom model's stand-in
/// socket (`loom_tests.rs`).
pub(crate) trait Wire {
    /// One vectored non-blocking write (MSG_NOSIGNAL: a closed peer is an error, not
    /// SIGPIPE): how many bytes the socket took.
    fn send(&self, parts: &[IoSlice<'_>]) -> io::Result<usize>;
    /// Shuts the connection down in `how` direction(s).
    fn shutdown(&self, how: Shutdown) -> io::Result<()>;
}

impl Wire for TcpStream {
    fn send(&self, parts: &[IoSlice<'_>]) -> io::Result<usize> {
        SockRef::from(self).send_vectored_with_flags(parts, libc::MSG_NOSIGNAL)
    }

    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        TcpStream::shutdown(self, how)
    }
}

/// The state of the link to one peer.
pub(crate) enum Link<S = TcpStream> {
    /// Not connected (not yet, or not reachable over tcp).
    Down,
    /// Connected.
    Up(Arc<S>),
    /// The peer said goodbye: it left the job.
    Left(String),
    /// The connection broke; why.
    Lost(String),
}

/// A peer's sending state, under its lock.
pub(crate) struct Tx<S = TcpStream> {
    pub(crate) link: Link<S>,
    pub(super) queue: VecDeque<u8>,
    /// The peer's address, for messages.
    pub(crate) remote: Option<SocketAddr>,
}

/// One peer as seen by both threads.
pub(crate) struct Peer<S = TcpStream> {
    pub(crate) rank: usize,
    pub(crate) tx: Mutex<Tx<S>>,
    /// Whether `tx.queue` holds bytes (read by the progress thread without the lock).
    pub(super) backlog: AtomicBool,
    /// The receiving side: who reads the connection (`handoff.rs`).
    pub(crate) rx: Rx,
}

impl<S: Wire> Peer<S> {
    /// A peer without a connection.
    pub(crate) fn new(rank: usize) -> Peer<S> {
        Peer {
            rank,
            tx: Mutex::new(Tx {
                link: Link::Down,
                queue: VecDeque::new(),
                remote: None,
            }),
            backlog: AtomicBool::new(false),
            rx: Rx::default(),
        }
    }

    /// Installs an established connection; false if the peer already had one.
    pub(crate) fn install(&self, stream: Arc<S>, remote: SocketAddr) -> bool {
        let mut tx = lock(&self.tx);
        if !matches!(tx.link, Link::Down) {
            return false;
        }
        tx.link = Link::Up(stream);
        tx.remote = Some(remote);
        true
    }

    /// Whether this peer ever got a connection (it may have gone since).
    pub(crate) fn was_connected(&self) -> bool {
        !matches!(lock(&self.tx).link, Link::Down)
    }

    /// Sends one packet as described in the module docs.
    pub(crate) fn try_send(
        &self,
        meta: &[u8],
        payload: &[u8],
        limit: usize,
        inbox: &Inbox,
    ) -> Result<SendStatus, TransportError> {
        let header = Header::data(meta.len(), payload.len()).encode();
        let parts = [&header[..], meta, payload];
        let mut guard = lock(&self.tx);
        let tx = &mut *guard;
        let sock = match &tx.link {
            Link::Up(s) => &**s,
            other => return Err(self.unusable(other)),
        };
        let outcome = (|| {
            if !tx.queue.is_empty() && !flush(sock, &mut tx.queue)? {
                let len: usize = parts.iter().map(|p| p.len()).sum();
                if tx.queue.len() + len > limit {
                    return Ok(SendStatus::NoCredit);
                }
                for p in parts {
                    tx.queue.extend(p);
                }
            } else {
                write_frame(sock, parts, &mut tx.queue)?;
            }
            if !tx.queue.is_empty() {
                // Rule 2 of the module docs: flag first, then the last write.
                self.backlog.store(true, Ordering::SeqCst);
                flush(sock, &mut tx.queue)?;
            }
            Ok(SendStatus::Sent)
        })();
        self.backlog.store(!tx.queue.is_empty(), Ordering::SeqCst);
        outcome.map_err(|e: io::Error| {
            let why = format!("sending to {}: {e}", describe(tx.remote));
            lose(self.rank, tx, why.clone(), inbox);
            TransportError::PeerLost {
                peer: self.rank,
                why,
            }
        })
    }

    /// Writes queued bytes if there are any (on writable, or at the owner's poll).
    pub(crate) fn drain(&self, inbox: &Inbox) {
        if !self.backlog.load(Ordering::SeqCst) {
            return;
        }
        self.flush_queue(inbox);
    }

    /// Writes queued bytes; returns whether the queue is now empty (or the link gone).
    pub(crate) fn flush_queue(&self, inbox: &Inbox) -> bool {
        let mut guard = lock(&self.tx);
        let tx = &mut *guard;
        let Link::Up(stream) = &tx.link else {
            return true;
        };
        match flush(&**stream, &mut tx.queue) {
            Ok(empty) => {
                self.backlog.store(!empty, Ordering::SeqCst);
                empty
            }
            Err(e) => {
                let why = format!("sending to {}: {e}", describe(tx.remote));
                lose(self.rank, tx, why, inbox);
                true
            }
        }
    }

    /// The connection to wait on while parked, and whether bytes are queued for it
    /// (`park.rs`); `None` unless it is up.
    pub(crate) fn parkable(&self) -> Option<(Arc<S>, bool)> {
        match &lock(&self.tx).link {
            Link::Up(s) => Some((Arc::clone(s), self.backlog.load(Ordering::SeqCst))),
            _ => None,
        }
    }

    /// Bytes queued for this peer.
    pub(crate) fn queued(&self) -> usize {
        lock(&self.tx).queue.len()
    }

    /// Queues the goodbye frame behind everything else and tries to send it.
    pub(crate) fn say_goodbye(&self, inbox: &Inbox) {
        {
            let mut tx = lock(&self.tx);
            if !matches!(tx.link, Link::Up(_)) {
                return;
            }
            tx.queue.extend(&Header::BYE.encode());
            self.backlog.store(true, Ordering::SeqCst);
        }
        self.flush_queue(inbox);
    }

    /// Shuts the connection down in `how` direction(s), if it is up.
    pub(crate) fn shutdown(&self, how: Shutdown) {
        if let Link::Up(s) = &lock(&self.tx).link {
            let _ = s.shutdown(how);
        }
    }
}

/// Whether an I/O error only means "try again later".
fn transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// One `sendmsg` of `parts` (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE);
/// what did not go out is appended to `queue`.
fn write_frame(sock: &impl Wire, parts: [&[u8]; 3], queue: &mut VecDeque<u8>) -> io::Result<()> {
    let slices = parts.map(IoSlice::new);
    let mut done = match sock.send(&slices) {
        Ok(n) => n,
        Err(e) if transient(&e) => 0,
        Err(e) => return Err(e),
    };
    for p in parts {
        if done >= p.len() {
            done -= p.len();
        } else {
            queue.extend(&p[done..]);
            done = 0;
        }
    }
    Ok(())
}

/// Writes from the front of `queue` until it is empty (true) or the socket is full
/// (false).
fn flush(sock: &impl Wire, queue: &mut VecDeque<u8>) -> io::Result<bool> {
    while !queue.is_empty() {
        let (a, b) = queue.as_slices();
        match sock.send(&[IoSlice::new(a), IoSlice::new(b)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                queue.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}
