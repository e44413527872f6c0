//! One peer's connection, sending side: vectored writes and a bounded outgoing queue.
//!
//! Sending a packet to a peer (the caller's thread, under the peer's lock):
//! 1. If bytes wait from earlier packets (a lent rest, then the queue), try to write
//!    them first.
//! 2. Bytes still waiting → append the frame to the queue if the queue stays within
//!    the limit, else [`SendStatus::NoCredit`] (the caller polls and retries). Per-pair
//!    order holds because a frame is written directly only when nothing waits before it.
//! 3. Nothing waiting → write header, metadata and payload with one `sendmsg`; what the
//!    socket did not take is copied into the queue, or, for a large rest sent through
//!    a [`super::Lender`], left in the caller's buffer and written from there while the
//!    caller waits (`lend.rs`).
//!
//! The progress thread drains the queue when the socket becomes writable, and the
//! owner at every poll while it holds the connection (`handoff.rs`, rule 4). So that
//! neither need take the lock when there is nothing to do, a flag (`backlog`) says
//! whether bytes are queued or lent. Rules, which make sure they are never stranded:
//! 1. The flag changes only under the peer's lock; it is true whenever the lock is
//!    released with bytes queued.
//! 2. When bytes stay queued, the flag was set *before* the last write attempt. A
//!    write that leaves bytes behind makes the kernel report the next writable edge,
//!    and an edge reported after that write finds the flag set. (Set after it, the
//!    flag could miss an edge that came in between, and the bytes would wait for the
//!    next send, perhaps forever.)
//!
//! A write error marks the link lost and posts one [`TransportError::PeerLost`] to
//! the inbox; every later send to that peer fails with the same reason.

use std::collections::VecDeque;
use std::io::{self, IoSlice};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use socket2::SockRef;

use super::faults::{describe, lose};
use super::handoff::Rx;
use super::inbox::{lock, Inbox};
use super::lend::LEND_MIN;
use super::wire::Header;
use crate::error::TransportError;
use crate::SendStatus;

/// The state of the link to one peer.
pub(crate) enum Link {
    /// Not connected (not yet, or not reachable over tcp).
    Down,
    /// Connected.
    Up(Arc<TcpStream>),
    /// The peer said goodbye: it left the job.
    Left(String),
    /// The connection broke; why.
    Lost(String),
}

/// A peer's sending state, under its lock.
pub(crate) struct Tx {
    pub(crate) link: Link,
    pub(super) queue: VecDeque<u8>,
    /// The rest of a frame still in its sender's buffer (`lend.rs`); `queue` follows it.
    pub(super) lent: Option<Lent>,
    /// The peer's address, for messages.
    pub(crate) remote: Option<SocketAddr>,
}

/// One peer as seen by both threads.
pub(crate) struct Peer {
    pub(crate) rank: usize,
    pub(crate) tx: Mutex<Tx>,
    /// Whether bytes are queued or lent (read by the progress thread without the lock).
    pub(super) backlog: AtomicBool,
    /// Bytes of `tx.lent` not yet written (read by the lending caller without the lock).
    pub(super) lent_left: AtomicUsize,
    /// The receiving side: who reads the connection (`handoff.rs`).
    pub(crate) rx: Rx,
}

impl Peer {
    /// A peer without a connection.
    pub(crate) fn new(rank: usize) -> Peer {
        Peer {
            rank,
            tx: Mutex::new(Tx {
                link: Link::Down,
                queue: VecDeque::new(),
                lent: None,
                remote: None,
            }),
            backlog: AtomicBool::new(false),
            lent_left: AtomicUsize::new(0),
            rx: Rx::default(),
        }
    }

    /// Installs an established connection; false if the peer already had one.
    pub(crate) fn install(&self, stream: Arc<TcpStream>, remote: SocketAddr) -> bool {
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
        self.send_frame(meta, payload, limit, inbox, false)
            .map(|sent| match sent {
                Sending::NoCredit => SendStatus::NoCredit,
                Sending::Sent | Sending::Lent => SendStatus::Sent,
            })
    }

