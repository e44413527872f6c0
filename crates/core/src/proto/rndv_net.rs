//! Network rendezvous: the receiver's transport reads the sender's registered
//! memory with its provider's RMA (no copy at either end). Needs from the
//! transport: `rma_read` (today the ofi transport, its provider granting `FI_RMA`).
//!
//! 1. The sender registers its payload in place and sends `RTS_NET` (handler, id,
//!    total, the region's base and key; the header rides as the packet's payload,
//!    since both would not fit `META_MAX`), then waits (`rndv.rs`). Its polls drive
//!    the provider, which serves the read only then under manual progress, so waits
//!    with a network rendezvous in flight yield but never nap. A payload it cannot
//!    register goes in fragments, and no more rendezvous go to that peer.
//! 2. The receiver takes a recycled buffer, registers it and issues one read
//!    ([`World::serve_rendezvous_net`]); the progress step does not wait for it.
//!    A read the provider has no slot for stays pending and is issued again later.
//! 3. Each progress step while a read is in flight pops the transport's RMA
//!    completions ([`World::pump_net_reads`]): a completed read is deregistered,
//!    `FIN` goes to the sender and the message is delivered as any rendezvous
//!    message is; a failed one sends `NACK` (the sender resends in fragments), or,
//!    when its sender is lost, nothing (the dead-peer checks report it).
//!
//! Per-pair order (the held-packets rule): while a read from rank `s` is in flight,
//! every later packet from `s` that carries a message (`EAGER`, `FIRST`, `FRAG`,
//! `RTS*`) is copied into a queue for `s` instead of handled, and that queue is
//! replayed, in arrival order, right after the read's message is delivered (or
//! refused), stopping again at the next `RTS_NET`. The transport delivers `s`'s
//! packets in send order, so `s`'s messages reach their handlers in send order:
//! the read's message before any packet that came after its `RTS_NET`. (Today a
//! sender waits for FIN before it sends anything else, so the queue holds nothing
//! in practice; the rule keeps the order whatever the sender does.) Control packets
//! pass: they belong to no message. A read that fails because its sender is lost
//! drops what was held behind it.

use nf_transport::rma::{NativeRma, RegionId, RemoteRegion, RemoteSpan};
use nf_transport::{Packet, SendStatus};

use crate::am::{HandlerId, OwnedAm};
use crate::error::CoreError;
use crate::protocol::{Meta, MAX_AM_HEADER};
use crate::world::World;

/// A rendezvous receive over ofi: the provider reads the sender's region into
/// `msg`'s buffer, which is registered as `region`; completes with the read's
/// completion (tagged by [`net_tag`]).
pub(crate) struct NetRead {
    pub id: u32,
    pub msg: OwnedAm,
    pub total: usize,
    pub region: RegionId,
    pub from: RemoteSpan,
    /// The read was handed to the provider (else it waits for a free slot).
    pub issued: bool,
}

/// The RMA tag of the read of rendezvous `id` from `src`.
pub(crate) fn net_tag(src: usize, id: u32) -> u64 {
    (src as u64) << 32 | u64::from(id)
}

/// A message packet that arrived while a rendezvous read from its sender was in
/// flight, copied so that its receive buffer goes back to the transport.
#[derive(Clone)]
pub(crate) struct HeldPacket {
    pub src: usize,
    pub meta: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Packet for HeldPacket {
    fn src(&self) -> usize {
        self.src
    }
    fn meta(&self) -> &[u8] {
        &self.meta
    }
    fn payload(&self) -> &[u8] {
        &self.payload
    }
}

impl World {
    /// Offers `payload` to `dest`, a rank on an ofi route, for a read with the
    /// provider's RMA: registered in place (no copy), announced by `RTS_NET`, and
    /// waited for as [`World::send_rendezvous`] does (our polls drive the provider,
    /// which serves the read only then under manual progress). Returns false if it
    /// could not be registered or `dest` could not read it (the caller sends
    /// fragments, and no more rendezvous go to `dest`).
    pub(crate) fn send_rendezvous_net(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<bool, CoreError> {
        let registered = {
            let mut net = self.net.borrow_mut();
            let Some(ofi) = net.ofi.as_mut() else {
                return Ok(false);
            };
            // SAFETY: `payload` stays borrowed (so mapped and unchanged) until the
            // deregistration below, which every path out of this function passes;
            // RTS_NET offers it to the receiver for reading only, so nothing writes
            // through this shared borrow.
            let region = unsafe {
                ofi.ofi
                    .register_memory(payload.as_ptr().cast_mut(), payload.len())
            };
            region.and_then(|region| match ofi.ofi.remote(region) {
                Ok(remote) => Ok((region, remote)),
                Err(e) => {
                    let _ = ofi.ofi.deregister(region);
                    Err(e)
                }
            })
        };
        let (region, remote) = match registered {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(dest, error = %e, "could not register a message for an ofi read; sending fragments");
                self.refuse_rendezvous(dest);
                return Ok(false);
            }
        };
        let id = self.start_rndv();
        let meta = Meta::RtsNet {
            handler,
            id,
            total: payload.len() as u64,
            base: remote.base,
            key: remote.key,
        }
        .encode();
        self.ofi_rndv_started();
        let outcome = self
            .send_packet(dest, meta.as_bytes(), header)
            .and_then(|()| self.rendezvous_wait(dest, id, payload));
        self.ofi_rndv_ended(region);
        let read = self.end_rndv_send(dest, id, outcome, "with an ofi read")?;
        if read {
            self.state.borrow_mut().stats.ofi_sent += 1;
        }
        Ok(read)
    }

    /// Counts an ofi rendezvous in flight (its ofi queue is then read on every pass).
    pub(crate) fn ofi_rndv_started(&self) {
        self.ofi_rndv_active.set(self.ofi_rndv_active.get() + 1);
        if let Some(o) = self.net.borrow_mut().ofi.as_mut() {
            o.rndv += 1;
        }
    }

    /// Ends what [`World::ofi_rndv_started`] began and forgets `region`.
    pub(crate) fn ofi_rndv_ended(&self, region: RegionId) {
        self.ofi_rndv_active
            .set(self.ofi_rndv_active.get().saturating_sub(1));
        if let Some(o) = self.net.borrow_mut().ofi.as_mut() {
            o.rndv = o.rndv.saturating_sub(1);
            if let Err(e) = o.ofi.deregister(region) {
                tracing::warn!(error = %e, "deregistering a rendezvous buffer");
            }
        }
    }

    /// Queues a message packet from `src` behind its ofi read in flight (or behind
    /// packets already queued so); false if it may be handled now.
    #[cold]
    pub(crate) fn hold(&self, src: usize, pkt: &impl Packet) -> bool {
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
    pub(crate) fn serve_rendezvous_net(
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

    /// Step 3: completes finished ofi reads, issues waiting ones.
    #[cold]
    pub(crate) fn pump_net_reads(&self) -> Result<usize, CoreError> {
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
}
