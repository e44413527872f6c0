//! The progress engine: one step polls every transport and moves protocols forward.
//!
//! A step, in order:
//! 1. Flush queued control packets (CTS / DONE / FIN / NACK) that waited for credit.
//! 2. At top level only: deliver messages queued earlier (self-sends, fragments
//!    completed or packets received while nested), oldest first — so per-pair order
//!    holds across the queued and the direct path.
//! 3. Poll the transport for up to `BATCH` packets and hand each to the receive
//!    half of its protocol (`proto/`, one file per protocol):
//!    - `EAGER` → `eager.rs`: a whole message for a handler that may run now runs
//!      on the frame, inline here (the common case); otherwise it is copied and
//!      queued;
//!    - `FIRST` / `FRAG` → `fragments.rs`: reassemble, deliver when complete;
//!    - `RTS` → `rndv_copy.rs` (single-copy read; `CTS` to the sender from 256 KiB,
//!      its `DONE` completes the receive); `RTS_NET` → `rndv_net.rs` (a provider's
//!      RMA read, completed in step 4);
//!    - `CTS` / `FIN` / `NACK` → our waiting rendezvous send (`rndv.rs`);
//!    - `LEAD` → `stripe.rs`: take the message's parts from the lanes and deliver;
//!    - `PROBE` → answer `PROBE_ACK`; `PROBE_ACK` → nothing (that it arrived is the
//!      news: see `liveness.rs`).
//!
//!    A step never waits for a peer, so two ranks serving each other's rendezvous
//!    cannot deadlock.
//! 4. While a network rendezvous read is in flight (or packets wait behind one,
//!    `rndv_net.rs`'s order rule): pop the transport's RMA completions and finish
//!    those reads.
//!
//! A packet that breaks the protocol or names an unregistered handler is the
//! sender's fault, not the caller's: it is dropped, logged, and queued as an error
//! that [`World::poll`] returns — waits and collectives in progress carry on, so a
//! bad message can never leave a barrier half done.
//!
//! "Nested" means a handler is running or a send waits for credit; user handlers are
//! then never re-entered, only queued, so a handler can send without recursion. The
//! collectives' mailbox runs at any depth (it only stores), so a collective called
//! from inside a handler still completes.

use nf_transport::rma::RemoteRegion;
use nf_transport::{Packet, SendStatus};

use crate::am::{runs_at_any_depth, Am, OwnedAm};
use crate::error::CoreError;
use crate::proto::Rndv;
use crate::protocol::Meta;
use crate::world::{Nested, World};

/// Packets handled per step at most, so a flood cannot starve the caller.
const BATCH: usize = 16;

