//! The receiving side of the ofi transport (step 4 of `mod.rs`): arrived buffers
//! checked and put back in per-pair order (`order.rs`), and the packet type.

use super::ffi::{self, Fail, RxBuf};
use super::order::Verdict;
use super::wire::{Header, HEADER_LEN};
use super::{ofi_error, OfiTransport};
use crate::error::TransportError;
use crate::{Packet, META_MAX};

impl OfiTransport {
    /// Turns an arrived buffer into a packet in order (or holds it, or refuses it).
    pub(super) fn accept(&mut self, buf: RxBuf) -> Result<Option<OfiPacket>, TransportError> {
        let bad = |src: Option<u32>, why: String| TransportError::BadPacket {
            transport: "ofi",
            src,
            why,
        };
        let h = Header::decode(self.cfg.cookie, buf.bytes()).map_err(|why| bad(None, why))?;
        let src = h.src as usize;
        if src >= self.size || src == self.me {
            return Err(bad(
                Some(h.src),
                format!("no such sender in a job of {} ranks", self.size),
            ));
        }
        if h.meta_len as usize > META_MAX {
            return Err(bad(
                Some(h.src),
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
            .map_err(|why| bad(Some(h.src), why))?
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
            src: None,
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

impl OfiTransport {
    /// [`Messaging::poll`]: step 4 of `mod.rs`.
    pub(super) fn next_packet(&mut self) -> Result<Option<OfiPacket>, TransportError> {
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
