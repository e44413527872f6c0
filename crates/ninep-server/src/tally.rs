//! Counting what a client can make happen at will (refusals, evictions, bad frames,
//! requests past a limit, deadlines), and logging it at most once per [`INTERVAL`] per
//! kind, so that no client can flood the log.
//!
//! Rules:
//!
//! 1. The first event of a kind is logged at once; the ones after it within the
//!    interval are only counted, and the next line logged says how many there were.
//!    The totals of some are kept for [`crate::ServerStats`].
//! 2. Every warning about one connection goes through a tally of [`Tallies`]: a client
//!    that opens 500 connections and sends a bad frame on each adds a line per 10 s.
//! 3. Strings a client chooses (a version string, a TLS name) are written with `{:?}`,
//!    quoted and escaped, so no client text can start a line of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cancel::lock;

/// Shortest time between two log lines of one tally.
pub(crate) const INTERVAL: Duration = Duration::from_secs(10);

/// A count of one kind of event, and when it was last logged (rule 1): for what a
/// client can cause at will, here and in the transports above the server (a refused
/// TLS handshake).
#[derive(Default)]
pub struct Tally {
    total: AtomicU64,
    window: Mutex<Window>,
}

#[derive(Default)]
struct Window {
    /// When a line was last logged.
    logged: Option<Instant>,
    /// Events since then that were not logged.
    unlogged: u64,
}

impl Tally {
    /// A tally with nothing counted.
    pub fn new() -> Tally {
        Tally::default()
    }

    /// Counts one event, and logs `line()` (a `tracing` warning) unless a line was
    /// logged less than `INTERVAL` (10 s) ago.
    pub fn hit(&self, line: impl FnOnce() -> String) {
        self.total.fetch_add(1, Ordering::Relaxed);
        let mut w = lock(&self.window);
        let now = Instant::now();
        if w.logged.is_some_and(|t| now - t < INTERVAL) {
            w.unlogged += 1;
            return;
        }
        let unlogged = std::mem::take(&mut w.unlogged);
        w.logged = Some(now);
        drop(w);
        let line = line();
        if unlogged == 0 {
            tracing::warn!("{line}");
        } else {
            tracing::warn!(
                "{line} ({unlogged} more like it in the last {}s were counted, not logged)",
                INTERVAL.as_secs()
            );
        }
    }

    /// Events counted so far.
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
}

/// One tally per kind of event a client can cause at will (rule 2).
#[derive(Default)]
pub(crate) struct Tallies {
    /// Connections refused for the slot limits (`slots` rule 5).
    pub refused: Tally,
    /// Connections closed to make room (`slots` rule 6).
    pub evicted: Tally,
    /// Requests refused for a memory budget (`budget` rule 1).
    pub memory: Arc<Tally>,
    /// Opens refused for a descriptor budget (`budget` rule 1).
    pub fds: Arc<Tally>,
    /// Connections closed for a frame that cannot be read.
    pub frames: Tally,
    /// Requests that do not decode, reuse a tag in flight or come before `Tversion`.
    pub protocol: Tally,
    /// Versions refused.
    pub versions: Tally,
    /// Requests refused `EAGAIN` for `max_in_flight`.
    pub in_flight: Tally,
    /// Requests refused `EMFILE` for `max_fids`.
    pub fids: Tally,
    /// Connections closed by a deadline (`watch`).
    pub deadlines: Tally,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_every_event_and_logs_the_first_of_a_burst() {
        let t = Tally::new();
        let mut logged = 0;
        for _ in 0..1000 {
            t.hit(|| {
                logged += 1;
                String::from("x")
            });
        }
        assert_eq!((t.total(), logged), (1000, 1));
    }
}
