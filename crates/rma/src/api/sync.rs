//! Remote completion and barriers.

use crate::error::RmaError;
use crate::rma::{not_yet, Rma};

impl Rma<'_> {
    /// Returns once every put and accumulate this proc issued to `proc` is applied in
    /// `proc`'s memory (`ARMCI_Fence`).
    pub fn fence(&self, proc: usize) -> Result<(), RmaError> {
        self.check_proc("fence", proc)?;
        Err(not_yet("fence"))
    }

    /// [`Rma::fence`] for every proc (`ARMCI_AllFence`).
    pub fn all_fence(&self) -> Result<(), RmaError> {
        Err(not_yet("all_fence"))
    }

    /// All-fence, then a world barrier (`ARMCI_Barrier`): afterwards every proc sees
    /// every transfer issued before anyone's barrier.
    pub fn barrier(&self) -> Result<(), RmaError> {
        Err(not_yet("barrier"))
    }
}
