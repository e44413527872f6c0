//! Who reads a connection: the progress thread, or the transport's owner while it
//! polls. The handoff lets a polling rank read its sockets itself.
//!
//! The progress thread blocked in epoll serves arrivals when nobody polls, but every
//! arrival it serves costs a wake-up, a thread switch and a hop through the inbox
//! (about 2× a polled raw socket on a 2-core machine). A rank that is polling anyway
//! reads the connections it expects traffic on with non-blocking `recv`, and the
//! progress thread stays asleep.
//!
//! Each connection's read side is held by the thread or by the owner (`app`):
//! - it goes to the owner when the owner sends on it or takes a packet from it
//!   (traffic is expected); only the owner sets `app`, without the lock;
//! - it goes back to the thread ([`Rx::hand_back`]) when the owner's polls found
//!   nothing on it for `TcpConfig::hot_for`, or when the progress thread sees that the
//!   owner has not polled at all for a [`TICK`] (a rank gone computing).
//!
//! Rules (why no byte is read twice, lost, reordered or stranded):
//! 1. A connection's bytes are read only under its `state` lock, through the one
//!    [`Reader`] kept there: a frame half read by one thread is finished by the next
//!    holder from the same state.
//! 2. The progress thread deposits into the inbox under that lock. The owner takes
//!    the lock, then takes the inbox, then reads: what the thread read earlier from a
//!    connection comes out before what the owner reads (per-pair order).
//! 3. Whether epoll watches the connection changes only under the lock: the progress
//!    thread stops watching it when, holding the lock, it finds the owner holds the
//!    connection; `hand_back` clears `app` and watches it again under the lock. Since
//!    only `hand_back` clears `app`, a connection the thread holds is watched whenever
//!    the lock is free, so arrivals wake the thread. Watching again reports what is
//!    already there (epoll checks readiness when a file is added), so bytes that came
//!    while the owner held the connection are not stranded, nor is queued output.
//! 4. While the owner holds a connection it reads it, and writes out its queued bytes
//!    (`conn.rs`), at every poll that finds nothing queued. A taken connection stops
//!    being watched at its first event after the take (one wake per take at most);
//!    the thread then lists it as lent and wakes every [`TICK`]: if the owner did not
//!    poll since the previous tick, the thread hands it back (rule 3) and serves it.
//! 5. The cost: an empty poll while no connection is held by the owner stays one
//!    atomic load; while some are, one `recv` each.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::Duration;

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use super::inbox::lock;
use super::recv::{Outcome, Reader};
use super::Shared;

/// How often the progress thread checks that an owner holding connections still polls.
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// What epoll watches on a connection the thread holds: arrivals and room to write.
pub(crate) const WATCH: Interest = Interest::READABLE.add(Interest::WRITABLE);

/// A connection's read state, under its lock.
#[derive(Default)]
pub(crate) struct RxState {
    /// The connection's reader; `None` before it is connected and after it closed.
    pub(crate) reader: Option<Reader>,
    /// Whether the connection is registered with epoll (rule 3).
    watched: bool,
}

/// One peer's read side, shared by the progress thread and the owner.
#[derive(Default)]
pub(crate) struct Rx {
    state: Mutex<RxState>,
    /// The owner holds the connection (rule 4).
    app: AtomicBool,
}

/// What the thread found when it came to read a connection.
pub(crate) enum Visit<'a> {
    /// The thread holds it: read it.
    Read(MutexGuard<'a, RxState>),
    /// The owner holds it (no longer watched now, if it still was): leave it.
    Lent,
}

impl Rx {
    /// Starts serving an established connection from the thread (already registered
    /// with [`WATCH`] interest under its peer's rank).
    pub(crate) fn install(&self, reader: Reader) {
        let mut st = lock(&self.state);
        st.reader = Some(reader);
        st.watched = true;
    }

    /// The owner takes the connection (the thread stops watching it at its next
    /// event: rule 4).
    pub(crate) fn take(&self) {
        if !self.app.load(Ordering::Relaxed) {
            self.app.store(true, Ordering::Release);
        }
    }

    /// Whether the owner holds the connection.
    pub(crate) fn lent(&self) -> bool {
        self.app.load(Ordering::Acquire)
    }

    /// The progress thread's entry (rules 3 and 4): the state to read from, or
    /// `Lent` after making sure epoll no longer wakes it for this connection.
    pub(crate) fn visit(&self, registry: &Registry) -> io::Result<Visit<'_>> {
        let mut st = lock(&self.state);
        if !self.app.load(Ordering::Acquire) {
            return Ok(Visit::Read(st));
        }
        if st.watched {
            if let Some(reader) = &st.reader {
                registry.deregister(&mut SourceFd(&reader.stream.as_raw_fd()))?;
            }
            st.watched = false;
        }
        Ok(Visit::Lent)
    }

    /// The owner's entry: the state to read from, unless the thread holds the
    /// connection or is busy with it right now.
    pub(crate) fn try_own(&self) -> Option<MutexGuard<'_, RxState>> {
        if !self.app.load(Ordering::Acquire) {
            return None;
        }
        match self.state.try_lock() {
            Ok(st) => Some(st),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Gives the connection back to the thread (rule 3); either side may call it.
    /// `token` is the peer's rank.
    pub(crate) fn hand_back(&self, registry: &Registry, token: usize) -> io::Result<()> {
        let mut st = lock(&self.state);
        self.app.store(false, Ordering::Release);
        if !st.watched {
            if let Some(reader) = &st.reader {
                let fd = reader.stream.as_raw_fd();
                registry.register(&mut SourceFd(&fd), Token(token), WATCH)?;
            }
            st.watched = true;
        }
        Ok(())
    }

    /// Closes the read side for good: forgets the reader and stops watching its
    /// socket.
    pub(crate) fn close(&self, registry: &Registry) {
        close(&mut lock(&self.state), registry);
    }
}

/// [`Rx::close`] for a caller that already holds the state.
pub(crate) fn close(st: &mut RxState, registry: &Registry) {
    if let Some(reader) = st.reader.take() {
        if st.watched {
            let _ = registry.deregister(&mut SourceFd(&reader.stream.as_raw_fd()));
        }
    }
    st.watched = false;
}

/// Acts on why a reader stopped, for either side: a goodbye, a closed connection or
/// garbage closes the read side and tells the peer's sending side (which reports a
/// loss once through the inbox); anything else is returned for the caller. Once we
/// have said goodbye ourselves, a peer that closes without one is leaving too (it
/// skips its goodbye to a rank that already left): no loss.
pub(crate) fn settle(sh: &Shared, r: usize, st: &mut RxState, outcome: Outcome) -> Option<Outcome> {
    let peer = &sh.peers[r];
    match outcome {
        Outcome::Bye => {
            close(st, &sh.registry);
            peer.left();
            tracing::debug!(peer = r, "tcp: peer said goodbye");
        }
        Outcome::Closed(why) if sh.leaving.load(Ordering::Acquire) => {
            close(st, &sh.registry);
            peer.left();
            tracing::debug!(peer = r, "tcp: peer closed while we leave: {why}");
        }
        Outcome::Closed(why) => {
            close(st, &sh.registry);
            peer.lost(why, &sh.inbox);
        }
        Outcome::Garbage(why) => {
            close(st, &sh.registry);
            let why = format!("it sent a malformed frame ({why}); connection closed");
            peer.lost(why, &sh.inbox);
        }
        other => return Some(other),
    }
    None
}
