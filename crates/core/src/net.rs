//! This rank's transports behind one surface: send by route, poll all of them.
//!
//! Only transports that some route uses exist here, so a job that never leaves the
//! host polls shared memory alone. Polling order is shared memory, then tcp, then
//! ofi (unified polling: each empty poll is cheap, so all of them run in turn):
//! - an empty shm poll reads one cache line per ring or box;
//! - an empty tcp poll is one atomic load (its progress thread deposits arrivals
//!   in memory), plus one `recv` per connection the rank reads itself for a while
//!   after traffic on it (`NF_TCP_HOT_US`: 500 µs when shm routes exist);
//! - an empty ofi poll reads the completion queue, which also drives the provider's
//!   progress — with the tcp provider that is an `epoll_wait` system call, a hundred
//!   times a shm poll. So while shm routes exist, [`OfiPoller`] reads it only on
//!   every Nth empty pass (`NF_OFI_POLL_EVERY`), and on every pass for a while after
//!   it found something or we sent over it (so an ofi conversation runs at full
//!   speed); without shm routes it reads it on every pass. While a rendezvous over
//!   ofi is in flight (either end: the reader waits for its completion, and the
//!   owner of the memory must drive the provider for the read to move), it reads it
//!   on every pass too.
//!
//! A peer on another host may be reached over tcp for small messages and ofi for
//! large ones, or the reverse (`netroute.rs`): [`Net::try_send`] picks the transport
//! by the message's size, and `order.rs` keeps the pair's order across the two (a
//! `SWITCH` packet where the sender changes transport; the receiver holds a transport
//! until the other has delivered what came before). Jobs without such a split skip
//! all of it: [`Net::poll`] checks one flag.

use std::time::{Duration, Instant};

use nf_transport::ofi::{OfiPacket, OfiTransport};
use nf_transport::shm::{ShmPacket, ShmTransport};
use nf_transport::tcp::{PeerState, TcpPacket, TcpTransport};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};

use crate::lanes::Lanes;
use crate::liveness::{Beat, Heartbeat};
use crate::netroute::Wire;
use crate::order::{Gates, Sent, Verdict};
use crate::peers::{Peers, Route};
use crate::proto::plan::{Capabilities, WireCaps};
use crate::protocol::Meta;

/// Passes after ofi activity during which its queue is read on every pass.
const OFI_HOT_PASSES: u32 = 256;

/// A packet from any transport.
pub(crate) enum Incoming {
    Shm(ShmPacket),
    Tcp(TcpPacket),
    Ofi(OfiPacket),
}

impl Incoming {
    /// The network transport it came over (`None`: shared memory).
    #[inline]
    fn wire(&self) -> Option<Wire> {
        match self {
            Incoming::Shm(_) => None,
            Incoming::Tcp(_) => Some(Wire::Tcp),
            Incoming::Ofi(_) => Some(Wire::Ofi),
        }
    }

    fn switch(&self) -> Option<u64> {
        Meta::switch_count(self.meta())
    }
}

impl Packet for Incoming {
    #[inline]
    fn src(&self) -> usize {
        match self {
            Incoming::Shm(p) => p.src(),
            Incoming::Tcp(p) => p.src(),
            Incoming::Ofi(p) => p.src(),
        }
    }
    #[inline]
    fn meta(&self) -> &[u8] {
        match self {
            Incoming::Shm(p) => p.meta(),
            Incoming::Tcp(p) => p.meta(),
            Incoming::Ofi(p) => p.meta(),
        }
    }
    #[inline]
    fn payload(&self) -> &[u8] {
        match self {
            Incoming::Shm(p) => p.payload(),
            Incoming::Tcp(p) => p.payload(),
            Incoming::Ofi(p) => p.payload(),
        }
    }
}

