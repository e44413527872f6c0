//! Remote completion and barriers.

use std::sync::atomic::{fence, Ordering};

use crate::error::RmaError;
use crate::rma::Rma;

impl Rma<'_> {
    /// Returns once every put and accumulate this proc issued to `proc` is applied in
    /// `proc`'s memory (`ARMCI_Fence`). Also returns the first refusal of such a
    /// request by `proc`, if any.
    pub fn fence(&self, proc: usize) -> Result<(), RmaError> {
        self.check_proc("fence", proc)?;
        // Same-domain transfers are complete when issued; this orders them.
        fence(Ordering::SeqCst);
        if self.same_node(proc) {
            return Ok(());
        }
        self.origin.borrow_mut().fence(&[proc])
    }

    /// [`Rma::fence`] for every proc (`ARMCI_AllFence`); the fences are in flight
    /// together.
    pub fn all_fence(&self) -> Result<(), RmaError> {
        fence(Ordering::SeqCst);
        let mut o = self.origin.borrow_mut();
        let dirty = o.dirty_procs();
        o.fence(&dirty)
    }

    /// All-fence, then a world barrier (`ARMCI_Barrier`): afterwards every proc sees
    /// every put and accumulate issued before anyone entered the barrier.
    pub fn barrier(&self) -> Result<(), RmaError> {
        self.all_fence()?;
        self.wire.barrier()?;
        fence(Ordering::SeqCst);
        Ok(())
    }
}
