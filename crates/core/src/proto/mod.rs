//! Messaging protocols: one file per protocol holding both halves, each chosen by
//! what the transport to a peer can do (its capabilities), never by its name.
//!
//! | protocol | file | needs from the transport | packets | sizes |
//! |---|---|---|---|---|
//! | eager | `eager.rs` | packets of up to `max_payload` bytes | `EAGER` | up to a frame |
//! | fragments | `fragments.rs` | packets, in order per pair | `FIRST`, `FRAG` | above a frame, where nothing below applies |
//! | single-copy rendezvous | `rndv_copy.rs` | `cma_read`: the receiver reads the sender's memory | `RTS`, `CTS`, `DONE`, `FIN`, `NACK` | from `NF_RNDV_THRESHOLD`, above a frame |
//! | network rendezvous | `rndv_net.rs` | `rma_read`: the provider reads the sender's registered memory | `RTS_NET`, `FIN`, `NACK` | from `NF_OFI_RNDV`, above a frame |
//! | striping | `stripe.rs` | `lanes`: extra connections to the peer | `PART` (on lanes), `LEAD` | from `NF_TCP_STRIPE`, when it cuts into two pieces or more |
//!
//! `rndv.rs` holds what both rendezvous share on the sender's side (ids, the wait
//! for `FIN` / `NACK`); `plan.rs` the choice.
//!
//! Rules:
//! 1. Capabilities ([`plan::Capabilities`]) are computed once per peer at start-up
//!    from its route (`Net::capabilities`, the one place that knows which transport
//!    can do what); a route that splits by size has one set for each side.
//! 2. For a payload of `len` bytes, on the transport that carries that size: striping
//!    if it has lanes, `len` reaches `NF_TCP_STRIPE` and the payload cuts; else eager
//!    if it fits a frame; else single-copy rendezvous if `cma_read` and `len` reaches
//!    the single-copy threshold; else network rendezvous if `rma_read` and `len`
//!    reaches `NF_OFI_RNDV`; else fragments. No rendezvous goes to a peer that refused
//!    one (`NACK`), or for which we could not offer one, once.
//! 3. The choice is cached per peer as size classes ([`plan::Plan`]), built at
//!    start-up and rebuilt when `World::set_rndv_threshold` changes the threshold or
//!    a peer refuses a rendezvous; `World::send` looks its size up once. The eager
//!    sizes never change after start-up (rule 2 tests them before any threshold that
//!    changes), so `World::send`'s inline common case checks one cached bound.
//! 4. A protocol that cannot go ahead after all (a refused or unregistrable
//!    rendezvous, lanes gone) has sent no part of the message and says so; the
//!    message then goes eager if it fits a frame, else in fragments.
//! 5. Receiving, `progress.rs` decodes a packet's kind and hands it to its
//!    protocol's receive half; `FIN`, `NACK` and `CTS` end or advance the sender's
//!    wait (`rndv.rs`).

mod eager;
mod fragments;
pub(crate) mod plan;
mod rndv;
mod rndv_copy;
pub(crate) mod rndv_net;
pub(crate) mod stripe;

use std::collections::{HashMap, VecDeque};

use nf_transport::SendStatus;

use crate::am::{HandlerId, OwnedAm};
use crate::buf::RecvBuf;
use crate::error::CoreError;
use crate::protocol::Meta;
use crate::wait::Backoff;
use crate::world::{Nested, RndvStats, World};

pub(crate) use fragments::Partial;
pub(crate) use rndv::Rndv;
pub(crate) use rndv_copy::CoopRecv;
pub(crate) use rndv_net::{HeldPacket, NetRead};

/// A messaging protocol (the table above).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// One packet.
    Eager,
    /// A first packet and fragments, copied through frames.
    Fragments,
    /// The receiver reads the sender's memory with one copy.
    RndvCopy,
    /// The provider reads the sender's registered memory.
    RndvNet,
    /// Pieces across the lanes and a lead on the main connection.
    Stripe,
}

/// The protocol of one size class, with the frame of the transport carrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Choice {
    /// The protocol.
    pub protocol: Protocol,
    /// Largest payload of one packet on the transport of this size (fragments and
    /// stripe pieces are at most this).
    pub frame: usize,
}