/// The ofi transport with its polling schedule (see the module doc) and the
/// heartbeats of its peers (`liveness.rs`).
pub(crate) struct OfiPoller {
    pub ofi: OfiTransport,
    /// Packets received from each rank, ever (what a heartbeat watches).
    heard: Vec<u64>,
    heartbeat: Heartbeat,
    /// Read the queue on every `every`-th pass when idle (1: always).
    every: u32,
    /// Passes until the next idle read.
    countdown: u32,
    /// Passes left in which every pass reads the queue.
    hot: u32,
    /// Rendezvous over ofi in flight, sent or received: while any is, every pass
    /// reads the queue.
    pub rndv: u32,
}

impl OfiPoller {
    /// Polls `ofi` on every pass, or on every `every`-th idle pass when `shared` (shm
    /// routes exist whose latency an ofi read would add to); a peer silent for
    /// `dead_after` after a probe is lost.
    pub fn new(ofi: OfiTransport, every: u32, shared: bool, dead_after: Duration) -> OfiPoller {
        let every = if shared { every.max(1) } else { 1 };
        let size = ofi.size();
        OfiPoller {
            ofi,
            heard: vec![0; size],
            heartbeat: Heartbeat::new(size, dead_after),
            every,
            countdown: every,
            hot: 0,
            rndv: 0,
        }
    }

    fn send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        self.hot = OFI_HOT_PASSES;
        self.ofi.try_send(dest, meta, payload)
    }

    fn poll(&mut self) -> Result<Option<OfiPacket>, TransportError> {
        if self.hot == 0 && self.rndv == 0 {
            self.countdown -= 1;
            if self.countdown > 0 {
                return Ok(None);
            }
            self.countdown = self.every;
        } else {
            self.hot = self.hot.saturating_sub(1);
        }
        let got = self.ofi.poll();
        match &got {
            Ok(None) => {}
            Ok(Some(p)) => {
                self.heard[p.src()] += 1;
                self.hot = OFI_HOT_PASSES;
            }
            Err(_) => self.hot = OFI_HOT_PASSES,
        }
        got
    }
}

/// Packets taken from the transports per [`Net::poll`] call at most while looking
/// for one that is not held (`order.rs`); the rest wait in the transports.
const ORDERED_TRIES: usize = 64;

/// The transports and the table saying which one reaches whom.
pub(crate) struct Net {
    pub peers: Peers,
    pub shm: Option<ShmTransport>,
    pub ofi: Option<OfiPoller>,
    pub tcp: Option<TcpTransport>,
    /// Extra tcp connections that large tcp messages are striped across
    /// (`lanes.rs`; `None` with `NF_TCP_LANES` = 1). Read only for a lead's parts.
    pub lanes: Option<Lanes>,
    /// Some peer's route splits by size: sends count, polls keep order (`order.rs`).
    split: bool,
    /// Per rank: packets we sent it over each transport (split routes only).
    sent: Vec<Sent>,
    /// Per rank: packets taken from it over each transport, and those held.
    gates: Vec<Gates<Incoming>>,
    /// Ranks with held packets.
    holding: Vec<usize>,
}

impl Net {
    /// The transports of a connected rank with their peer table.
    pub fn new(
        peers: Peers,
        shm: Option<ShmTransport>,
        ofi: Option<OfiPoller>,
        tcp: Option<TcpTransport>,
        lanes: Option<Lanes>,
    ) -> Net {
        let size = peers.routes.len();
        let split = peers.net.iter().flatten().any(|n| n.is_split());
        let mut net = Net {
            split,
            sent: vec![Sent::default(); if split { size } else { 0 }],
            gates: (0..if split { size } else { 0 })
                .map(|_| Gates::default())
                .collect(),
            holding: Vec::new(),
            peers,
            shm,
            ofi,
            tcp,
            lanes,
        };
        if net.tcp_alone().is_some() {
            // Nothing else to poll: a wait for the rest of a large body costs no one.
            if let Some(t) = net.tcp.as_mut() {
                t.set_body_wait(Some(crate::netconf::TCP_BODY_WAIT));
            }
        }
        net
    }

