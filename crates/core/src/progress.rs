//! The progress engine: one step polls every transport and moves protocols forward.
//!
//! A step, in order:
//! 1. Flush queued control packets (CTS / DONE / FIN / NACK) that waited for credit.
//! 2. At top level only: deliver messages queued earlier (self-sends, fragments
//!    completed or packets received while nested), oldest first — so per-pair order
//!    holds across the queued and the direct path.
//! 3. Poll the transport for up to `BATCH` packets and act on each:
//!    - `EAGER` → deliver from the frame (top level) or copy and queue (nested);
//!    - `FIRST` / `FRAG` → reassemble, deliver when complete;
//!    - `RTS` → read the sender's buffer with one copy, send FIN (or NACK), deliver.
//!      From `COOP_MIN` bytes up, first send CTS so the sender writes the second
//!      half into our buffer while we read the first (two cores copy at once), and
//!      deliver when its DONE arrives. A step never waits, so two ranks serving each
//!      other's rendezvous cannot deadlock;
//!    - `RTS_NET` (a sender on an ofi route) → register a receive buffer and issue
//!      the provider's RMA read of the sender's region; the step does not wait for it
//!      (step 4);
//!    - `CTS` → note it for our waiting rendezvous send; `DONE` → complete a receive;
//!    - `FIN` / `NACK` → complete our rendezvous send;
//!    - `LEAD` (a striped message's last piece, `stripe.rs`) → take its parts from
//!      the tcp lanes, waiting for them by polling the lanes alone, and deliver;
//!    - `PROBE` → answer `PROBE_ACK`; `PROBE_ACK` → nothing (that it arrived is the
//!      news: see `liveness.rs`).
//! 4. While an ofi read is in flight (or packets wait behind one): pop the
//!    transport's RMA completions; a completed read is deregistered, FIN goes to the
//!    sender and the message is delivered as any rendezvous message is; a failed one
//!    sends NACK (the sender resends in fragments), or, when its sender is lost,
//!    nothing (the dead-peer checks report it). A read the provider had no slot for
//!    is issued again here.
//!
//! Per-pair order across ofi reads: while a read from rank `s` is in flight, every
//! later packet from `s` that carries a message (`EAGER`, `FIRST`, `FRAG`, `RTS*`)
//! is copied into a queue for `s` instead of handled, and that queue is replayed, in
//! arrival order, right after the read's message is delivered (or refused), stopping
//! again at the next `RTS_NET`. The transport delivers `s`'s packets in send order,
//! so `s`'s messages reach their handlers in send order: the read's message before
//! any packet that came after its `RTS_NET`. (Today a sender waits for FIN before it
//! sends anything else, so the queue holds nothing in practice; the rule keeps the
//! order whatever the sender does.) Control packets pass: they belong to no message.
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

use nf_transport::rma::{NativeRma, RemoteRegion, RemoteSpan};
use nf_transport::shm::cma;
use nf_transport::{Packet, SendStatus};

use crate::am::{Am, OwnedAm, CALIBRATE_HANDLER, COLL_HANDLER};
use crate::buf::RecvBuf;
use crate::error::CoreError;
use crate::protocol::{Meta, MAX_AM_HEADER};
use crate::world::{net_tag, CoopRecv, HeldPacket, Nested, NetRead, Partial, Rndv, World};

/// Packets handled per step at most, so a flood cannot starve the caller.
const BATCH: usize = 16;