/// Mutable protocol state; borrowed briefly, never across a handler call.
#[derive(Default)]
pub(crate) struct State {
    /// Messages to deliver at the next top-level poll, in arrival order.
    pub deferred: VecDeque<OwnedAm>,
    /// Per source rank, the message whose fragments are arriving.
    pub partial: Vec<Option<Partial>>,
    /// Control packets (CTS / DONE / FIN / NACK) waiting for credit.
    pub ctrl: VecDeque<(usize, Meta<'static>)>,
    /// Our rendezvous sends in flight.
    pub rndv: HashMap<u32, Rndv>,
    /// Cooperative rendezvous receives waiting for the sender's DONE, by (source, id).
    pub coop: HashMap<(usize, u32), CoopRecv>,
    /// The id of our next rendezvous send.
    pub next_rndv: u32,
    /// Collective messages by (sequence, round, source).
    pub mailbox: HashMap<(u32, u16, usize), Vec<u8>>,
    /// Errors caused by peers' bad messages, for `poll` to report.
    pub peer_errors: VecDeque<CoreError>,
    /// Spare receive buffers, so large receives do not fault fresh pages every time.
    pub spare: Vec<Vec<u8>>,
    /// Per source rank, the network rendezvous we are reading from it.
    pub net_read: Vec<Option<NetRead>>,
    /// Per source rank, message packets held until its `net_read` completes.
    pub held: Vec<VecDeque<HeldPacket>>,
    /// Rendezvous counters.
    pub stats: RndvStats,
}

impl State {
    /// The state of a job of `size` ranks.
    pub(crate) fn new(size: usize) -> State {
        State {
            partial: (0..size).map(|_| None).collect(),
            net_read: (0..size).map(|_| None).collect(),
            held: (0..size).map(|_| VecDeque::new()).collect(),
            ..State::default()
        }
    }

    /// A receive buffer with room for `total` bytes, reusing the largest spare.
    pub(crate) fn take_buffer(&mut self, total: usize) -> RecvBuf {
        RecvBuf::with_room(self.spare.pop().unwrap_or_default(), total)
    }

    /// Keeps a receive buffer for reuse (the four largest).
    pub(crate) fn give_buffer(&mut self, b: RecvBuf) {
        let bytes = b.into_inner();
        if self.spare.len() < 4 && !bytes.is_empty() {
            self.spare.push(bytes);
            self.spare.sort_by_key(Vec::len);
        }
    }
}

impl World {
    /// Sends a message to another rank by the protocol its plan gives its size
    /// (rules 3 and 4); the caller checked the arguments.
    pub(crate) fn send_planned(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        let choice = self.plans.borrow().choose(dest, payload.len());
        let sent = match choice.protocol {
            Protocol::Eager => return self.send_eager(dest, handler, header, payload),
            Protocol::Fragments => false,
            Protocol::Stripe => self.send_striped(dest, handler, header, payload, choice.frame)?,
            Protocol::RndvCopy => self.send_rendezvous(dest, handler, header, payload)?,
            Protocol::RndvNet => self.send_rendezvous_net(dest, handler, header, payload)?,
        };
        if sent {
            Ok(())
        } else if payload.len() <= choice.frame {
            self.send_eager(dest, handler, header, payload)
        } else {
            self.send_fragments(dest, handler, header, payload, choice.frame)
        }
    }

    /// No more rendezvous to `dest` (rule 2): its plan is rebuilt.
    pub(crate) fn refuse_rendezvous(&self, dest: usize) {
        self.plans.borrow_mut().refuse(dest);
    }

    /// Sends one packet, polling (without running user handlers) while out of credit.
    #[inline]
    pub(crate) fn send_packet(
        &self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        self.send_packet_of(dest, payload.len(), meta, payload)
    }

    /// [`World::send_packet`] of one packet of a message of `len` payload bytes (its
    /// size picks the transport where the route to `dest` splits by size).
    #[inline]
    pub(crate) fn send_packet_of(
        &self,
        dest: usize,
        len: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        if self.net.borrow_mut().try_send(dest, len, meta, payload)? == SendStatus::Sent {
            return Ok(());
        }
        self.send_packet_blocked(dest, len, meta, payload)
    }

    /// [`World::send_packet`] once the receiver had no room: poll and retry.
    #[inline(never)]
    fn send_packet_blocked(
        &self,
        dest: usize,
        len: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        self.retry_for_credit(|| Ok(self.net.borrow_mut().try_send(dest, len, meta, payload)?))
    }

    /// Polls (without running user handlers) and calls `try_send` again until it
    /// sends; a dead peer ends the wait with its error.
    pub(crate) fn retry_for_credit(
        &self,
        mut try_send: impl FnMut() -> Result<SendStatus, CoreError>,
    ) -> Result<(), CoreError> {
        let mut backoff = Backoff::for_credit(self);
        loop {
            {
                let _nested = Nested::enter(self);
                let progressed = self.progress()?;
                if let Some(dead) = backoff.after(progressed) {
                    return Err(dead);
                }
            }
            if try_send()? == SendStatus::Sent {
                return Ok(());
            }
        }
    }
}