    /// [`Peer::try_send`]; with `lend`, a rest of the payload of at least
    /// [`super::lend::LEND_MIN`] bytes that the socket did not take is lent, not
    /// copied: the caller must keep `payload` unchanged until it has reclaimed the
    /// loan (`lend.rs`, the only caller that lends).
    pub(super) fn send_frame(
        &self,
        meta: &[u8],
        payload: &[u8],
        limit: usize,
        inbox: &Inbox,
        lend: bool,
    ) -> Result<Sending, TransportError> {
        let header = Header::data(meta.len(), payload.len()).encode();
        let parts = [&header[..], meta, payload];
        let mut guard = lock(&self.tx);
        let tx = &mut *guard;
        let stream = match &tx.link {
            Link::Up(s) => s,
            other => return Err(self.unusable(other)),
        };
        let sock = SockRef::from(&**stream);
        let outcome = (|| {
            let mut sent = Sending::Sent;
            if waiting(&tx.lent, &tx.queue) && !flush(&sock, &mut tx.lent, &mut tx.queue)? {
                let len: usize = parts.iter().map(|p| p.len()).sum();
                if tx.queue.len() + len > limit {
                    return Ok(Sending::NoCredit);
                }
                for p in parts {
                    tx.queue.extend(p);
                }
            } else {
                let lend_from = lend.then(|| payload.len().checked_sub(LEND_MIN)).flatten();
                tx.lent = write_frame(&sock, parts, &mut tx.queue, lend_from)?;
                if tx.lent.is_some() {
                    sent = Sending::Lent;
                }
            }
            if waiting(&tx.lent, &tx.queue) {
                // Rule 2 of the module docs: flag first, then the last write.
                self.backlog.store(true, Ordering::SeqCst);
                flush(&sock, &mut tx.lent, &mut tx.queue)?;
            }
            Ok(sent)
        })();
        self.settle_flags(tx);
        outcome.map_err(|e: io::Error| {
            let why = format!("sending to {}: {e}", describe(tx.remote));
            lose(self.rank, tx, why.clone(), inbox);
            self.settle_flags(tx);
            TransportError::PeerLost {
                peer: self.rank,
                why,
            }
        })
    }

    /// Publishes what `tx` holds for the threads that read without the lock.
    pub(super) fn settle_flags(&self, tx: &Tx) {
        let left = tx.lent.as_ref().map_or(0, Lent::left);
        self.lent_left.store(left, Ordering::SeqCst);
        self.backlog.store(tx.pending(), Ordering::SeqCst);
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
        let flushed = flush(&SockRef::from(&**stream), &mut tx.lent, &mut tx.queue);
        let empty = match flushed {
            Ok(empty) => empty,
            Err(e) => {
                let why = format!("sending to {}: {e}", describe(tx.remote));
                lose(self.rank, tx, why, inbox);
                true
            }
        };
        self.settle_flags(tx);
        empty
    }

    /// The connection to wait on while parked, and whether bytes are queued for it
    /// (`park.rs`); `None` unless it is up.
    pub(crate) fn parkable(&self) -> Option<(Arc<TcpStream>, bool)> {
        match &lock(&self.tx).link {
            Link::Up(s) => Some((Arc::clone(s), self.backlog.load(Ordering::SeqCst))),
            _ => None,
        }
    }

    /// Bytes queued for this peer.
    pub(crate) fn queued(&self) -> usize {
        lock(&self.tx).queue.len()
    }

