//! Faults of the ofi transport (step 5 of `mod.rs`): losing a peer once, and the
//! errors that name what failed and what to do.

use std::time::Instant;

use super::ffi::{self, Fail};
use super::{OfiConfig, OfiTransport, Op};
use crate::error::TransportError;
use crate::SendStatus;

impl OfiTransport {
    /// Marks `peer` lost (once) and queues the error for `poll`.
    pub(super) fn lose(&mut self, peer: usize, why: String) {
        if self.lost[peer].is_none() {
            self.lost[peer] = Some(why.clone());
            self.incoming
                .push_back(Err(TransportError::PeerLost { peer, why }));
        }
    }

    pub(super) fn op_peer(&self, slot: u32) -> usize {
        match self.slot_op[slot as usize] {
            Op::Send(p, _) | Op::Rma(p, _) => p,
        }
    }

    /// The provider said `EAGAIN` to an operation to `dest`: `NoCredit`, after some
    /// progress; after `dead_after` of nothing else, the peer is lost (step 5).
    pub(super) fn refused(&mut self, dest: usize) -> Result<SendStatus, TransportError> {
        self.stats.no_credit += 1;
        let since = *self.stalled_since[dest].get_or_insert_with(Instant::now);
        if since.elapsed() > self.cfg.dead_after {
            self.lose(
                dest,
                format!(
                    "the provider refused every operation to it for {:?} (EAGAIN: it cannot \
                     reach the peer, which is probably gone)",
                    self.cfg.dead_after
                ),
            );
            self.reachable(dest)?;
        }
        self.progress()?;
        Ok(SendStatus::NoCredit)
    }

    /// Loses the peers of operations in flight for longer than `dead_after` (`poll`
    /// does this now and then; callers that only use RMA call it while they wait).
    pub fn expire_stuck(&mut self) {
        let dead_after = self.cfg.dead_after;
        let stuck: Vec<usize> = self
            .ep
            .in_flight()
            .filter(|&s| self.slot_since[s as usize].elapsed() > dead_after)
            .map(|s| self.op_peer(s))
            .collect();
        for peer in stuck {
            self.lose(
                peer,
                format!(
                    "an operation to it has not completed for {dead_after:?} (the peer is \
                     gone, or has not polled for that long)"
                ),
            );
        }
    }

    /// Checks `dest` before an operation to it.
    pub(super) fn reachable(&self, dest: usize) -> Result<(), TransportError> {
        if dest >= self.size {
            return Err(TransportError::NoPeer {
                dest,
                size: self.size,
            });
        }
        if let Some(why) = &self.lost[dest] {
            return Err(TransportError::PeerLost {
                peer: dest,
                why: why.clone(),
            });
        }
        if !self.connected[dest] {
            return Err(TransportError::WireUp {
                peer: dest,
                why: "no ofi address was inserted for it (connect was not given one)".into(),
            });
        }
        Ok(())
    }
}

pub(super) fn ofi_error(what: String, f: Fail, hint: &str) -> TransportError {
    TransportError::Ofi {
        what,
        code: f.code,
        text: f.text,
        hint: hint.into(),
    }
}

pub(super) fn open_error(cfg: &OfiConfig, f: Fail) -> TransportError {
    if f.code == 0 {
        return TransportError::OfiUnavailable(f.text);
    }
    let mut what = format!("opening an RDM endpoint of provider {:?}", cfg.provider);
    if let Some(n) = &cfg.node {
        what += &format!(" on {n}");
    }
    if let Some(d) = &cfg.domain {
        what += &format!(" in domain {d:?}");
    }
    let hint = if f.code == ffi::FI_ENODATA {
        "no such provider, or it offers no reliable-datagram endpoint with messaging here: \
         `fi_info -l` lists the providers, `fi_info -p NAME -t FI_EP_RDM` what one offers; \
         set NF_OFI_PROVIDER accordingly (tcp works on any host)"
            .to_owned()
    } else {
        format!(
            "check the provider's settings (`fi_info -p {} -v`, its FI_* variables)",
            cfg.provider
        )
    };
    TransportError::Ofi {
        what,
        code: f.code,
        text: f.text,
        hint,
    }
}
