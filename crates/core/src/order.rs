//! Per-pair order across two network transports (a split [`crate::netroute::NetRoute`]).
//!
//! Each transport keeps the order of what one sender sends it, but tcp and ofi do
//! not know about each other: a small message sent over tcp after a large one over
//! ofi could arrive first. So a sender that changes transport to a peer first sends,
//! on the new transport, a `SWITCH` packet saying how many packets it had sent to
//! that peer over the old one ([`Sent::switch`]). The receiver counts the packets it
//! takes from each sender on each transport; a `SWITCH` asking for more than it has
//! taken from the other transport *holds* its transport for that sender
//! ([`Gates`]): later packets from that sender on it wait in a queue until the count
//! is reached. Why that restores the sender's order:
//! 1. The sender's packets form runs, one transport per run; each run after the
//!    first starts with a `SWITCH` carrying the length so far of the other
//!    transport's stream, which ends with the run before.
//! 2. Each transport delivers its own stream in order, so when the receiver has taken
//!    that many packets from the other transport, it has taken the whole run before,
//!    and nothing of the runs after it (those come after another `SWITCH` there,
//!    which holds that transport until this run is taken).
//! 3. Held packets keep their transport's order (a FIFO), and a `SWITCH` among them
//!    holds again when its turn comes.
//!
//! What is held is bounded by the sender's credit on that transport: the transports'
//! own flow control stops a sender whose packets the receiver does not take.
//! Counts are `u64` (no wrap in any job's life). Only pairs with a split route pay
//! anything: the others never send a `SWITCH`, and the receiver skips the counting.

use std::collections::VecDeque;

use crate::netroute::Wire;

/// The sender's side, per peer: packets sent over each transport, and the last one
/// used.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Sent {
    count: [u64; 2],
    last: Option<Wire>,
}

impl Sent {
    /// Before sending over `w`: the `SWITCH` count to send first when the transport
    /// changes (the packets sent over the other one), else `None`.
    #[inline]
    pub(crate) fn switch(&self, w: Wire) -> Option<u64> {
        match self.last {
            Some(last) if last != w => Some(self.count[last.index()]),
            _ => None,
        }
    }

    /// After a packet (data or `SWITCH`) went out over `w`.
    #[inline]
    pub(crate) fn sent(&mut self, w: Wire) {
        self.count[w.index()] += 1;
        self.last = Some(w);
    }
}

/// What became of a packet from a split-route sender.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict<P> {
    /// Hand it to the core now.
    Deliver(P),
    /// A `SWITCH` that was consumed (nothing to hand on).
    Consumed,
    /// Its transport is held: it was queued.
    Held,
}

/// The receiver's side, per peer, over packets of type `P`.
pub(crate) struct Gates<P> {
    /// Packets taken from each transport (including `SWITCH`es).
    taken: [u64; 2],
    /// Transport `w` is held until `taken[other]` reaches this.
    until: [Option<u64>; 2],
    /// Packets of a held transport, in its order.
    held: [VecDeque<P>; 2],
}

impl<P> Default for Gates<P> {
    fn default() -> Self {
        Gates {
            taken: [0; 2],
            until: [None; 2],
            held: [VecDeque::new(), VecDeque::new()],
        }
    }
}

impl<P> Gates<P> {
    /// A packet arrived over `w`; `switch` is its `SWITCH` count if it is one.
    pub(crate) fn arrive(&mut self, w: Wire, pkt: P, switch: Option<u64>) -> Verdict<P> {
        if self.until[w.index()].is_some() || !self.held[w.index()].is_empty() {
            self.held[w.index()].push_back(pkt);
            return Verdict::Held;
        }
        if self.take(w, switch) {
            Verdict::Deliver(pkt)
        } else {
            Verdict::Consumed
        }
    }

    /// Counts a packet taken from `w`, which may release the other transport; a
    /// `SWITCH` may hold `w`. False for a `SWITCH` (consumed here).
    fn take(&mut self, w: Wire, switch: Option<u64>) -> bool {
        let (i, o) = (w.index(), w.other().index());
        self.taken[i] += 1;
        // The sender counted its `SWITCH`es too, so any packet may complete a count.
        if self.until[o].is_some_and(|n| self.taken[i] >= n) {
            self.until[o] = None;
        }
        match switch {
            Some(n) => {
                if self.taken[o] < n {
                    self.until[i] = Some(n);
                }
                false
            }
            None => true,
        }
    }

