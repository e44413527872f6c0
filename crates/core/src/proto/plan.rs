//! The choice of protocol: what the transports can do for each peer
//! ([`Capabilities`]), the size thresholds ([`Thresholds`]), and per peer the
//! choice for every size, cached as size classes ([`Plan`], [`Plans`]).
//!
//! [`decide`] is the rule (rule 2 of the module doc of `proto`) for one size; a
//! [`Plan`] evaluates it once per size class — the sizes between consecutive
//! thresholds, where the rule cannot change its answer — so a send looks its size
//! up among a handful of classes instead of testing routes and thresholds.

use super::stripe;
use super::{Choice, Protocol};

/// What the transport that carries some sizes of messages to one peer can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct WireCaps {
    /// Largest payload one packet carries (the frame).
    pub max_payload: usize,
    /// The receiver can read the sender's memory with one copy (CMA).
    pub cma_read: bool,
    /// The transport's provider can read the sender's registered memory (RMA read).
    pub rma_read: bool,
    /// Extra connections to the peer a message may be cut across (0: none).
    pub lanes: usize,
}

/// What the transports can do for messages to one peer: `small` carries payloads
/// below `split` bytes, `large` the others (the same when the route does not split
/// by size; then `split` is `usize::MAX`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// The transport of payloads below `split`.
    pub small: WireCaps,
    /// The transport of payloads from `split` up.
    pub large: WireCaps,
    /// Where the route changes transport.
    pub split: usize,
}

impl Capabilities {
    /// One transport for every size.
    pub(crate) fn single(w: WireCaps) -> Capabilities {
        Capabilities {
            small: w,
            large: w,
            split: usize::MAX,
        }
    }

    /// What the transport carrying `len`-byte payloads can do.
    #[inline]
    pub(crate) fn wire_for(&self, len: usize) -> &WireCaps {
        if len < self.split {
            &self.small
        } else {
            &self.large
        }
    }
}

/// The sizes from which protocols apply (settings; `rndv_copy` changes at run time
/// through `World::set_rndv_threshold`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Thresholds {
    /// Single-copy rendezvous from here (`NF_RNDV_THRESHOLD`).
    pub rndv_copy: usize,
    /// Network rendezvous from here (`NF_OFI_RNDV`).
    pub rndv_net: usize,
    /// Striping from here (`NF_TCP_STRIPE`).
    pub stripe: usize,
}

/// The protocol for a `len`-byte payload to a peer with `caps` (rule 2 of the
/// module doc of `proto`); `refused`: the peer refused a rendezvous once.
pub(crate) fn decide(caps: &Capabilities, th: &Thresholds, refused: bool, len: usize) -> Choice {
    let w = caps.wire_for(len);
    let frame = w.max_payload;
    let protocol = if w.lanes > 0 && len >= th.stripe && stripe::cuts(len, w.lanes, frame) {
        Protocol::Stripe
    } else if len <= frame {
        Protocol::Eager
    } else if w.cma_read && !refused && len >= th.rndv_copy {
        Protocol::RndvCopy
    } else if w.rma_read && !refused && len >= th.rndv_net {
        Protocol::RndvNet
    } else {
        Protocol::Fragments
    };
    Choice { protocol, frame }
}

/// Every size at which [`decide`] may change its answer for `caps` and `th`.
fn boundaries(caps: &Capabilities, th: &Thresholds) -> Vec<usize> {
    let mut b = vec![0, caps.split, th.rndv_copy, th.rndv_net, th.stripe];
    for w in [&caps.small, &caps.large] {
        b.push(w.max_payload.saturating_add(1));
        b.extend(stripe::bounds(w.max_payload));
    }
    b.sort_unstable();
    b.dedup();
    b
}

/// The choice for every payload size to one peer, as size classes: class `i`
/// holds the sizes from `classes[i].0` up to the next class's start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    classes: Vec<(usize, Choice)>,
}

impl Plan {
    /// Evaluates [`decide`] once per size class.
    pub(crate) fn build(caps: &Capabilities, th: &Thresholds, refused: bool) -> Plan {
        let mut classes: Vec<(usize, Choice)> = Vec::new();
        for from in boundaries(caps, th) {
            let c = decide(caps, th, refused, from);
            if classes.last().map(|(_, last)| *last) != Some(c) {
                classes.push((from, c));
            }
        }
        Plan { classes }
    }

    /// The protocol for a `len`-byte payload.
    #[inline]
    pub(crate) fn choose(&self, len: usize) -> Choice {
        let i = self.classes.partition_point(|(from, _)| *from <= len);
        self.classes[i - 1].1
    }