impl World {
    /// Makes progress once: runs handlers for what has arrived (at top level).
    /// Returns how many messages or packets were handled, or the oldest error a
    /// peer's bad message caused since the last call (the message was dropped).
    pub fn poll(&self) -> Result<usize, CoreError> {
        let n = self.progress()?;
        match self.state.borrow_mut().peer_errors.pop_front() {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    /// Keeps an error caused by a peer's message for `poll`; other errors go up.
    #[inline]
    pub(crate) fn absorb(&self, r: Result<(), CoreError>) -> Result<(), CoreError> {
        match r {
            Ok(()) => Ok(()),
            Err(e) => self.absorb_error(e),
        }
    }

    #[cold]
    fn absorb_error(&self, e: CoreError) -> Result<(), CoreError> {
        if !e.is_peer_fault() {
            return Err(e);
        }
        tracing::error!(error = %e, "dropped a bad message");
        self.state.borrow_mut().peer_errors.push_back(e);
        Ok(())
    }

    /// One progress step (the steps above).
    pub(crate) fn progress(&self) -> Result<usize, CoreError> {
        self.progress_until(|| false)
    }

    /// One progress step that ends early once `done` holds after a packet, so a
    /// wait returns as soon as its message is handled instead of polling again.
    #[inline]
    pub(crate) fn progress_until(
        &self,
        mut done: impl FnMut() -> bool,
    ) -> Result<usize, CoreError> {
        let mut n = 0;
        let backlog = {
            let st = self.state.borrow();
            !st.ctrl.is_empty() || !st.deferred.is_empty()
        };
        if backlog {
            n += self.progress_backlog()?;
        }
        for _ in 0..BATCH {
            let polled = self.net.borrow_mut().poll();
            match polled {
                Ok(Some((src, pkt))) => {
                    n += 1;
                    let handled = self.handle_packet(src, &pkt);
                    drop(pkt);
                    self.absorb(handled)?;
                    if done() {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => self.absorb(Err(e.into()))?,
            }
        }
        if self.gated.get() {
            n += self.pump_net_reads()?;
        }
        Ok(n)
    }

    /// Step 1 and 2: queued control packets, then (at top level) queued messages.
    #[cold]
    fn progress_backlog(&self) -> Result<usize, CoreError> {
        if !self.state.borrow().ctrl.is_empty() {
            self.flush_ctrl()?;
        }
        let deferred = !self.state.borrow().deferred.is_empty();
        if deferred && self.depth.get() == 0 {
            return self.deliver_deferred();
        }
        Ok(0)
    }

    fn deliver_deferred(&self) -> Result<usize, CoreError> {
        // Only what is queued now: handlers may queue more (self-sends).
        let queued = self.state.borrow().deferred.len();
        for _ in 0..queued {
            let Some(msg) = self.state.borrow_mut().deferred.pop_front() else {
                break;
            };
            let r = self.run_handler(&msg.as_am());
            self.state.borrow_mut().give_buffer(msg.payload);
            self.absorb(r)?;
        }
        Ok(queued)
    }

    /// Acts on one packet from rank `src` (the transport's numbering is already mapped).
    #[inline]
    fn handle_packet(&self, src: usize, pkt: &impl Packet) -> Result<(), CoreError> {
        if self.gated.get() && self.hold(src, pkt) {
            return Ok(());
        }
        // A whole message whose handler may run now: the common case, handled inline.
        if let Some((handler, header)) = Meta::eager_parts(pkt.meta()) {
            if self.runs_now(handler) {
                let payload = pkt.payload();
                return self.run_handler(&Am {
                    src,
                    handler,
                    header,
                    payload,
                });
            }
        }
        self.handle_other(src, pkt)
    }

    /// Every other packet, handed to its protocol's receive half: queued messages,
    /// fragments, rendezvous, control, garbage. Out of line, so that the common
    /// path stays small.
    #[inline(never)]
    pub(crate) fn handle_other(&self, src: usize, pkt: &impl Packet) -> Result<(), CoreError> {
        let protocol = |why: &str| CoreError::Protocol {
            src,
            why: why.to_owned(),
        };
        let meta = Meta::decode(pkt.meta()).map_err(|why| CoreError::Protocol { src, why })?;
        match meta {
            Meta::Eager { handler, header } => self.receive_eager(&Am {
                src,
                handler,
                header,
                payload: pkt.payload(),
            }),
            Meta::First {
                handler,
                total,
                header,
            } => self.receive_first(src, handler, total, header, pkt),
            Meta::Frag => self.receive_frag(src, pkt),
            Meta::Rts {
                handler,
                id,
                total,
                addr,
                header,
            } => self.serve_rendezvous(src, handler, id, total, addr, header),
            Meta::RtsNet {
                handler,
                id,
                total,
                base,
                key,
            } => {
                let region = RemoteRegion {
                    base,
                    key,
                    len: total,
                };
                self.serve_rendezvous_net(src, handler, id, region, pkt.payload())
            }
            Meta::Cts { id, addr, split } => {
                self.answer_rendezvous(src, id, Rndv::Cts { addr, split })
            }
            Meta::Done { id, ok } => self.finish_coop(src, id, ok),
            Meta::Fin { id } => self.answer_rendezvous(src, id, Rndv::Done),
            Meta::Nack { id } => self.answer_rendezvous(src, id, Rndv::Refused),
            Meta::Probe => {
                self.queue_ctrl(src, Meta::ProbeAck);
                self.flush_ctrl()
            }
            Meta::ProbeAck => Ok(()),
            Meta::Lead {
                handler,
                id,
                total,
                parts,
                header,
            } => self.assemble_stripe(src, handler, id, total, parts, header, pkt.payload()),
            Meta::Part { .. } => Err(protocol(
                "a part of a striped message on the main connection (parts travel on lanes)",
            )),
            // `net.rs` consumes these from peers with a split route.
            Meta::Switch { .. } => Err(protocol(
                "a transport switch from a peer whose route does not split by size",
            )),
        }
    }

    /// A peer's announced length, if it is within `NF_MAX_PAYLOAD`.
    pub(crate) fn checked_len(&self, src: usize, total: u64) -> Result<usize, CoreError> {
        match usize::try_from(total) {
            Ok(t) if t <= self.cfg.max_payload => Ok(t),
            _ => Err(CoreError::Protocol {
                src,
                why: format!(
                    "announced {total} B, above NF_MAX_PAYLOAD={}",
                    self.cfg.max_payload
                ),
            }),
        }
    }

    /// Queues a control packet for `dest` (sent by [`World::flush_ctrl`]).
    pub(crate) fn queue_ctrl(&self, dest: usize, meta: Meta<'static>) {
        self.state.borrow_mut().ctrl.push_back((dest, meta));
    }

    /// Sends queued control packets until one lacks credit.
    pub(crate) fn flush_ctrl(&self) -> Result<(), CoreError> {
        loop {
            let Some(&(dest, meta)) = self.state.borrow().ctrl.front() else {
                return Ok(());
            };
            if self
                .net
                .borrow_mut()
                .try_send(dest, 0, meta.encode().as_bytes(), &[])?
                == SendStatus::NoCredit
            {
                return Ok(());
            }
            self.state.borrow_mut().ctrl.pop_front();
        }
    }

    /// Runs a whole message's handler now, or queues it (see [`World::runs_now`]).
    pub(crate) fn deliver_owned(&self, msg: OwnedAm) -> Result<(), CoreError> {
        if !self.runs_now(msg.handler) {
            self.state.borrow_mut().deferred.push_back(msg);
            return Ok(());
        }
        let r = self.run_handler(&msg.as_am());
        self.state.borrow_mut().give_buffer(msg.payload);
        r
    }

    /// Whether a message for `handler` may run now: at top level with nothing queued
    /// ahead of it (per-pair order), or the collectives' mailbox, which only stores,
    /// or the start-up measurement's (`calibrate.rs`), which runs inside `init`.
    #[inline]
    pub(crate) fn runs_now(&self, handler: u16) -> bool {
        runs_at_any_depth(handler)
            || (self.depth.get() == 0 && self.state.borrow().deferred.is_empty())
    }

    /// Runs `am`'s handler (nested), or fails if none is registered.
    #[inline]
    pub(crate) fn run_handler(&self, am: &Am<'_>) -> Result<(), CoreError> {
        let h = self.handlers.borrow().get(am.handler);
        let Some(h) = h else {
            return Err(CoreError::UnknownHandler {
                src: am.src,
                id: am.handler,
            });
        };
        // The collectives' own messages are not counted: `leave` runs collectives
        // while it counts, and a peer's next collective arriving early would make
        // every round look busy (two ranks on one CPU never left).
        if !runs_at_any_depth(am.handler) {
            self.delivered.set(self.delivered.get() + 1);
        }
        let _nested = Nested::enter(self);
        h(self, am);
        Ok(())
    }
}
