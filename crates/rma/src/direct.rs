//! The direct path: transfers to a proc of our domain, done with load / store on its
//! mapped segment, right here in the caller's thread.

use crate::apply::{self, Applier, Target};
use crate::error::RmaError;
use crate::rma::Rma;
use crate::shape::for_each_chunk;
use crate::table::Seg;
use crate::xfer::{Kind, Xfer};

/// Runs a checked transfer whose remote side is resolved: `seg` holds all of it, or
/// (`None`, vector shapes) each chunk is looked up again.
///
/// # Safety
/// The local memory of `x` must be valid for the transfer (see `Rma::xfer`).
pub(crate) unsafe fn run(rma: &Rma<'_>, x: &Xfer<'_>, seg: Option<Seg>) -> Result<(), RmaError> {
    let mem = rma.mem.borrow();
    let at = |remote: u64, len: usize| -> *mut u8 {
        seg.or_else(|| mem.table.find(x.proc, remote, len as u64))
            .expect("remote side checked before the transfer")
            .local(remote)
    };
    match x.kind {
        Kind::Put => for_each_chunk(&x.shape, |c| {
            // SAFETY: the caller vouches for the local chunk; the remote one lies in a
            // live segment mapped here (checked). `copy` tolerates overlap, as when a
            // proc puts from its own segment into itself.
            unsafe { std::ptr::copy(c.local, at(c.remote, c.len), c.len) };
            Ok(())
        }),
        Kind::Get => for_each_chunk(&x.shape, |c| {
            // SAFETY: as for put, in the other direction.
            unsafe { std::ptr::copy(at(c.remote, c.len), c.local, c.len) };
            Ok(())
        }),
        Kind::Acc(scale) => {
            let who = Applier {
                pid: rma.pid,
                patience: &rma.patience,
            };
            let ctl = rma.ctl_of(x.proc);
            for_each_chunk(&x.shape, |c| {
                let t = Target {
                    ctl,
                    owner_addr: c.remote,
                    local: at(c.remote, c.len),
                };
                // SAFETY: as for put; the length is a multiple of the element (checked).
                unsafe { apply::acc(&t, &who, scale, c.local, c.len) }
            })
        }
    }
}
