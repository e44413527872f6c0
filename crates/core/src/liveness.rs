//! Heartbeats for peers behind a transport without connections to watch (ofi's RDM
//! endpoints): a dead process is only noticed when a send to it fails, and a cut link
//! not even then — small sends land in the kernel's socket buffer and "complete".
//!
//! While a wait idles, the core checks its peers every `NF_PEER_CHECK_MS`; for each
//! ofi peer, [`Heartbeat::step`]:
//! 1. no question out: ask (the core sends `PROBE`, the peer's progress answers
//!    `PROBE_ACK`), remembering when, and how many packets the peer had sent so far;
//! 2. a question out and anything arrived from the peer since: it is alive; the next
//!    check asks again;
//! 3. a question out, nothing arrived, and `dead_after` passed: the peer is lost.
//!
//! A peer that does not poll for `dead_after` (a long computation) looks the same as
//! a dead one — the price of manual progress, which the ofi transport pays anyway.

use std::time::{Duration, Instant};

/// What to do about one peer at a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Beat {
    /// Nothing now.
    Quiet,
    /// Send it a probe (then [`Heartbeat::unask`] if it could not be sent).
    Ask,
    /// It has not answered for this long: it is lost.
    Silent(Duration),
}

/// The probe state of every peer of one rank.
pub(crate) struct Heartbeat {
    dead_after: Duration,
    /// Per peer: when we asked, and how many packets it had sent then.
    asked: Vec<Option<(Instant, u64)>>,
}

impl Heartbeat {
    /// For `size` ranks; a peer silent for `dead_after` after a probe is lost.
    pub(crate) fn new(size: usize, dead_after: Duration) -> Heartbeat {
        Heartbeat {
            dead_after,
            asked: vec![None; size],
        }
    }

    /// The steps above for `peer`, which has sent `heard` packets so far.
    pub(crate) fn step(&mut self, peer: usize, heard: u64, now: Instant) -> Beat {
        match self.asked[peer] {
            Some((_, before)) if before != heard => {
                self.asked[peer] = None;
                Beat::Quiet
            }
            Some((at, _)) if now.duration_since(at) > self.dead_after => {
                Beat::Silent(now.duration_since(at))
            }
            Some(_) => Beat::Quiet,
            None => {
                self.asked[peer] = Some((now, heard));
                Beat::Ask
            }
        }
    }

    /// Forgets the question to `peer`: the probe could not be sent (no credit).
    pub(crate) fn unask(&mut self, peer: usize) {
        self.asked[peer] = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_is_asked_then_alive_or_lost() {
        let t0 = Instant::now();
        let mut hb = Heartbeat::new(3, Duration::from_secs(3));
        assert_eq!(hb.step(1, 10, t0), Beat::Ask);
        assert_eq!(hb.step(1, 10, t0 + Duration::from_secs(1)), Beat::Quiet);
        // It answered: alive, and asked again at the next check.
        assert_eq!(hb.step(1, 11, t0 + Duration::from_secs(2)), Beat::Quiet);
        assert_eq!(hb.step(1, 11, t0 + Duration::from_secs(2)), Beat::Ask);
        // No answer for longer than dead_after: lost.
        let late = t0 + Duration::from_secs(6);
        assert_eq!(hb.step(1, 11, late), Beat::Silent(Duration::from_secs(4)));
        // A probe that could not be sent is asked again, not counted against the peer.
        assert_eq!(hb.step(2, 0, t0), Beat::Ask);
        hb.unask(2);
        assert_eq!(hb.step(2, 0, late), Beat::Ask);
    }
}