    #[cold]
    fn no_route(dest: usize, what: &str) -> TransportError {
        TransportError::Config(format!(
            "rank {dest} has no {what} route, yet the peer table chose it"
        ))
    }

    /// Queues one packet to rank `dest` (never ourselves) on the transport that
    /// carries messages of `len` payload bytes to it (a message's fragments all go
    /// the way the whole message goes).
    #[inline]
    pub fn try_send(
        &mut self,
        dest: usize,
        len: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        if !self.split {
            return self.send_on(self.peers.routes[dest], dest, meta, payload);
        }
        self.send_ordered(dest, self.peers.route_for(dest, len), meta, payload)
    }

    /// A send to a peer that may have a split route: a `SWITCH` first where the
    /// transport changes, and every packet counted (`order.rs`).
    fn send_ordered(
        &mut self,
        dest: usize,
        route: Route,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        let Some(wire) = Wire::of(route) else {
            return self.send_on(route, dest, meta, payload);
        };
        if let Some(after) = self.sent[dest].switch(wire) {
            let switch = Meta::Switch { after }.encode();
            match self.send_on(route, dest, switch.as_bytes(), &[])? {
                SendStatus::Sent => self.sent[dest].sent(wire),
                SendStatus::NoCredit => return Ok(SendStatus::NoCredit),
            }
        }
        let status = self.send_on(route, dest, meta, payload)?;
        if status == SendStatus::Sent {
            self.sent[dest].sent(wire);
        }
        Ok(status)
    }

    /// Queues one packet to `dest` on `route`.
    #[inline]
    fn send_on(
        &mut self,
        route: Route,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        match route {
            Route::Shm(local) => self
                .shm
                .as_mut()
                .ok_or_else(|| Net::no_route(dest, "shm"))?
                .try_send(local, meta, payload),
            Route::Ofi => self
                .ofi
                .as_mut()
                .ok_or_else(|| Net::no_route(dest, "ofi"))?
                .send(dest, meta, payload),
            Route::Tcp => self
                .tcp
                .as_mut()
                .ok_or_else(|| Net::no_route(dest, "tcp"))?
                .try_send(dest, meta, payload),
            Route::Myself => Err(TransportError::NoPeer {
                dest,
                size: self.peers.routes.len(),
            }),
        }
    }

    /// The next packet from any transport, with its sender's rank, in each sender's
    /// order.
    #[inline(always)]
    pub fn poll(&mut self) -> Result<Option<(usize, Incoming)>, TransportError> {
        if !self.split {
            return self.poll_any();
        }
        self.poll_ordered()
    }

    /// [`Net::poll`] with split routes: held packets whose turn came first, then
    /// arrivals, each through its sender's gates.
    #[inline(never)]
    fn poll_ordered(&mut self) -> Result<Option<(usize, Incoming)>, TransportError> {
        if let Some(got) = self.release_held() {
            return Ok(Some(got));
        }
        for _ in 0..ORDERED_TRIES {
            let Some((src, pkt)) = self.poll_any()? else {
                return Ok(None);
            };
            let Some(wire) = pkt
                .wire()
                .filter(|_| self.peers.net[src].is_some_and(|n| n.is_split()))
            else {
                return Ok(Some((src, pkt)));
            };
            let switch = pkt.switch();
            match self.gates[src].arrive(wire, pkt, switch) {
                Verdict::Deliver(pkt) => return Ok(Some((src, pkt))),
                Verdict::Held if !self.holding.contains(&src) => self.holding.push(src),
                Verdict::Held | Verdict::Consumed => {}
            }
            // A packet taken may have released the other transport's held ones.
            if let Some(got) = self.release_held() {
                return Ok(Some(got));
            }
        }
        Ok(None)
    }

