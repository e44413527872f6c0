//! The sending side of the ofi transport (step 3 of `mod.rs`): a packet goes out in a
//! free send slot, within the peer's window (`window.rs`), injected or posted.

use std::time::Instant;

use super::ffi::Sent;
use super::wire::{Header, HEADER_LEN};
use super::{ofi_error, OfiTransport, Op};
use crate::error::TransportError;
use crate::SendStatus;

impl OfiTransport {
    /// [`Messaging::try_send`]: step 3 of `mod.rs`.
    pub(super) fn send_packet(
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
}
