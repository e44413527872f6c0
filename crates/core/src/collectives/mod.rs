//! Collectives built on active messages: barrier, broadcast, reduce, allreduce.
//!
//! Every collective takes the next sequence number; all ranks call collectives in
//! the same order, so `(sequence, round, source)` names each message uniquely. The
//! mailbox handler only stores what arrives; the algorithm waits for its key. A
//! message for a later collective, from a faster rank, simply waits in the mailbox.

mod barrier;
mod bcast;
mod reduce;

pub use reduce::{ReduceOp, Reducible};

use crate::am::{Am, COLL_HANDLER};
use crate::error::CoreError;
use crate::world::World;

/// Stores an arriving collective message under its key.
pub(crate) fn mailbox_handler(world: &World, am: &Am<'_>) {
    let Some(key) = decode_key(am.header) else {
        tracing::error!(src = am.src, "malformed collective header dropped");
        return;
    };
    world
        .state
        .borrow_mut()
        .mailbox
        .insert((key.0, key.1, am.src), am.payload.to_vec());
}

fn decode_key(h: &[u8]) -> Option<(u32, u16)> {
    let seq = u32::from_le_bytes(h.get(0..4)?.try_into().ok()?);
    let round = u16::from_le_bytes(h.get(4..6)?.try_into().ok()?);
    (h.len() == 6).then_some((seq, round))
}

impl World {
    /// Starts a collective: its sequence number.
    pub(crate) fn next_collective(&self) -> u32 {
        let s = self.coll_seq.get();
        self.coll_seq.set(s.wrapping_add(1));
        s
    }

    pub(crate) fn coll_send(
        &self,
        dest: usize,
        seq: u32,
        round: u16,
        data: &[u8],
    ) -> Result<(), CoreError> {
        let mut h = [0u8; 6];
        h[..4].copy_from_slice(&seq.to_le_bytes());
        h[4..].copy_from_slice(&round.to_le_bytes());
        self.send_am(dest, COLL_HANDLER, &h, data)
    }

    pub(crate) fn coll_recv(&self, src: usize, seq: u32, round: u16) -> Result<Vec<u8>, CoreError> {
        let key = (seq, round, src);
        self.wait_until(|| self.state.borrow().mailbox.contains_key(&key))?;
        Ok(self
            .state
            .borrow_mut()
            .mailbox
            .remove(&key)
            .expect("present after wait"))
    }
}
