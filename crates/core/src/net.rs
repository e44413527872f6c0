//! This rank's transports behind one surface: send by route, poll all of them.
//!
//! Polling order is shared memory first, then tcp; an empty tcp poll is one atomic
//! load (its progress thread deposits arrivals in memory), so polling both costs
//! about what polling one does (seed 002's unified polling).

use nf_transport::shm::{ShmPacket, ShmTransport};
use nf_transport::tcp::{PeerState, TcpPacket, TcpTransport};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};

use crate::peers::{Peers, Route};

/// A packet from any transport.
pub(crate) enum Incoming {
    Shm(ShmPacket),
    Tcp(TcpPacket),
}

impl Packet for Incoming {
    #[inline]
    fn src(&self) -> usize {
        match self {
            Incoming::Shm(p) => p.src(),
            Incoming::Tcp(p) => p.src(),
        }
    }
    #[inline]
    fn meta(&self) -> &[u8] {
        match self {
            Incoming::Shm(p) => p.meta(),
            Incoming::Tcp(p) => p.meta(),
        }
    }
    #[inline]
    fn payload(&self) -> &[u8] {
        match self {
            Incoming::Shm(p) => p.payload(),
            Incoming::Tcp(p) => p.payload(),
        }
    }
}

/// The transports and the table saying which one reaches whom.
pub(crate) struct Net {
    pub peers: Peers,
    pub shm: Option<ShmTransport>,
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
        Ok(None)
    }

    /// Largest payload of one packet to `dest`.
    pub fn max_payload(&self, dest: usize) -> usize {
        match self.peers.routes[dest] {
            Route::Shm(_) => self.shm.as_ref().map_or(0, Messaging::max_payload),
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

    /// The first peer that is gone: (rank, pid, or 0 when remote). A same-host peer
    /// is gone when its process is; a remote one when its connection was lost or it
    /// left the job (a normal exit sends no error, but nothing more will come).
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
                Route::Tcp => {
                    let state = self.tcp.as_ref()?.peer_state(rank);
                    matches!(state, PeerState::Left | PeerState::Lost).then_some((rank, 0))
                }
                Route::Myself => None,
            })
    }
}