    /// A held packet whose transport is no longer held, if any.
    fn release_held(&mut self) -> Option<(usize, Incoming)> {
        let mut i = 0;
        while i < self.holding.len() {
            let src = self.holding[i];
            let got = self.gates[src].release(Incoming::switch);
            if self.gates[src].held() == 0 {
                self.holding.swap_remove(i);
            } else {
                i += 1;
            }
            if let Some(pkt) = got {
                return Some((src, pkt));
            }
        }
        None
    }

    /// The next packet from any transport, as it comes.
    #[inline(always)]
    fn poll_any(&mut self) -> Result<Option<(usize, Incoming)>, TransportError> {
        if let Some(shm) = self.shm.as_mut() {
            if let Some(p) = shm.poll()? {
                return Ok(Some((self.peers.local[p.src()], Incoming::Shm(p))));
            }
        }
        if let Some(tcp) = self.tcp.as_mut() {
            if let Some(p) = tcp.poll()? {
                return Ok(Some((p.src(), Incoming::Tcp(p))));
            }
        }
        if let Some(ofi) = self.ofi.as_mut() {
            if let Some(p) = ofi.poll()? {
                return Ok(Some((p.src(), Incoming::Ofi(p))));
            }
        }
        Ok(None)
    }

    /// Whether a waiting rank should park now (`wait.rs`'s module doc): every peer is
    /// on this host, the wait is for an arrival (`arrivals`) and our segment's
    /// doorbell is rung; or every peer is reached over tcp (its sockets and inbox can
    /// wake us) and spinning does not pay (`TcpTransport::spin_pays`). Never with
    /// ofi peers, or shm and tcp peers both: nothing wakes such a rank for both.
    pub fn should_park(&self, arrivals: bool) -> bool {
        match (&self.shm, &self.ofi, &self.tcp) {
            (Some(shm), None, None) => arrivals && shm.sleeps(),
            (None, None, Some(tcp)) => !tcp.spin_pays(),
            _ => false,
        }
    }

    /// The tcp transport, when it is the only one this rank polls.
    fn tcp_alone(&self) -> Option<&TcpTransport> {
        match (&self.shm, &self.ofi, &self.tcp) {
            (None, None, Some(tcp)) => Some(tcp),
            _ => None,
        }
    }

    /// Sleeps until an arrival may be waiting, at most `timeout`: on the shm doorbell
    /// or in tcp's `poll(2)` (only where [`Net::should_park`] can be true; otherwise
    /// returns at once).
    pub fn park(&mut self, timeout: Duration) -> Result<(), TransportError> {
        match (&mut self.shm, &self.ofi, &mut self.tcp) {
            (Some(shm), None, None) => {
                shm.sleep(timeout);
                Ok(())
            }
            (None, None, Some(tcp)) => tcp.park(timeout),
            _ => Ok(()),
        }
    }

    /// Where this rank's network transports can be reached: (transport, address) with
    /// tcp's `ip:port` and ofi's endpoint name in hex, as wire-up published them.
    pub fn addresses(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(t) = &self.tcp {
            out.push(("tcp", t.local_addr().to_string()));
        }
        if let Some(l) = &self.lanes {
            out.extend(l.addresses().map(|a| ("tcp-lane", a.to_string())));
        }
        if let Some(o) = &self.ofi {
            out.push(("ofi", hex::encode(o.ofi.address())));
        }
        out
    }

    /// What the transports can do for messages to `dest` (`proto/plan.rs`): the
    /// one place where a route becomes capabilities. `cma`: same-host peers can
    /// read each other's memory (the kernel allows `process_vm_readv`).
    pub fn capabilities(&self, dest: usize, cma: bool) -> Capabilities {
        let wire = |route: Route| WireCaps {
            max_payload: self.max_payload_on(route),
            cma_read: cma && matches!(route, Route::Shm(_)),
            rma_read: route == Route::Ofi
                && self.ofi.as_ref().is_some_and(|o| o.ofi.rma_supported()),
            lanes: match &self.lanes {
                Some(l) if route == Route::Tcp && l.reaches(dest) => l.count(),
                _ => 0,
            },
        };
        match &self.peers.net[dest] {
            Some(n) if n.is_split() => Capabilities {
                small: wire(n.small.route()),
                large: wire(n.large.route()),
                split: n.from,
            },
            _ => Capabilities::single(wire(self.peers.routes[dest])),
        }
    }

