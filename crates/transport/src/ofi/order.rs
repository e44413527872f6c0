//! Per-pair order on top of a provider that may complete receives out of order.
//!
//! `FI_ORDER_SAS` orders how sends are *matched* to receive buffers, not the order in
//! which their completions are reported: the tcp provider (through `ofi_rxm`) finishes
//! a large message by rendezvous, after small messages sent behind it have completed.
//! So each packet carries a per-pair sequence number (`wire.rs`) and the receiver:
//! 1. delivers a packet whose number is the next one expected from its sender, then
//!    every held packet that follows it;
//! 2. holds a packet that is ahead (copied out of its receive buffer, so the buffer is
//!    re-posted at once and the provider never runs dry waiting for the gap to close);
//! 3. refuses one that is behind (a duplicate) or too far ahead (`limit`, our
//!    `reorder_window`, already held for its sender): the sender breaks the protocol,
//!    since a sender that keeps its window (`window.rs`) never gets that far ahead.

use std::collections::BTreeMap;

/// Sequence numbers further ahead than this are treated as behind (wrapped).
const AHEAD: u32 = 1 << 30;

/// What to do with an arrived packet.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It is the next one: deliver it, then call [`Order::next_held`].
    Deliver,
    /// It is ahead: hold it with [`Order::hold`].
    Hold,
}

/// The reorder state of one receiver: the next expected number per sender and the
/// packets held ahead of it.
pub(crate) struct Order<P> {
    next: Vec<u32>,
    held: Vec<BTreeMap<u32, P>>,
    limit: usize,
    /// Packets that ever had to be held (a statistic).
    pub(crate) reordered: u64,
    /// Most packets held at once for one sender (a statistic).
    pub(crate) held_max: usize,
}

impl<P> Order<P> {
    /// For `size` senders, holding at most `limit` packets per sender.
    pub(crate) fn new(size: usize, limit: usize) -> Self {
        Order {
            next: vec![0; size],
            held: (0..size).map(|_| BTreeMap::new()).collect(),
            limit,
            reordered: 0,
            held_max: 0,
        }
    }

    /// Classifies packet `seq` from `src` (`src` must be in range); advances the
    /// expected number when it is delivered.
    pub(crate) fn arrive(&mut self, src: usize, seq: u32) -> Result<Verdict, String> {
        let want = self.next[src];
        let ahead = seq.wrapping_sub(want);
        if ahead == 0 {
            self.next[src] = want.wrapping_add(1);
            return Ok(Verdict::Deliver);
        }
        if ahead >= AHEAD {
            return Err(format!(
                "packet #{seq} arrived after #{want} was expected (a duplicate)"
            ));
        }
        if self.held[src].len() >= self.limit {
            return Err(format!(
                "packet #{seq} is ahead of #{want} with {} packets already held",
                self.limit
            ));
        }
        if self.held[src].contains_key(&seq) {
            return Err(format!("packet #{seq} arrived twice"));
        }
        Ok(Verdict::Hold)
    }

    /// Holds packet `seq` from `src` (after [`Verdict::Hold`]).
    pub(crate) fn hold(&mut self, src: usize, seq: u32, pkt: P) {
        self.held[src].insert(seq, pkt);
        self.reordered += 1;
        self.held_max = self.held_max.max(self.held[src].len());
    }

    /// The held packet from `src` that is next now, if any (advances the number).
    pub(crate) fn next_held(&mut self, src: usize) -> Option<P> {
        let want = self.next[src];
        let pkt = self.held[src].remove(&want)?;
        self.next[src] = want.wrapping_add(1);
        Some(pkt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_ahead_are_held_until_the_gap_closes() {
        let mut o = Order::new(2, 4);
        assert_eq!(o.arrive(1, 0), Ok(Verdict::Deliver));
        assert_eq!(o.arrive(1, 2), Ok(Verdict::Hold));
        o.hold(1, 2, "two");
        assert_eq!(o.arrive(1, 3), Ok(Verdict::Hold));
        o.hold(1, 3, "three");
        assert_eq!(o.next_held(1), None);
        assert_eq!(o.arrive(1, 1), Ok(Verdict::Deliver));
        assert_eq!(o.next_held(1), Some("two"));
        assert_eq!(o.next_held(1), Some("three"));
        assert_eq!(o.next_held(1), None);
        assert!(o.arrive(1, 2).unwrap_err().contains("duplicate"));
        assert_eq!(o.arrive(0, 0), Ok(Verdict::Deliver));
        assert_eq!(o.reordered, 2);
    }

    #[test]
    fn numbers_wrap_and_the_hold_is_bounded() {
        let mut o: Order<()> = Order::new(1, 1);
        o.next[0] = u32::MAX;
        assert_eq!(o.arrive(0, 0), Ok(Verdict::Hold));
        o.hold(0, 0, ());
        assert!(o.arrive(0, 1).unwrap_err().contains("already held"));
        assert_eq!(o.arrive(0, u32::MAX), Ok(Verdict::Deliver));
        assert_eq!(o.next_held(0), Some(()));
    }
}
