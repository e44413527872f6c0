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
//!    (`tx.rs`), at every poll that finds nothing queued. A taken connection stops
//!    being watched at its first event after the take (one wake per take at most);
//!    the thread then lists it as lent and wakes every [`TICK`]: if the owner did not
//!    poll since the previous tick, the thread hands it back (rule 3) and serves it.
//! 5. The cost: an empty poll while no connection is held by the owner stays one
//!    atomic load; while some are, one `recv` each.
//!
//! Rules 1–3 are model-checked (`loom_tests.rs`): [`Rx`] is generic over its reader
//! and over what watches the connection ([`Watch`]: epoll's [`Registry`], or the
//! model's stand-in).
//!
//! The owner's half ([`TcpTransport::read_held`] and friends): which connections it
//! holds, reading them when a poll finds nothing queued, and giving back those that
//! stayed quiet for `hot_for`.
//! 1. Sending to a peer, or taking a packet from it, means more traffic is expected:
//!    [`TcpTransport::expect`] holds the connection (or restarts its quiet clock).
//! 2. A poll that finds nothing queued serves every held connection once
//!    ([`TcpTransport::read_held`]): write out bytes queued for it (the thread no
//!    longer watches it for room), take its lock (skip it if the progress thread is
//!    in it), take the inbox (rule 2 above), read until the socket is empty or
//!    a budget is spent.
//! 3. A held connection that gave nothing for `hot_for` goes back to the thread;
//!    one the thread took back, or that closed, is dropped from the list.
//! 4. At most [`MAX_HELD`] connections are held, the most recently busy ones: each
//!    costs a `recv` per empty poll, so after traffic with many peers (an
//!    all-to-all) the oldest go back to the thread at once.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::TryLockError;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use super::faults::settle;
use super::rx::Reader;
use super::sync::{lock, AtomicBool, Mutex, MutexGuard, Ordering};
use super::{TcpTransport, TransportError};

/// How often the progress thread checks that an owner holding connections still polls.
pub(crate) const TICK: Duration = Duration::from_millis(10);

/// What epoll watches on a connection the thread holds: arrivals and room to write.
pub(crate) const WATCH: Interest = Interest::READABLE.add(Interest::WRITABLE);

/// What tells the progress thread that a connection read by `R` has something for it:
/// its epoll ([`Registry`], for a [`Reader`]), or the loom model's stand-in
/// (`loom_tests.rs`).
pub(crate) trait Watch<R> {
    /// Starts watching `reader`'s connection under `token` (the peer's rank); what is
    /// already there is reported (epoll checks readiness when a file is added).
    fn watch(&self, reader: &R, token: usize) -> io::Result<()>;
    /// Stops watching `reader`'s connection.
    fn unwatch(&self, reader: &R) -> io::Result<()>;
}

impl Watch<Reader> for Registry {
    fn watch(&self, reader: &Reader, token: usize) -> io::Result<()> {
        let fd = reader.stream.as_raw_fd();
        self.register(&mut SourceFd(&fd), Token(token), WATCH)
    }

    fn unwatch(&self, reader: &Reader) -> io::Result<()> {
        self.deregister(&mut SourceFd(&reader.stream.as_raw_fd()))
    }
}

/// A connection's read state, under its lock.
pub(crate) struct RxState<R = Reader> {
    /// The connection's reader; `None` before it is connected and after it closed.
    pub(crate) reader: Option<R>,
    /// Whether the connection is registered with epoll (rule 3).
    watched: bool,
}

/// One peer's read side, shared by the progress thread and the owner.
pub(crate) struct Rx<R = Reader> {
    state: Mutex<RxState<R>>,
    /// The owner holds the connection (rule 4).
    app: AtomicBool,
}

impl<R> Default for Rx<R> {
    fn default() -> Self {
        Rx {
            state: Mutex::new(RxState {
                reader: None,
                watched: false,
            }),
            app: AtomicBool::new(false),
        }
    }
}

/// What the thread found when it came to read a connection.
pub(crate) enum Visit<'a, R = Reader> {
    /// The thread holds it: read it.
    Read(MutexGuard<'a, RxState<R>>),
    /// The owner holds it (no longer watched now, if it still was): leave it.
    Lent,
}

impl<R> Rx<R> {
    /// Starts serving an established connection from the thread (already registered
    /// with [`WATCH`] interest under its peer's rank).
    pub(crate) fn install(&self, reader: R) {
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
    pub(crate) fn visit(&self, epoll: &impl Watch<R>) -> io::Result<Visit<'_, R>> {
        let mut st = lock(&self.state);
        if !self.app.load(Ordering::Acquire) {
            return Ok(Visit::Read(st));
        }
        if st.watched {
            if let Some(reader) = &st.reader {
                epoll.unwatch(reader)?;
            }
            st.watched = false;
        }
        Ok(Visit::Lent)
    }

