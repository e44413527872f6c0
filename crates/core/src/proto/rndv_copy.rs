//! Single-copy rendezvous: the receiver reads the sender's buffer straight out of
//! its memory. Needs from the transport: `cma_read` (a same-host peer whose memory
//! `process_vm_readv` / `process_vm_writev` reach: the shm route, with the kernel
//! allowing it).
//!
//! 1. The sender sends `RTS` (handler, id, total, its buffer's address, header) and
//!    waits (`rndv.rs`).
//! 2. The receiver takes a recycled buffer. Below [`COOP_MIN`] it reads the whole
//!    payload, answers `FIN` (or `NACK` if the read failed) and delivers.
//! 3. From [`COOP_MIN`] up the copy is cooperative: the receiver first sends `CTS`
//!    with the address of the second half of its buffer and reads the first half,
//!    while the sender — idle anyway in a blocking send — writes the second half and
//!    answers `DONE` (ok or not). On `DONE` the receiver reads the second half itself
//!    if the sender could not write it, then answers `FIN` (or `NACK`) and delivers.
//!    Two cores copy at once.
//! 4. A receive step never waits: the receive half is a state machine driven by
//!    packets (`CoopRecv` by source and id), so two ranks serving each other's
//!    rendezvous cannot deadlock.

use nf_transport::shm::cma;

use crate::am::{HandlerId, OwnedAm};
use crate::error::CoreError;
use crate::protocol::Meta;
use crate::world::World;

/// Rendezvous size from which sender and receiver copy halves at the same time.
const COOP_MIN: usize = 256 * 1024;

/// A cooperative rendezvous receive: we read the first part while the sender
/// writes the rest into `msg`'s buffer; it completes when the sender's DONE arrives.
pub(crate) struct CoopRecv {
    /// The message being received.
    pub msg: OwnedAm,
    /// Its length.
    pub total: usize,
    /// Where the sender's share starts.
    pub split: usize,
    /// The sender's buffer in its process.
    pub sender_addr: u64,
    /// Our share was read.
    pub read_ok: bool,
}

impl World {
    /// Offers `payload` for a single-copy read by `dest` and waits until it is read.
    /// Returns false if `dest` could not read it (the caller sends it another way).
    pub(crate) fn send_rendezvous(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<bool, CoreError> {
        let id = self.start_rndv();
        let addr = payload.as_ptr() as u64;
        let meta = Meta::Rts {
            handler,
            id,
            total: payload.len() as u64,
            addr,
            header,
        }
        .encode();
        let outcome = self
            .send_packet(dest, meta.as_bytes(), &[])
            .and_then(|()| self.rendezvous_wait(dest, id, payload));
        let read = self.end_rndv_send(dest, id, outcome, "with a single-copy read")?;
        if read {
            self.state.borrow_mut().stats.shm_sent += 1;
        }
        Ok(read)
    }

    /// The sender's half of step 3: writes bytes `split..` of `payload` to `addr` in
    /// `dest`'s process and answers `DONE`.
    pub(crate) fn write_share(
        &self,
        dest: usize,
        id: u32,
        addr: u64,
        split: u64,
        payload: &[u8],
    ) -> Result<(), CoreError> {
        let pid = self.net.borrow().shm_pid(dest).unwrap_or(0);
        let ok = usize::try_from(split)
            .ok()
            .and_then(|s| payload.get(s..))
            .is_some_and(|part| cma::write(pid, addr, part).is_ok());
        self.send_packet(dest, Meta::Done { id, ok }.encode().as_bytes(), &[])
    }

    /// `RTS`: steps 2 and 3 on the receiver's side.
    pub(crate) fn serve_rendezvous(
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

    /// The sender's `DONE` for cooperative receive `id`: its half is in (or not).
    pub(crate) fn finish_coop(&self, src: usize, id: u32, ok: bool) -> Result<(), CoreError> {
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
}