/// Rendezvous size from which sender and receiver copy halves at the same time.
const COOP_MIN: usize = 256 * 1024;

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
    fn absorb(&self, r: Result<(), CoreError>) -> Result<(), CoreError> {
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

    /// Every other packet: queued messages, fragments, rendezvous, control, garbage.
    /// Out of line, so that the common path stays small.
    #[inline(never)]
    fn handle_other(&self, src: usize, pkt: &impl Packet) -> Result<(), CoreError> {
        let protocol = |why: &str| CoreError::Protocol {
            src,
            why: why.to_owned(),
        };
        let meta = Meta::decode(pkt.meta()).map_err(|why| CoreError::Protocol { src, why })?;
        match meta {
            Meta::Eager { handler, header } => {
                let am = Am {
                    src,
                    handler,
                    header,
                    payload: pkt.payload(),
                };
                if self.runs_now(handler) {
                    return self.run_handler(&am);
                }
                let mut st = self.state.borrow_mut();
                let payload = RecvBuf::copy_of(st.spare.pop().unwrap_or_default(), am.payload);
                st.deferred.push_back(OwnedAm {
                    src,
                    handler,
                    header: header.to_vec(),
                    payload,
                });
                Ok(())
            }
            Meta::First {
                handler,
                total,
                header,
            } => {
                let total = self.checked_len(src, total)?;
                let mut st = self.state.borrow_mut();
                if st.partial[src].is_some() {
                    return Err(protocol("new message while the previous one is incomplete"));
                }
                let mut payload = st.take_buffer(total);
                if !payload.push(pkt.payload()) {
                    return Err(protocol("first fragment longer than the message"));
                }
                let msg = OwnedAm {
                    src,
                    handler,
                    header: header.to_vec(),
                    payload,
                };
                st.partial[src] = Some(Partial { msg, total });
                Ok(())
            }
            Meta::Frag => {
                let complete = {
                    let mut st = self.state.borrow_mut();
                    let p = st.partial[src]
                        .as_mut()
                        .ok_or_else(|| protocol("fragment without a first packet"))?;
                    if !p.msg.payload.push(pkt.payload()) {
                        st.partial[src] = None;
                        return Err(protocol("fragments exceed the announced length"));
                    }
                    p.msg.payload.filled().len() == p.total
                };
                if complete {
                    let p = self.state.borrow_mut().partial[src]
                        .take()
                        .expect("present: checked above");
                    self.deliver_owned(p.msg)?;
                }
                Ok(())
            }
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
                self.complete_rendezvous(src, id, Rndv::Cts { addr, split })
            }
            Meta::Done { id, ok } => self.finish_coop(src, id, ok),
            Meta::Fin { id } => self.complete_rendezvous(src, id, Rndv::Done),
            Meta::Nack { id } => self.complete_rendezvous(src, id, Rndv::Refused),
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

    fn checked_len(&self, src: usize, total: u64) -> Result<usize, CoreError> {
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

    /// A striped message's lead: its parts from the lanes, then its own piece, as
    /// one message (`stripe.rs`).
    #[allow(clippy::too_many_arguments)]
    fn assemble_stripe(
        &self,
        src: usize,
        handler: u16,
        id: u32,
        total: u64,
        parts: u16,
        header: &[u8],
        last: &[u8],
    ) -> Result<(), CoreError> {
        let total = self.checked_len(src, total)?;
        let buf = self.state.borrow_mut().take_buffer(total);
        let payload = {
            let mut net = self.net.borrow_mut();
            match net.lanes.as_mut() {
                Some(l) => l.assemble(src, id, usize::from(parts), buf, total, last)?,
                None => {
                    return Err(CoreError::Protocol {
                        src,
                        why: "a striped message, but this rank has no tcp lanes (is \
                              NF_TCP_LANES the same on every rank?)"
                            .into(),
                    })
                }
            }
        };
        self.deliver_owned(OwnedAm {
            src,
            handler,
            header: header.to_vec(),
            payload,
        })
    }

    fn serve_rendezvous(
        &self,
        src: usize,
        handler: u16,
        id: u32,
        total: u64,
        addr: u64,
        header: &[u8],
    ) -> Result<(), CoreError> {
        let total = match self.checked_len(src, total) {
            Ok(t) => t,
            Err(e) => {
                self.queue_ctrl(src, Meta::Nack { id });
                return Err(e);
            }
        };
        let pid = self.net.borrow().shm_pid(src).unwrap_or(0);
        let mut payload = self.state.borrow_mut().take_buffer(total);
        let split = if total >= COOP_MIN {
            (total / 2) & !4095
        } else {
            total
        };
        if split < total {
            // The sender writes bytes split.. while we read ..split.
            self.queue_ctrl(
                src,
                Meta::Cts {
                    id,
                    addr: payload.addr_of(split),
                    split: split as u64,
                },
            );
            self.flush_ctrl()?;
        }
        let read_ok = match cma::read(pid, addr, payload.room(0..split)) {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(src, pid, error = %e, "single-copy read failed; asking the sender to resend");
                false
            }
        };
        let msg = OwnedAm {
            src,
            handler,
            header: header.to_vec(),
            payload,
        };
        let coop = CoopRecv {
            msg,
            total,
            split,
            sender_addr: addr,
            read_ok,
        };
        if split < total {
            self.state.borrow_mut().coop.insert((src, id), coop);
            return Ok(());
        }
        self.complete_receive(src, id, coop)
    }

    /// Queues a message packet from `src` behind its ofi read in flight (or behind
    /// packets already queued so); false if it may be handled now.
    #[cold]
    fn hold(&self, src: usize, pkt: &impl Packet) -> bool {
        if !Meta::carries_message(pkt.meta()) {
            return false;
        }
        let mut st = self.state.borrow_mut();
        let Some(held) = st.held.get_mut(src) else {
            return false;
        };
        if held.is_empty() && st.net_read[src].is_none() {
            return false;
        }
        st.held[src].push_back(HeldPacket {
            src,
            meta: pkt.meta().to_vec(),
            payload: pkt.payload().to_vec(),
        });
        true
    }

    /// `RTS_NET`: registers a receive buffer and reads the sender's `region` into it
    /// with the ofi transport's RMA; completes in [`World::pump_net_reads`].
    fn serve_rendezvous_net(
        &self,
        src: usize,
        handler: u16,
        id: u32,
        region: RemoteRegion,
        header: &[u8],
    ) -> Result<(), CoreError> {
        let refuse = |e: CoreError| {
            self.queue_ctrl(src, Meta::Nack { id });
            self.flush_ctrl()?;
            Err(e)
        };
        let total = match self.checked_len(src, region.len) {
            Ok(t) => t,
            Err(e) => return refuse(e),
        };
        let protocol = |why: &str| CoreError::Protocol {
            src,
            why: why.to_owned(),
        };
        if header.len() > MAX_AM_HEADER {
            return refuse(protocol("RTS_NET header above MAX_AM_HEADER"));
        }
        if self.state.borrow().net_read[src].is_some() {
            return refuse(protocol("RTS_NET while its previous one is being read"));
        }
        let mut payload = self.state.borrow_mut().take_buffer(total);
        let registered = {
            let mut net = self.net.borrow_mut();
            match net.ofi.as_mut() {
                Some(o) if o.ofi.rma_supported() => {
                    let ptr = payload.room(0..total).as_mut_ptr();
                    // SAFETY: the buffer moves into `state.net_read[src]` below and
                    // stays there, untouched, until the read's completion is popped and
                    // the region deregistered (`finish_net_read`); should the world be
                    // dropped first, its transports go before its state (field order),
                    // and closing the transport waits for the operation.
                    unsafe { o.ofi.register_memory(ptr, total) }
                }
                _ => Err(nf_transport::TransportError::Unsupported(
                    "native RMA over ofi (no ofi transport, or its provider lacks FI_RMA)",
                )),
            }
        };
        let region_id = match registered {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(src, error = %e, "cannot read a rendezvous over ofi; asking the sender to resend");
                self.state.borrow_mut().give_buffer(payload);
                self.queue_ctrl(src, Meta::Nack { id });
                return self.flush_ctrl();
            }
        };
        let read = NetRead {
            id,
            msg: OwnedAm {
                src,
                handler,
                header: header.to_vec(),
                payload,
            },
            total,
            region: region_id,
            from: RemoteSpan {
                region,
                off: 0,
                len: region.len,
            },
            issued: false,
        };
        self.state.borrow_mut().net_read[src] = Some(read);
        self.gated.set(true);
        self.ofi_rndv_started();
        self.issue_net_read(src)
    }

    /// Hands `src`'s pending read to the provider if it is not yet; one without a
    /// free slot stays pending for the next step.
    fn issue_net_read(&self, src: usize) -> Result<(), CoreError> {
        let issued = {
            let mut st = self.state.borrow_mut();
            let Some(r) = st.net_read[src].as_mut().filter(|r| !r.issued) else {
                return Ok(());
            };
            let into = [(r.msg.payload.room(0..r.total).as_mut_ptr(), r.total)];
            let mut net = self.net.borrow_mut();
            let Some(o) = net.ofi.as_mut() else {
                return Ok(());
            };
            // SAFETY: the buffer stays in `state.net_read[src]`, untouched, until this
            // read's completion is popped (see `serve_rendezvous_net`).
            let status = unsafe { o.ofi.read(src, &into, &[r.from], net_tag(src, r.id)) };
            if let Ok(SendStatus::Sent) = status {
                r.issued = true;
            }
            status
        };
        match issued {
            Ok(_) => Ok(()),
            Err(e) => {
                tracing::warn!(src, error = %e, "an ofi rendezvous read could not be issued");
                self.finish_net_read(src, false)
            }
        }
    }

    /// Step 4 (see the module doc): completes finished ofi reads, issues waiting ones.
    #[cold]
    fn pump_net_reads(&self) -> Result<usize, CoreError> {
        let mut n = 0;
        let mut progressed = false;
        loop {
            let done = {
                let mut net = self.net.borrow_mut();
                let Some(o) = net.ofi.as_mut() else {
                    break;
                };
                if !o.ofi.rma_done_waiting() && !progressed {
                    // Reads complete only as the provider progresses; poll may have
                    // skipped the queue this pass.
                    progressed = true;
                    o.ofi.progress()?;
                }
                o.ofi.pop_rma_done()
            };
            let Some(done) = done else {
                break;
            };
            let (src, id) = ((done.tag >> 32) as usize, done.tag as u32);
            let ours = self
                .state
                .borrow()
                .net_read
                .get(src)
                .and_then(Option::as_ref)
                .is_some_and(|r| r.id == id && r.issued);
            if !ours {
                tracing::warn!(tag = done.tag, "ofi completion of no rendezvous read");
                continue;
            }
            n += 1;
            if let Err(e) = &done.result {
                tracing::warn!(src, error = %e, "an ofi rendezvous read failed");
            }
            self.finish_net_read(src, done.result.is_ok())?;
        }
        let waiting: Vec<usize> = {
            let st = self.state.borrow();
            let unissued =
                |(_, r): &(usize, &Option<NetRead>)| r.as_ref().is_some_and(|r| !r.issued);
            st.net_read
                .iter()
                .enumerate()
                .filter(unissued)
                .map(|(s, _)| s)
                .collect()
        };
        for src in waiting {
            self.issue_net_read(src)?;
        }
        self.update_gate();
        Ok(n)
    }

    /// Ends `src`'s ofi read: deregisters, then FIN and delivery, or NACK (or
    /// nothing, when `src` is lost), then handles what was held behind it.
    fn finish_net_read(&self, src: usize, ok: bool) -> Result<(), CoreError> {
        let Some(mut read) = self.state.borrow_mut().net_read[src].take() else {
            return Ok(());
        };
        self.ofi_rndv_ended(read.region);
        let result = if ok {
            read.msg.payload.set_filled(read.total);
            self.state.borrow_mut().stats.ofi_received += 1;
            self.queue_ctrl(src, Meta::Fin { id: read.id });
            self.flush_ctrl()
                .and_then(|()| self.deliver_owned(read.msg))
        } else {
            self.state.borrow_mut().give_buffer(read.msg.payload);
            let lost = self
                .net
                .borrow()
                .ofi
                .as_ref()
                .is_some_and(|o| o.ofi.peer_lost(src).is_some());
            if lost {
                // What it sent after this message must not be handled without it.
                let dropped = std::mem::take(&mut self.state.borrow_mut().held[src]);
                if !dropped.is_empty() {
                    tracing::warn!(
                        src,
                        count = dropped.len(),
                        "dropped messages queued behind a failed read from a lost peer"
                    );
                }
                self.update_gate();
                return Ok(());
            }
            self.queue_ctrl(src, Meta::Nack { id: read.id });
            self.flush_ctrl()
        };
        self.absorb(result)?;
        self.replay_held(src)
    }

    /// Handles the packets held behind `src`'s read, in arrival order, until the next
    /// read from `src` starts.
    fn replay_held(&self, src: usize) -> Result<(), CoreError> {
        loop {
            let next = {
                let mut st = self.state.borrow_mut();
                if st.net_read[src].is_some() {
                    None
                } else {
                    st.held[src].pop_front()
                }
            };
            let Some(pkt) = next else {
                break;
            };
            let handled = self.handle_other(src, &pkt);
            self.absorb(handled)?;
        }
        self.update_gate();
        Ok(())
    }

    /// Whether packets must be checked against reads in flight or held packets.
    fn update_gate(&self) {
        let st = self.state.borrow();
        let busy = st.net_read.iter().any(Option::is_some) || st.held.iter().any(|h| !h.is_empty());
        self.gated.set(busy);
    }

    /// The sender's DONE for cooperative receive `id`: its half is in (or not).
    fn finish_coop(&self, src: usize, id: u32, ok: bool) -> Result<(), CoreError> {
        let coop = self.state.borrow_mut().coop.remove(&(src, id));
        let why = || CoreError::Protocol {
            src,
            why: format!("DONE for unknown rendezvous {id}"),
        };
        let mut coop = coop.ok_or_else(why)?;
        if !ok && coop.read_ok {
            // It could not write; read its half ourselves.
            let pid = self.net.borrow().shm_pid(src).unwrap_or(0);
            let from = coop.sender_addr + coop.split as u64;
            coop.read_ok =
                cma::read(pid, from, coop.msg.payload.room(coop.split..coop.total)).is_ok();
        }
        self.complete_receive(src, id, coop)
    }

    /// Ends a rendezvous receive: FIN and delivery, or NACK so the sender resends.
    fn complete_receive(&self, src: usize, id: u32, mut coop: CoopRecv) -> Result<(), CoreError> {
        if !coop.read_ok {
            self.state.borrow_mut().give_buffer(coop.msg.payload);
            self.queue_ctrl(src, Meta::Nack { id });
            return self.flush_ctrl();
        }
        coop.msg.payload.set_filled(coop.total);
        self.queue_ctrl(src, Meta::Fin { id });
        self.flush_ctrl()?;
        self.deliver_owned(coop.msg)
    }

    fn complete_rendezvous(&self, src: usize, id: u32, outcome: Rndv) -> Result<(), CoreError> {
        let mut st = self.state.borrow_mut();
        match st.rndv.get_mut(&id) {
            Some(s @ Rndv::Waiting) => {
                *s = outcome;
                Ok(())
            }
            _ => Err(CoreError::Protocol {
                src,
                why: format!("reply to unknown rendezvous {id}"),
            }),
        }
    }

    fn queue_ctrl(&self, dest: usize, meta: Meta<'static>) {
        self.state.borrow_mut().ctrl.push_back((dest, meta));
    }

    /// Sends queued control packets until one lacks credit.
    fn flush_ctrl(&self) -> Result<(), CoreError> {
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

    fn deliver_owned(&self, msg: OwnedAm) -> Result<(), CoreError> {
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
    fn runs_now(&self, handler: u16) -> bool {
        handler == COLL_HANDLER
            || handler == CALIBRATE_HANDLER
            || (self.depth.get() == 0 && self.state.borrow().deferred.is_empty())
    }

    #[inline]
    fn run_handler(&self, am: &Am<'_>) -> Result<(), CoreError> {
        let h = self.handlers.borrow().get(am.handler);
        let Some(h) = h else {
            return Err(CoreError::UnknownHandler {
                src: am.src,
                id: am.handler,
            });
        };
        self.delivered.set(self.delivered.get() + 1);
        let _nested = Nested::enter(self);
        h(self, am);
        Ok(())
    }
}