    /// The owner's entry: the state to read from, unless the thread holds the
    /// connection or is busy with it right now.
    pub(crate) fn try_own(&self) -> Option<MutexGuard<'_, RxState<R>>> {
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
    pub(crate) fn hand_back(&self, epoll: &impl Watch<R>, token: usize) -> io::Result<()> {
        let mut st = lock(&self.state);
        self.app.store(false, Ordering::Release);
        if !st.watched {
            if let Some(reader) = &st.reader {
                epoll.watch(reader, token)?;
            }
            st.watched = true;
        }
        Ok(())
    }

    /// Closes the read side for good: forgets the reader and stops watching its
    /// socket.
    pub(crate) fn close(&self, epoll: &impl Watch<R>) {
        close(&mut lock(&self.state), epoll);
    }
}

/// [`Rx::close`] for a caller that already holds the state.
pub(crate) fn close<R>(st: &mut RxState<R>, epoll: &impl Watch<R>) {
    if let Some(reader) = st.reader.take() {
        if st.watched {
            let _ = epoll.unwatch(&reader);
        }
    }
    st.watched = false;
}

/// Bytes the owner reads from one connection in one poll at most.
const BUDGET: usize = 1 << 20;
/// Connections held at most (step 4).
pub const MAX_HELD: usize = 4;

/// A connection the owner holds.
pub(crate) struct Held {
    rank: usize,
    /// Since when reads of it found nothing (`None` after traffic).
    quiet_since: Option<Instant>,
}

impl TcpTransport {
    /// Steps 1 and 4: traffic with `rank` is expected.
    pub(super) fn expect(&mut self, rank: usize) {
        if self.sh.cfg.hot_for.is_zero() {
            return;
        }
        self.sh.peers[rank].rx.take();
        // Most recently busy last.
        if let Some(i) = self.held.iter().position(|h| h.rank == rank) {
            self.held[i].quiet_since = None;
            self.held[i..].rotate_left(1);
            return;
        }
        self.held.push(Held {
            rank,
            quiet_since: None,
        });
        if self.held.len() > MAX_HELD {
            let oldest = self.held.remove(0).rank;
            self.give_back(oldest);
        }
    }

    /// Hands a connection back to the progress thread; a failure to watch it again
    /// loses it (reported through the inbox).
    fn give_back(&self, r: usize) {
        let (sh, rx) = (&self.sh, &self.sh.peers[r].rx);
        if let Err(e) = rx.hand_back(&sh.registry, r) {
            let why = format!("the progress thread cannot watch the connection: {e}");
            rx.close(&sh.registry);
            sh.peers[r].lost(why, &sh.inbox);
        }
    }

    /// Steps 2 and 3: reads each held connection once.
    pub(super) fn read_held(&mut self) -> Result<(), TransportError> {
        let (sh, taken, held, direct, waits) = (
            &self.sh,
            &mut self.taken,
            &mut self.held,
            &mut self.direct,
            &mut self.body_waits,
        );
        let wait = self.body_wait;
        sh.polled.store(true, Ordering::Relaxed);
        let mut wake = false;
        let mut cold = Vec::new();
        let mut i = 0;
        while i < held.len() {
            let r = held[i].rank;
            let rx = &sh.peers[r].rx;
            sh.peers[r].drain(&sh.inbox);
            let Some(mut st) = rx.try_own() else {
                if rx.lent() {
                    i += 1;
                } else {
                    held.remove(i);
                }
                continue;
            };
            wake |= sh.inbox.take_all(taken);
            let before = taken.len();
            // No reader yet (a dialled connection the thread has not installed):
            // nothing to read, and the quiet clock runs.
            let kept = match st.reader.as_mut() {
                Some(reader) => {
                    let outcome = reader.read(taken, sh.cfg.max_payload, 0, BUDGET, true, wait);
                    *waits += std::mem::take(&mut reader.waits);
                    settle(sh, r, &mut st, outcome).is_some()
                }
                None => true,
            };
            drop(st);
            let got = taken.len() - before;
            *direct += got as u64;
            if !kept {
                held.remove(i);
                continue;
            }
            if got > 0 {
                held[i].quiet_since = None;
            } else {
                let now = Instant::now();
                let since = *held[i].quiet_since.get_or_insert(now);
                if now.duration_since(since) >= sh.cfg.hot_for {
                    held.remove(i);
                    cold.push(r);
                    continue;
                }
            }
            i += 1;
        }
        for r in cold {
            self.give_back(r);
        }
        if wake {
            self.wake()?;
        }
        Ok(())
    }

    /// Whether a waiting owner does better to keep spinning than to park: it reads a
    /// connection itself, so a reply costs no wake-up. Otherwise arrivals come
    /// through the progress thread, which a spinning owner only keeps from the CPU.
    pub fn spin_pays(&self) -> bool {
        !self.held.is_empty()
    }

    /// Parking means waiting for these connections: their quiet clocks restart, so
    /// they stay held and a wake-up reads them at once.
    pub(super) fn keep_held(&mut self) {
        self.sh.polled.store(true, Ordering::Relaxed);
        for h in &mut self.held {
            h.quiet_since = None;
        }
    }
}