    /// Sizes below this go eager (the first class, when it is eager; else 0).
    pub(crate) fn eager_below(&self) -> usize {
        match self.classes.as_slice() {
            [(_, c), ..] if c.protocol != Protocol::Eager => 0,
            [_, (next, _), ..] => *next,
            _ => usize::MAX,
        }
    }
}

/// Every peer's capabilities and plan, and what may change a plan.
pub(crate) struct Plans {
    caps: Vec<Capabilities>,
    thresholds: Thresholds,
    /// Peers that refused a rendezvous (or whose rendezvous we could not offer).
    refused: Vec<bool>,
    plans: Vec<Plan>,
}

impl Plans {
    /// A plan per peer from its capabilities.
    pub(crate) fn new(caps: Vec<Capabilities>, thresholds: Thresholds) -> Plans {
        let refused = vec![false; caps.len()];
        let plans = caps
            .iter()
            .map(|c| Plan::build(c, &thresholds, false))
            .collect();
        Plans {
            caps,
            thresholds,
            refused,
            plans,
        }
    }

    /// The protocol for a `len`-byte payload to `dest`.
    #[inline]
    pub(crate) fn choose(&self, dest: usize, len: usize) -> Choice {
        self.plans[dest].choose(len)
    }

    /// The plan of messages to `dest`.
    pub(crate) fn plan(&self, dest: usize) -> &Plan {
        &self.plans[dest]
    }

    /// The thresholds in force.
    pub(crate) fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// Changes the single-copy threshold and rebuilds every plan.
    pub(crate) fn set_rndv_copy(&mut self, bytes: usize) {
        self.thresholds.rndv_copy = bytes;
        for (dest, plan) in self.plans.iter_mut().enumerate() {
            *plan = Plan::build(&self.caps[dest], &self.thresholds, self.refused[dest]);
        }
    }

