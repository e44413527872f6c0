//! Read-modify-write on remote integers.

use crate::error::RmaError;
use crate::rma::{not_yet, Rma};
use crate::xfer::RmwOp;

impl Rma<'_> {
    /// Applies `op` to the integer at `remote` on `proc` and returns its old value
    /// (`ARMCI_Rmw`). Atomic with respect to every other rmw and accumulate on those
    /// bytes, from any proc; `remote` must be aligned to the operand size.
    pub fn rmw(&self, op: RmwOp, remote: u64, proc: usize) -> Result<i64, RmaError> {
        self.check_proc("rmw", proc)?;
        let _ = (op, remote);
        Err(not_yet("rmw"))
    }
}
