//! Messaging on the ofi transport (steps 3 and 4 of `mod.rs`): sending packets within
//! the peers' windows, receiving them in order, and the packet type.

use std::time::Instant;

use super::ffi::{self, Fail, RxBuf, Sent};
use super::order::Verdict;
use super::wire::{Header, HEADER_LEN};
use super::{ofi_error, OfiTransport, Op};
use crate::error::TransportError;
use crate::{Messaging, Packet, SendStatus, META_MAX};

impl OfiTransport {
    /// Turns an arrived buffer into a packet in order (or holds it, or refuses it).
    pub(super) fn accept(&mut self, buf: RxBuf) -> Result<Option<OfiPacket>, TransportError> {
        let bad = |src: u32, why: String| TransportError::BadPacket {
            transport: "ofi",
            src,
            why,
        };
        let h = Header::decode(self.cfg.cookie, buf.bytes()).map_err(|why| bad(u32::MAX, why))?;
        let src = h.src as usize;
        if src >= self.size || src == self.me {
            return Err(bad(
                h.src,
                format!("no such sender in a job of {} ranks", self.size),
            ));
        }
        if h.meta_len as usize > META_MAX {
            return Err(bad(
                h.src,
                format!("{} B of metadata exceeds {META_MAX} B", h.meta_len),
            ));
        }
        let pkt = OfiPacket {
            src,
            meta_end: HEADER_LEN + h.meta_len as usize,
            len: buf.bytes().len(),
            data: Data::Pool(buf),
        };
        match self
            .order
            .arrive(src, h.seq)
            .map_err(|why| bad(h.src, why))?
        {
            Verdict::Deliver => {
                while let Some(next) = self.order.next_held(src) {
                    self.ready.push_back(next);
                }
                Ok(Some(pkt))
            }
            Verdict::Hold => {
                self.order.hold(src, h.seq, pkt.into_owned());
                Ok(None)
            }
        }
    }
}

pub(super) fn recv_error(f: Fail) -> TransportError {
    if f.code == ffi::FI_ETRUNC {
        return TransportError::BadPacket {
            transport: "ofi",
            src: u32::MAX,
            why: format!(
                "a message longer than our receive buffers arrived ({}); do all ranks use \
                 the same max_payload?",
                f.text
            ),
        };
    }
    TransportError::RecvFailed {
        transport: "ofi",
        why: format!("{} (fi_errno {})", f.text, f.code),
    }
}

impl Messaging for OfiTransport {
    type Packet = OfiPacket;

    fn max_payload(&self) -> usize {
        self.cfg.max_payload
    }

    fn try_send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        crate::error::check_packet(meta, payload, self.cfg.max_payload)?;
        self.reachable(dest)?;
        let seq = self.next_seq[dest];
        if self.ep.busy() == self.cfg.queue_limit || !self.windows.may_send(dest, seq) {
            self.progress()?;
            let window = !self.windows.may_send(dest, seq);
            if self.ep.busy() == self.cfg.queue_limit || window {
                self.expire_stuck();
                self.reachable(dest)?;
                self.stats.no_credit += 1;
                self.stats.window_waits += u64::from(window);
                return Ok(SendStatus::NoCredit);
            }
        }
        let head = Header {
            src: self.me as u32,
            seq,
            meta_len: meta.len() as u8,
            payload_len: payload.len() as u32,
        };
        let (cookie, total) = (self.cfg.cookie, HEADER_LEN + meta.len() + payload.len());
        let sent = self
            .ep
            .send(dest, true, |buf| {
                head.encode(cookie, buf);
                buf[HEADER_LEN..HEADER_LEN + meta.len()].copy_from_slice(meta);
                buf[HEADER_LEN + meta.len()..total].copy_from_slice(payload);
                total
            })
            .map_err(|f| {
                ofi_error(
                    format!("sending {total} B to rank {dest}"),
                    f,
                    "the provider refused the send",
                )
            })?;
        match sent {
            Sent::Busy => return self.refused(dest),
            Sent::Injected => self.stats.injected += 1,
            Sent::Posted(slot) => {
                self.slot_op[slot as usize] = Op::Send(dest, seq);
                self.windows.posted(dest, seq);
                self.slot_since[slot as usize] = Instant::now();
                self.stats.sent += 1;
            }
        }
        self.stalled_since[dest] = None;
        self.next_seq[dest] = seq.wrapping_add(1);
        Ok(SendStatus::Sent)
    }

    fn poll(&mut self) -> Result<Option<OfiPacket>, TransportError> {
        self.ep.repost().map_err(|f| {
            ofi_error(
                "re-posting receive buffers".into(),
                f,
                "the provider refused a receive",
            )
        })?;
        if let Some(p) = self.ready.pop_front() {
            return Ok(Some(p));
        }
        loop {
            let Some(next) = self.incoming.pop_front() else {
                if self.progress()? > 0 {
                    continue;
                }
                self.idle_polls = self.idle_polls.wrapping_add(1);
                if self.idle_polls & 1023 == 0 && self.ep.busy() > 0 {
                    self.expire_stuck();
                    if !self.incoming.is_empty() {
                        continue;
                    }
                }
                return Ok(None);
            };
            if let Some(p) = self.accept(next?)? {
                return Ok(Some(p));
            }
        }
    }
}

/// Where a packet's bytes are.
enum Data {
    /// In its receive buffer, re-posted when the packet is dropped.
    Pool(RxBuf),
    /// Copied out (a packet held to restore order).
    Owned(Vec<u8>),
}

/// A received packet: header, metadata and payload, in its receive buffer or owned.
pub struct OfiPacket {
    src: usize,
    /// End of the metadata (start of the payload) in `bytes()`.
    meta_end: usize,
    /// Length of the whole message.
    len: usize,
    data: Data,
}

impl OfiPacket {
    fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Pool(b) => b.bytes(),
            Data::Owned(v) => v,
        }
    }

    /// The same packet with its bytes copied out of the receive buffer (released).
    fn into_owned(self) -> OfiPacket {
        let data = Data::Owned(self.bytes().to_vec());
        OfiPacket { data, ..self }
    }
}

impl Packet for OfiPacket {
    fn src(&self) -> usize {
        self.src
    }

    fn meta(&self) -> &[u8] {
        &self.bytes()[HEADER_LEN..self.meta_end]
    }

    fn payload(&self) -> &[u8] {
        &self.bytes()[self.meta_end..self.len]
    }
}