    /// No more rendezvous to `dest` (it refused one): rebuilds its plan.
    pub(crate) fn refuse(&mut self, dest: usize) {
        if !self.refused[dest] {
            self.refused[dest] = true;
            self.plans[dest] = Plan::build(&self.caps[dest], &self.thresholds, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Protocol::*;

    const FRAME: usize = 64 << 10;
    const TH: Thresholds = Thresholds {
        rndv_copy: 4 << 20,
        rndv_net: 64 << 10,
        stripe: 1 << 20,
    };

    fn wire(cma_read: bool, rma_read: bool, lanes: usize) -> WireCaps {
        WireCaps {
            max_payload: FRAME,
            cma_read,
            rma_read,
            lanes,
        }
    }

    /// The protocols of `sizes` to a peer with `caps`.
    fn protocols(p: &Plan, sizes: &[usize]) -> Vec<Protocol> {
        sizes.iter().map(|&n| p.choose(n).protocol).collect()
    }

    /// Sizes around every boundary and some between them.
    fn probes(caps: &Capabilities, th: &Thresholds) -> Vec<usize> {
        let mut v: Vec<usize> = boundaries(caps, th)
            .into_iter()
            .flat_map(|b| [b.saturating_sub(1), b, b.saturating_add(1)])
            .collect();
        v.extend((0..64).map(|i| (1usize << (i % 40)) | (i * 977)));
        v
    }

    /// The cached plan answers as the rule does, at every size probed.
    fn assert_plan_is_the_rule(caps: &Capabilities, th: &Thresholds, refused: bool) {
        let p = Plan::build(caps, th, refused);
        for n in probes(caps, th) {
            assert_eq!(p.choose(n), decide(caps, th, refused, n), "{n} B, {caps:?}");
        }
    }

    #[test]
    fn a_same_host_peer_with_cma_goes_eager_fragments_then_single_copy() {
        let caps = Capabilities::single(wire(true, false, 0));
        let p = Plan::build(&caps, &TH, false);
        let sizes = [0, FRAME, FRAME + 1, (4 << 20) - 1, 4 << 20, 1 << 30];
        assert_eq!(
            protocols(&p, &sizes),
            [Eager, Eager, Fragments, Fragments, RndvCopy, RndvCopy]
        );
        assert_eq!(p.choose(FRAME + 1).frame, FRAME, "fragments fill a frame");
        assert_eq!(p.eager_below(), FRAME + 1);
        assert_plan_is_the_rule(&caps, &TH, false);
    }

    #[test]
    fn without_cma_a_same_host_peer_never_gets_single_copy() {
        let caps = Capabilities::single(wire(false, false, 0));
        let p = Plan::build(&caps, &TH, false);
        assert_eq!(
            protocols(&p, &[FRAME + 1, 4 << 20, 1 << 30]),
            [Fragments; 3]
        );
        assert_plan_is_the_rule(&caps, &TH, false);
    }

    #[test]
    fn a_peer_with_rma_read_gets_network_rendezvous_from_its_threshold_only() {
        let caps = Capabilities::single(WireCaps {
            max_payload: 16 << 10,
            ..wire(false, true, 0)
        });
        let p = Plan::build(&caps, &TH, false);
        assert_eq!(
            protocols(&p, &[16 << 10, (16 << 10) + 1, (64 << 10) - 1, 64 << 10]),
            [Eager, Fragments, Fragments, RndvNet]
        );
        // Without it: fragments.
        let plain = Capabilities::single(WireCaps {
            max_payload: 16 << 10,
            ..wire(false, false, 0)
        });
        assert_eq!(
            Plan::build(&plain, &TH, false).choose(1 << 20).protocol,
            Fragments
        );
        assert_plan_is_the_rule(&caps, &TH, false);
    }

    #[test]
    fn lanes_stripe_from_their_threshold_and_keep_stripable_sizes_off_the_eager_path() {
        let big = WireCaps {
            max_payload: 16 << 20,
            ..wire(false, false, 3)
        };
        let caps = Capabilities::single(big);
        let p = Plan::build(&caps, &TH, false);
        assert_eq!(
            protocols(&p, &[(1 << 20) - 1, 1 << 20, 16 << 20, 64 << 20]),
            [Eager, Stripe, Stripe, Stripe]
        );
        assert_eq!(
            p.eager_below(),
            1 << 20,
            "a stripable size takes the general path"
        );
        // One lane fewer than needed to cut: a message too small to cut is eager.
        let th = Thresholds { stripe: 1000, ..TH };
        let p = Plan::build(&caps, &th, false);
        assert_eq!(
            protocols(
                &p,
                &[1000, 2 * stripe::MIN_PIECE - 1, 2 * stripe::MIN_PIECE]
            ),
            [Eager, Eager, Stripe]
        );
        // Without lanes, the same sizes are eager.
        let none = Capabilities::single(WireCaps { lanes: 0, ..big });
        assert_eq!(
            Plan::build(&none, &TH, false).choose(16 << 20).protocol,
            Eager
        );
        assert_plan_is_the_rule(&caps, &th, false);
    }

    #[test]
    fn a_split_route_chooses_by_the_transport_of_each_size() {
        // tcp with lanes below 256 KiB, an ofi with RMA read from there.
        let caps = Capabilities {
            small: WireCaps {
                max_payload: 1 << 20,
                ..wire(false, false, 2)
            },
            large: WireCaps {
                max_payload: 32 << 10,
                ..wire(false, true, 0)
            },
            split: 256 << 10,
        };
        let th = Thresholds {
            stripe: 100 << 10,
            ..TH
        };
        let p = Plan::build(&caps, &th, false);
        assert_eq!(
            protocols(
                &p,
                &[(100 << 10) - 1, 100 << 10, (256 << 10) - 1, 256 << 10]
            ),
            [Eager, Stripe, Stripe, RndvNet]
        );
        assert_plan_is_the_rule(&caps, &th, false);
        assert_plan_is_the_rule(&caps, &th, true);
    }

    #[test]
    fn changing_the_threshold_or_a_refusal_rebuilds_the_plan() {
        let same_host = Capabilities::single(wire(true, false, 0));
        let net = Capabilities::single(wire(false, true, 0));
        let mut plans = Plans::new(vec![same_host, net], TH);
        assert_eq!(plans.choose(0, 1 << 20).protocol, Fragments);
        plans.set_rndv_copy(256 << 10);
        assert_eq!(plans.thresholds().rndv_copy, 256 << 10);
        assert_eq!(plans.choose(0, 1 << 20).protocol, RndvCopy, "new threshold");
        assert_eq!(plans.choose(0, (256 << 10) - 1).protocol, Fragments);
        assert_eq!(plans.choose(1, 1 << 20).protocol, RndvNet);
        // Peer 1 refused once: fragments to it from then on, peer 0 unchanged;
        // a later threshold change keeps the refusal.
        plans.refuse(1);
        assert_eq!(plans.choose(1, 1 << 20).protocol, Fragments);
        assert_eq!(plans.choose(0, 1 << 20).protocol, RndvCopy);
        plans.set_rndv_copy(1 << 20);
        assert_eq!(plans.choose(1, 1 << 20).protocol, Fragments);
        plans.refuse(0);
        assert_eq!(plans.choose(0, 1 << 30).protocol, Fragments);
        // Neither changes the eager sizes (the send path's fast check relies on it).
        assert_eq!(plans.plan(0).eager_below(), FRAME + 1);
        assert_eq!(plans.plan(1).eager_below(), FRAME + 1);
    }
}
