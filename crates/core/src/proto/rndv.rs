//! What both rendezvous protocols share on the sender's side: an id per send, the
//! wait for the receiver's answer, and what a refusal does.
//!
//! A rendezvous send announces its payload (`RTS` or `RTS_NET`, with a fresh id) and
//! waits, polling, until the receiver answers: `FIN` (it has the bytes; our buffer
//! is free), `NACK` (it could not read them: the message goes in fragments and no
//! more rendezvous go to that peer, rule 2 of `proto`) or, single-copy only, `CTS`
//! (write your share into my buffer, then send `DONE`; `rndv_copy.rs`).

use crate::error::CoreError;
use crate::world::{Nested, World};

/// State of one rendezvous send, keyed by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rndv {
    /// Waiting for the receiver.
    Waiting,
    /// The receiver asks us to write bytes `split..` to `addr` in its process.
    Cts { addr: u64, split: u64 },
    /// The receiver has everything; our buffer is free.
    Done,
    /// The receiver could not read it; send another way.
    Refused,
}

impl World {
    /// A fresh rendezvous id, waiting for its receiver.
    pub(crate) fn start_rndv(&self) -> u32 {
        let mut st = self.state.borrow_mut();
        let id = st.next_rndv;
        st.next_rndv = id.wrapping_add(1);
        st.rndv.insert(id, Rndv::Waiting);
        id
    }

    /// Forgets rendezvous `id` once its wait ended with `outcome`; whether the
    /// receiver read it (`how`: how it tried). A refusal stops rendezvous to `dest`:
    /// the caller, and later sends, use fragments.
    pub(crate) fn end_rndv_send(
        &self,
        dest: usize,
        id: u32,
        outcome: Result<Rndv, CoreError>,
        how: &str,
    ) -> Result<bool, CoreError> {
        self.state.borrow_mut().rndv.remove(&id);
        if outcome? != Rndv::Refused {
            return Ok(true);
        }
        tracing::warn!(
            dest,
            "peer could not read our memory {how}; falling back to copies through fragments"
        );
        self.state.borrow_mut().stats.refused += 1;
        self.refuse_rendezvous(dest);
        Ok(false)
    }

    /// Waits for the receiver of rendezvous `id`; writes its share when it asks (CTS).
    pub(crate) fn rendezvous_wait(
        &self,
        dest: usize,
        id: u32,
        payload: &[u8],
    ) -> Result<Rndv, CoreError> {
        let _nested = Nested::enter(self);
        loop {
            self.wait_until(|| self.state.borrow().rndv.get(&id) != Some(&Rndv::Waiting))?;
            let state = self.state.borrow().rndv.get(&id).copied();
            let Some(Rndv::Cts { addr, split }) = state else {
                return Ok(state.unwrap_or(Rndv::Refused));
            };
            self.state.borrow_mut().rndv.insert(id, Rndv::Waiting);
            self.write_share(dest, id, addr, split, payload)?;
        }
    }

    /// `CTS`, `FIN` or `NACK` for our rendezvous send `id`.
    pub(crate) fn answer_rendezvous(
        &self,
        src: usize,
        id: u32,
        outcome: Rndv,
    ) -> Result<(), CoreError> {
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
}