    fn max_payload_on(&self, route: Route) -> usize {
        match route {
            Route::Shm(_) => self.shm.as_ref().map_or(0, Messaging::max_payload),
            Route::Ofi => self.ofi.as_ref().map_or(0, |o| o.ofi.max_payload()),
            Route::Tcp => self.tcp.as_ref().map_or(0, Messaging::max_payload),
            Route::Myself => usize::MAX,
        }
    }

    /// The process id of `peer` when it shares our memory system (single copy works).
    pub fn shm_pid(&self, peer: usize) -> Option<u32> {
        match self.peers.routes[peer] {
            Route::Shm(local) => self.shm.as_ref()?.peer_pid(local),
            _ => None,
        }
    }

    /// One heartbeat check of every ofi peer not known lost (`liveness.rs`): sends
    /// `probe` where a question is due. Returns a peer that is gone: its probe failed
    /// at once, or it has not answered for `dead_after`.
    pub fn heartbeat(&mut self, probe: &[u8]) -> Option<TransportError> {
        self.ofi.as_ref()?;
        let now = Instant::now();
        for rank in 0..self.peers.routes.len() {
            // Peers reached over tcp for some sizes have a connection to watch.
            if self.peers.routes[rank] != Route::Ofi || self.peers.reaches_over(rank, Wire::Tcp) {
                continue;
            }
            let ofi = self.ofi.as_mut()?;
            if ofi.ofi.peer_lost(rank).is_some() {
                continue;
            }
            let lost = |why: String| TransportError::PeerLost { peer: rank, why };
            match ofi.heartbeat.step(rank, ofi.heard[rank], now) {
                Beat::Quiet => {}
                Beat::Ask => match self.send_on(Route::Ofi, rank, probe, &[]) {
                    Ok(SendStatus::Sent) => {}
                    Ok(SendStatus::NoCredit) => self.ofi.as_mut()?.heartbeat.unask(rank),
                    Err(e) => return Some(lost(format!("a liveness probe failed: {e}"))),
                },
                Beat::Silent(for_) => {
                    return Some(lost(format!(
                        "it has not answered a liveness probe for {for_:.1?} (it is gone, \
                         its link is down, or it has not polled for that long)"
                    )))
                }
            }
        }
        None
    }

    /// The first peer that is gone: (rank, pid, or 0 when remote). A same-host peer
    /// is gone when its process is; a tcp peer when its connection was lost or it
    /// left the job (a normal exit sends no error, but nothing more will come); an
    /// ofi peer when an operation to it failed or made no progress for `dead_after`.
    pub fn dead_peer(&self) -> Option<(usize, u32)> {
        let ofi_lost = |rank| {
            self.ofi
                .as_ref()
                .is_some_and(|o| o.ofi.peer_lost(rank).is_some())
        };
        let tcp_gone = |rank| {
            self.tcp
                .as_ref()
                .is_some_and(|t| matches!(t.peer_state(rank), PeerState::Left | PeerState::Lost))
                || self.lanes.as_ref().is_some_and(|l| l.lost(rank))
        };
        self.peers
            .routes
            .iter()
            .enumerate()
            .find_map(|(rank, route)| match route {
                Route::Shm(local) => {
                    let shm = self.shm.as_ref()?;
                    (!shm.peer_alive(*local)).then(|| (rank, shm.peer_pid(*local).unwrap_or(0)))
                }
                Route::Ofi | Route::Tcp => {
                    let gone = (self.peers.reaches_over(rank, Wire::Ofi) && ofi_lost(rank))
                        || (self.peers.reaches_over(rank, Wire::Tcp) && tcp_gone(rank));
                    gone.then_some((rank, 0))
                }
                Route::Myself => None,
            })
    }
}
