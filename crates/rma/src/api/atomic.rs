//! Read-modify-write on remote integers.

use crate::apply::{self, Applier, Target};
use crate::error::RmaError;
use crate::rma::Rma;
use crate::xfer::RmwOp;

impl Rma<'_> {
    /// Applies `op` to the integer at `remote` on `proc` and returns its old value
    /// (`ARMCI_Rmw`). Atomic with respect to every other rmw and accumulate on those
    /// bytes, from any proc; `remote` must be aligned to the operand size.
    pub fn rmw(&self, op: RmwOp, remote: u64, proc: usize) -> Result<i64, RmaError> {
        self.check_proc("rmw", proc)?;
        let size = op.size();
        if remote == 0 {
            return Err(RmaError::Null {
                op: "rmw",
                arg: "remote".into(),
            });
        }
        if !remote.is_multiple_of(size as u64) {
            return Err(RmaError::Misaligned {
                op: "rmw",
                arg: "remote".into(),
                addr: remote,
                align: size,
            });
        }
        let seg = self.segment_of("rmw", proc, remote, size as u64)?;
        if !self.same_node(proc) {
            return self.origin.borrow_mut().rmw(proc, op, remote);
        }
        let t = Target {
            ctl: self.ctl_of(proc),
            owner_addr: remote,
            local: seg.local(remote),
        };
        let who = Applier {
            pid: self.pid,
            patience: &self.patience,
        };
        // SAFETY: the integer lies in a live segment mapped here, aligned to its size
        // (segments are page-aligned in every mapping, so alignment carries over).
        unsafe { apply::rmw(&t, &who, op) }
    }
}
