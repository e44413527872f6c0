//! Per-pair send windows: why a receiver never has to drop a packet to restore order.
//!
//! A receiver holds a packet that completed ahead of an earlier one from the same
//! sender (`order.rs`), and can hold at most `W` per sender: its `reorder_window`,
//! published with its address (step 2 of `mod.rs`). The sender keeps to that bound:
//!
//! 1. Every packet it *posts* (not injected) stays in this table from `fi_send` until
//!    its send completion.
//! 2. It sends packet `n` to a peer only while every posted packet to that peer still
//!    in flight is numbered above `n - W` ([`Windows::may_send`]); else the send is
//!    `NoCredit` and the caller polls, which reads completions.
//!
//! **Invariant:** a receiver never holds `W` or more packets from one sender.
//!
//! It rests on what the provider promises about one pair (`FI_ORDER_SAS`, and how
//! `ofi_rxm` completes sends): *a message whose send has completed at the sender, or
//! that was injected, completes at the receiver before every message sent after it.*
//! Eager and segmented messages (injected ones are at most the inject size, 64 B for
//! tcp) complete on arrival, in stream order; a rendezvous message completes at the
//! sender only after the receiver has read its data.
//!
//! Proof: the receiver holds packets only behind the next expected one, `p`, whose
//! receive has not completed, so every held `n > p` completed first. By the promise,
//! `p` was posted and was still in flight at the sender when `n` was sent; rule 2 then
//! gives `n - p < W`. The held packets are among the `W - 1` numbers after `p`.
//!
//! A packet arriving further ahead than that breaks the protocol (`order.rs` refuses
//! it, naming the sender): it cannot come from a sender that keeps these rules.

use std::collections::VecDeque;

/// The posted packets in flight to every peer, and each peer's window.
pub(crate) struct Windows {
    /// Sequence numbers of posted packets in flight, per peer, in send order.
    posted: Vec<VecDeque<u32>>,
    /// Each peer's `reorder_window` (0 until its address is inserted).
    limit: Vec<u32>,
}

impl Windows {
    /// Windows for `size` peers, all closed until [`Windows::open`].
    pub(crate) fn new(size: usize) -> Self {
        Windows {
            posted: vec![VecDeque::new(); size],
            limit: vec![0; size],
        }
    }

    /// Sets `peer`'s window to the `w` packets it can hold (at least 1).
    pub(crate) fn open(&mut self, peer: usize, w: u32) {
        self.limit[peer] = w.max(1);
    }

    /// Rule 2: whether packet `seq` may go to `peer` now.
    pub(crate) fn may_send(&self, peer: usize, seq: u32) -> bool {
        self.posted[peer]
            .front()
            .is_none_or(|&oldest| seq.wrapping_sub(oldest) < self.limit[peer])
    }

    /// Rule 1: packet `seq` to `peer` was posted.
    pub(crate) fn posted(&mut self, peer: usize, seq: u32) {
        self.posted[peer].push_back(seq);
    }

    /// Packet `seq` to `peer` completed (or failed): it leaves the window.
    pub(crate) fn completed(&mut self, peer: usize, seq: u32) {
        let q = &mut self.posted[peer];
        // Completions come mostly in order: the front, else a short search.
        if q.front() == Some(&seq) {
            q.pop_front();
        } else if let Some(i) = q.iter().position(|&s| s == seq) {
            q.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_waits_while_a_packet_w_behind_it_is_in_flight() {
        let mut w = Windows::new(2);
        w.open(1, 4);
        assert!(w.may_send(1, 0));
        w.posted(1, 0);
        // 1..=3 are injected (never posted); 4 is W after the posted 0.
        assert!(w.may_send(1, 3));
        assert!(!w.may_send(1, 4));
        w.posted(1, 2);
        w.completed(1, 0);
        assert!(w.may_send(1, 5));
        assert!(!w.may_send(1, 6));
        w.completed(1, 2);
        assert!(w.may_send(1, 1000));
    }

    #[test]
    fn numbers_wrap_and_completions_may_come_out_of_order() {
        let mut w = Windows::new(1);
        w.open(0, 3);
        w.posted(0, u32::MAX);
        w.posted(0, 0);
        assert!(w.may_send(0, 1));
        assert!(!w.may_send(0, 2));
        w.completed(0, 0);
        assert!(!w.may_send(0, 2), "the older one is still in flight");
        w.completed(0, u32::MAX);
        assert!(w.may_send(0, 2));
    }
}
