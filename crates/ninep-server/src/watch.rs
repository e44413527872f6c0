//! Deadlines: no connection holds a slot by saying nothing.
//!
//! One thread per server looks at every connection a few times per shortest deadline
//! and closes (as [`crate::Server::shutdown`] does: the transport is shut, the
//! reader ends and releases everything) a connection that
//!
//! 1. has started to talk (a frame, or part of one) but not attached (it holds no
//!    fid) `handshake_timeout` after it was first seen talking (not after it
//!    connected: a relay's client may start talking long after the relay connected);
//! 2. has a frame partly received and no frame completed for `frame_timeout`;
//! 3. attached once, but holds no fid, has no request in flight and has sent no frame
//!    for `idle_timeout`.
//!
//! Each close is logged through the deadlines' tally (`tally`): a client that opens
//! connections and falls silent on each adds a line per 10 s.
//!
//! It also gives freed memory back after connections end (`trim`, at most once a
//! second).
//!
//! A connection that has sent nothing at all (a relay that connects before its client
//! is ready, as QEMU's does for a booting guest) is left alone: it holds one slot,
//! which [`Server`]'s admission takes back when a new connection needs it.
//!
//! The reader loop only counts frames, flags a partial one and stamps the last frame
//! with the coarse [`Clock`] this thread advances every tick (a few relaxed atomics per
//! receive); every clock read happens here and in admission. The thread ends within a
//! tick of the server's last handle being dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;
use std::thread;
use std::time::{Duration, Instant};

use crate::handler::Filesystem;
use crate::srv::{Server, Shared};
use crate::trim;

/// What the watcher last saw of one connection.
struct Seen {
    /// When the connection was first seen talking.
    first: Option<Instant>,
    attached: bool,
    frames: u64,
    /// When `frames` last changed (or the connection was first seen).
    changed: Instant,
}

/// Longest tick: how stale [`Clock::coarse`] may be.
const MAX_TICK: Duration = Duration::from_millis(250);

/// Milliseconds since the server started: advanced by the watcher every tick and by
/// admission, read by connection readers with one relaxed load.
pub(crate) struct Clock {
    start: Instant,
    ms: AtomicU64,
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            start: Instant::now(),
            ms: AtomicU64::new(0),
        }
    }

    /// Advances the clock to now and returns it.
    pub fn now(&self) -> u64 {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.ms.fetch_max(ms, Ordering::Relaxed).max(ms)
    }

    /// The time as last advanced: at most [`MAX_TICK`] old while the server runs.
    pub fn coarse(&self) -> u64 {
        self.ms.load(Ordering::Relaxed)
    }
}

/// Starts the watcher of the server behind `shared`.
pub(crate) fn start<F: Filesystem>(shared: Weak<Shared<F>>) {
    let Some(strong) = shared.upgrade() else {
        return;
    };
    let c = &strong.config;
    let shortest = c.handshake_timeout.min(c.frame_timeout).min(c.idle_timeout);
    let tick = (shortest / 4).clamp(Duration::from_millis(20), MAX_TICK);
    drop(strong);
    let spawned = thread::Builder::new()
        .name("9p-deadlines".into())
        .spawn(move || run(shared, tick));
    if let Err(e) = spawned {
        tracing::error!(error = %e, "cannot start the 9P deadline watcher; silent connections will not be closed");
    }
}

fn run<F: Filesystem>(shared: Weak<Shared<F>>, tick: Duration) {
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    let mut trimmed = Instant::now();
    loop {
        thread::sleep(tick);
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let now = Instant::now();
        shared.clock.now();
        if now - trimmed >= trim::EVERY && shared.ended.swap(false, Ordering::Relaxed) {
            trim::release();
            trimmed = now;
        }
        let conns = Server::conns(&shared);
        seen.retain(|id, _| conns.iter().any(|c| c.id() == *id));
        let c = &shared.config;
        for conn in conns {
            let (frames, partial) = conn.progress();
            let (fids, in_flight) = conn.counts();
            let s = seen.entry(conn.id()).or_insert(Seen {
                first: None,
                attached: false,
                frames,
                changed: now,
            });
            if frames != s.frames {
                s.frames = frames;
                s.changed = now;
            }
            s.attached |= fids > 0;
            let quiet = now - s.changed;
            let spoke = frames > 0 || partial;
            if spoke && s.first.is_none() {
                s.first = Some(now);
            }
            let talking_for = s.first.map_or(Duration::ZERO, |t| now - t);
            let why = if spoke && !s.attached && talking_for >= c.handshake_timeout {
                Some(("no attach within handshake_timeout", c.handshake_timeout))
            } else if partial && quiet >= c.frame_timeout {
                Some((
                    "a frame stayed incomplete for frame_timeout",
                    c.frame_timeout,
                ))
            } else if s.attached && fids == 0 && in_flight == 0 && quiet >= c.idle_timeout {
                Some(("no fid and no request for idle_timeout", c.idle_timeout))
            } else {
                None
            };
            if let Some((why, after)) = why {
                conn.warn(|t| &t.deadlines, || format!("closed: {why} ({after:?})"));
                conn.close();
            }
        }
    }
}