    /// The next held packet whose transport is no longer held, counted as taken
    /// (`switch` tells whether a packet is a `SWITCH`, and its count); `None` when
    /// none is ready. `SWITCH`es are consumed here, never returned.
    pub(crate) fn release(&mut self, switch: impl Fn(&P) -> Option<u64>) -> Option<P> {
        loop {
            let w = [Wire::Tcp, Wire::Ofi]
                .into_iter()
                .find(|w| self.until[w.index()].is_none() && !self.held[w.index()].is_empty())?;
            let pkt = self.held[w.index()].pop_front().expect("checked non-empty");
            if self.take(w, switch(&pkt)) {
                return Some(pkt);
            }
        }
    }

    /// Packets waiting while their transport is held.
    pub(crate) fn held(&self) -> usize {
        self.held[0].len() + self.held[1].len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A packet in the tests: its sequence number in the sender's order, or a switch.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum P {
        Data(u32),
        Switch(u64),
    }

    fn sw(p: &P) -> Option<u64> {
        match p {
            P::Switch(n) => Some(*n),
            P::Data(_) => None,
        }
    }

    /// The sender's order split into per-transport streams by `choose`, with
    /// `SWITCH`es, as the sender side would produce them.
    fn streams(n: u32, choose: impl Fn(u32) -> Wire) -> [Vec<P>; 2] {
        let mut s = Sent::default();
        let mut out = [Vec::new(), Vec::new()];
        for i in 0..n {
            let w = choose(i);
            if let Some(c) = s.switch(w) {
                out[w.index()].push(P::Switch(c));
                s.sent(w);
            }
            out[w.index()].push(P::Data(i));
            s.sent(w);
        }
        out
    }

    /// Delivers the two streams interleaved by `pick` (true: take from tcp next).
    fn deliver(streams: &[Vec<P>; 2], pick: impl Fn(usize) -> bool) -> Vec<u32> {
        let mut g = Gates::default();
        let mut pos = [0usize; 2];
        let mut got = Vec::new();
        let mut step = 0;
        let push = |got: &mut Vec<u32>, p: Option<P>| {
            if let Some(P::Data(i)) = p {
                got.push(i);
            }
        };
        while pos[0] < streams[0].len() || pos[1] < streams[1].len() {
            let mut w = if pick(step) { Wire::Tcp } else { Wire::Ofi };
            step += 1;
            if pos[w.index()] == streams[w.index()].len() {
                w = w.other();
            }
            let pkt = streams[w.index()][pos[w.index()]];
            pos[w.index()] += 1;
            if let Verdict::Deliver(p) = g.arrive(w, pkt, sw(&pkt)) {
                push(&mut got, Some(p));
            }
            while let Some(p) = g.release(sw) {
                push(&mut got, Some(p));
            }
        }
        assert_eq!(g.held(), 0, "packets left held");
        got
    }

    #[test]
    fn order_holds_under_every_interleaving_tried() {
        let choices: [&dyn Fn(u32) -> Wire; 4] = [
            &|i| if i % 3 == 0 { Wire::Ofi } else { Wire::Tcp },
            &|i| {
                if (i / 5) % 2 == 0 {
                    Wire::Tcp
                } else {
                    Wire::Ofi
                }
            },
            &|i| {
                if i.count_ones() % 2 == 0 {
                    Wire::Ofi
                } else {
                    Wire::Tcp
                }
            },
            &|_| Wire::Tcp,
        ];
        let picks: [&dyn Fn(usize) -> bool; 5] = [
            &|_| true,
            &|_| false,
            &|s| s % 2 == 0,
            &|s| (s / 7) % 2 == 0,
            &|s| (s * 2654435761) % 5 < 2,
        ];
        for choose in choices {
            let st = streams(60, choose);
            for pick in picks {
                let got = deliver(&st, pick);
                assert_eq!(got, (0..60).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn a_switch_holds_only_until_the_other_stream_is_taken() {
        let mut g: Gates<P> = Gates::default();
        // Sender: 2 over tcp, then a switch to ofi (after 2), then one over ofi.
        let v = g.arrive(Wire::Ofi, P::Switch(2), Some(2));
        assert_eq!(v, Verdict::Consumed);
        assert_eq!(g.arrive(Wire::Ofi, P::Data(2), None), Verdict::Held);
        assert_eq!(g.release(sw), None);
        assert_eq!(
            g.arrive(Wire::Tcp, P::Data(0), None),
            Verdict::Deliver(P::Data(0))
        );
        assert_eq!(g.release(sw), None);
        assert_eq!(
            g.arrive(Wire::Tcp, P::Data(1), None),
            Verdict::Deliver(P::Data(1))
        );
        assert_eq!(g.release(sw), Some(P::Data(2)));
        assert_eq!(g.held(), 0);
    }
}
