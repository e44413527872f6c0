//! The owner's half of the read handoff (`rx.rs` has the rules): which connections
//! it holds, reading them when a poll finds nothing queued, and giving back those
//! that stayed quiet for `hot_for`.
//!
//! 1. Sending to a peer, or taking a packet from it, means more traffic is expected:
//!    [`TcpTransport::expect`] holds the connection (or restarts its quiet clock).
//! 2. A poll that finds nothing queued serves every held connection once
//!    ([`TcpTransport::read_held`]): write out bytes queued for it (the thread no
//!    longer watches it for room), take its lock (skip it if the progress thread is
//!    in it), take the inbox (rule 2 of `rx.rs`), read until the socket is empty or
//!    a budget is spent.
//! 3. A held connection that gave nothing for `hot_for` goes back to the thread;
//!    one the thread took back, or that closed, is dropped from the list.
//! 4. At most [`MAX_HELD`] connections are held, the most recently busy ones: each
//!    costs a `recv` per empty poll, so after traffic with many peers (an
//!    all-to-all) the oldest go back to the thread at once.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::rx;
use super::{TcpTransport, TransportError};

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
        let (sh, taken, held, direct) =
            (&self.sh, &mut self.taken, &mut self.held, &mut self.direct);
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
                    let outcome = reader.read(taken, sh.cfg.max_payload, 0, BUDGET, true);
                    rx::settle(sh, r, &mut st, outcome).is_some()
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
