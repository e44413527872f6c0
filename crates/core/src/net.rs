//! This rank's transports behind one surface: send by route, poll all of them.
//!
//! Only transports that some route uses exist here, so a job that never leaves the
//! host polls shared memory alone. Polling order is shared memory, then tcp, then
//! ofi (seed 002's unified polling):
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

use std::time::{Duration, Instant};

use nf_transport::ofi::{OfiPacket, OfiTransport};
use nf_transport::shm::{ShmPacket, ShmTransport};
use nf_transport::tcp::{PeerState, TcpPacket, TcpTransport};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};

use crate::liveness::{Beat, Heartbeat};
use crate::peers::{Peers, Route};

/// Passes after ofi activity during which its queue is read on every pass.
const OFI_HOT_PASSES: u32 = 256;

/// A packet from any transport.
pub(crate) enum Incoming {
    Shm(ShmPacket),
    Tcp(TcpPacket),
    Ofi(OfiPacket),
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

/// The transports and the table saying which one reaches whom.
pub(crate) struct Net {
    pub peers: Peers,
    pub shm: Option<ShmTransport>,
    pub ofi: Option<OfiPoller>,
    pub tcp: Option<TcpTransport>,
}

impl Net {
    #[cold]
    fn no_route(dest: usize, what: &str) -> TransportError {
        TransportError::Config(format!(
            "rank {dest} has no {what} route, yet the peer table chose it"
        ))
    }

    /// Queues one packet to rank `dest` (never ourselves) on its transport.
    #[inline]
    pub fn try_send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        match self.peers.routes[dest] {
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

    /// The next packet from any transport, with its sender's rank.
    #[inline(always)]
    pub fn poll(&mut self) -> Result<Option<(usize, Incoming)>, TransportError> {
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

    /// Whether a waiting rank should park now: every peer is reached over tcp (its
    /// sockets and inbox can wake us; shared memory and ofi cannot) and spinning
    /// does not pay (`TcpTransport::spin_pays`).
    pub fn should_park(&self) -> bool {
        match (&self.shm, &self.ofi, &self.tcp) {
            (None, None, Some(tcp)) => !tcp.spin_pays(),
            _ => false,
        }
    }

    /// Sleeps until a network arrival may be waiting, at most `timeout` (only when
    /// [`Net::should_park`] can be true; otherwise returns at once).
    pub fn park(&mut self, timeout: Duration) -> Result<(), TransportError> {
        match (&self.shm, &self.ofi, self.tcp.as_mut()) {
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
        if let Some(o) = &self.ofi {
            out.push(("ofi", hex::encode(o.ofi.address())));
        }
        out
    }

    /// Largest payload of one packet to `dest`.
    pub fn max_payload(&self, dest: usize) -> usize {
        match self.peers.routes[dest] {
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
        let ofi = self.ofi.as_mut()?;
        let now = Instant::now();
        let peers = self.peers.routes.iter().enumerate();
        for (rank, _) in peers.filter(|(_, r)| **r == Route::Ofi) {
            if ofi.ofi.peer_lost(rank).is_some() {
                continue;
            }
            let lost = |why: String| TransportError::PeerLost { peer: rank, why };
            match ofi.heartbeat.step(rank, ofi.heard[rank], now) {
                Beat::Quiet => {}
                Beat::Ask => match ofi.send(rank, probe, &[]) {
                    Ok(SendStatus::Sent) => {}
                    Ok(SendStatus::NoCredit) => ofi.heartbeat.unask(rank),
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
        self.peers
            .routes
            .iter()
            .enumerate()
            .find_map(|(rank, route)| match route {
                Route::Shm(local) => {
                    let shm = self.shm.as_ref()?;
                    (!shm.peer_alive(*local)).then(|| (rank, shm.peer_pid(*local).unwrap_or(0)))
                }
                Route::Ofi => {
                    let lost = self.ofi.as_ref()?.ofi.peer_lost(rank).is_some();
                    lost.then_some((rank, 0))
                }
                Route::Tcp => {
                    let state = self.tcp.as_ref()?.peer_state(rank);
                    matches!(state, PeerState::Left | PeerState::Lost).then_some((rank, 0))
                }
                Route::Myself => None,
            })
    }
}