    /// Ends a loan (`lend.rs`): copies into the front of the queue what is still lent,
    /// so that the lender's buffer is no longer read; returns those bytes' count.
    pub(super) fn reclaim(&self) -> usize {
        let mut tx = lock(&self.tx);
        let Some(lent) = tx.lent.take() else {
            return 0;
        };
        let rest = lent.rest();
        let behind = std::mem::take(&mut tx.queue);
        tx.queue.reserve(rest.len() + behind.len());
        tx.queue.extend(rest);
        tx.queue.extend(behind);
        self.settle_flags(&tx);
        rest.len()
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

impl Tx {
    /// Whether bytes wait to be written: lent, or queued.
    pub(super) fn pending(&self) -> bool {
        waiting(&self.lent, &self.queue)
    }

    /// Forgets every unsent byte (the link is gone).
    pub(super) fn discard(&mut self) {
        self.queue = VecDeque::new();
        self.lent = None;
    }
}

/// [`Tx::pending`] from its fields (for code that borrows another field of `Tx`).
fn waiting(lent: &Option<Lent>, queue: &VecDeque<u8>) -> bool {
    lent.is_some() || !queue.is_empty()
}

/// What [`Peer::send_frame`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sending {
    /// Written, or queued behind earlier bytes.
    Sent,
    /// Written in part; the rest is lent (`Tx::lent`) and the caller must reclaim it.
    Lent,
    /// The queue is full.
    NoCredit,
}

/// The unsent rest of a payload that stays in its sender's buffer (`lend.rs`).
pub(crate) struct Lent {
    base: *const u8,
    len: usize,
    done: usize,
}

// SAFETY: a `Lent` points into a buffer that its lender borrows (shared, so nothing
// writes it) until it has taken the `Lent` back out of `Tx` under the peer's lock
// (`Lender::send`, whose guard does so on every path out, unwinding included); every
// read goes through that lock, so the progress thread only reads while the borrow lasts.
unsafe impl Send for Lent {}

impl Lent {
    /// Lends `rest`, the tail of a payload the caller keeps borrowed.
    fn of(rest: &[u8]) -> Lent {
        Lent {
            base: rest.as_ptr(),
            len: rest.len(),
            done: 0,
        }
    }

    /// Bytes not yet written.
    pub(super) fn left(&self) -> usize {
        self.len - self.done
    }

    /// The bytes not yet written.
    fn rest(&self) -> &[u8] {
        // SAFETY: `base..base+len` is the lender's borrowed slice (see the `Send`
        // impl), alive while this `Lent` is in `Tx`; `done <= len`.
        unsafe { std::slice::from_raw_parts(self.base.add(self.done), self.left()) }
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
/// what did not go out is appended to `queue`, except a rest of the payload (the last
/// part) that starts at or before `lend_from`, which is returned lent instead.
fn write_frame(
    sock: &SockRef<'_>,
    parts: [&[u8]; 3],
    queue: &mut VecDeque<u8>,
    lend_from: Option<usize>,
) -> io::Result<Option<Lent>> {
    let slices = parts.map(IoSlice::new);
    let mut done = match sock.send_vectored_with_flags(&slices, libc::MSG_NOSIGNAL) {
        Ok(n) => n,
        Err(e) if transient(&e) => 0,
        Err(e) => return Err(e),
    };
    let [header, meta, payload] = parts;
    for p in [header, meta] {
        if done >= p.len() {
            done -= p.len();
        } else {
            queue.extend(&p[done..]);
            done = 0;
        }
    }
    let lend = queue.is_empty() && lend_from.is_some_and(|from| done <= from);
    let rest = &payload[done.min(payload.len())..];
    if lend && !rest.is_empty() {
        return Ok(Some(Lent::of(rest)));
    }
    queue.extend(rest);
    Ok(None)
}

/// Writes what is lent, then the queue, until nothing is left (true) or the socket is
/// full (false).
fn flush(
    sock: &SockRef<'_>,
    lent: &mut Option<Lent>,
    queue: &mut VecDeque<u8>,
) -> io::Result<bool> {
    loop {
        let first = lent.as_ref().map_or(&[][..], Lent::rest);
        let (a, b) = queue.as_slices();
        if first.is_empty() && a.is_empty() && b.is_empty() {
            *lent = None;
            return Ok(true);
        }
        let slices = [IoSlice::new(first), IoSlice::new(a), IoSlice::new(b)];
        match sock.send_vectored_with_flags(&slices, libc::MSG_NOSIGNAL) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(mut n) => {
                if let Some(l) = lent.as_mut() {
                    let k = n.min(l.left());
                    l.done += k;
                    n -= k;
                    if l.left() == 0 {
                        *lent = None;
                    }
                }
                queue.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
}
