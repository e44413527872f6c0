//! Running one checked transfer, blocking or not: the single path every put, get
//! and accumulate of the ABI (contiguous, strided, vector) goes through.

use std::ffi::c_int;

use nf_rma::Xfer;

use crate::args::describe;
use crate::ffi::fatal;
use crate::nonblocking::ArmciHdl;
use crate::state::State;

/// How a transfer completes.
#[derive(Clone, Copy)]
pub enum Mode {
    /// Before the call returns (locally, for put and accumulate).
    Blocking,
    /// Later, through this handle (NULL: an implicit handle, completed by
    /// `ARMCI_WaitAll` / `ARMCI_WaitProc` / a fence).
    Nb(*mut ArmciHdl),
}

/// Runs `x` as `mode` says; any refusal aborts naming `call` and, for the remote
/// side, `remote_arg`. Returns ARMCI's 0.
///
/// # Safety
/// Every local address in `x` must be valid for the bytes its shape covers (read for
/// put and accumulate, write for get) until the transfer completes: for `Nb`, until
/// the handle is waited for (the rma layer copies put and accumulate sources at once).
pub unsafe fn run(call: &str, remote_arg: &str, st: &State, x: &Xfer<'_>, mode: Mode) -> c_int {
    let result = match mode {
        // SAFETY: forwarded from the caller.
        Mode::Blocking => unsafe { st.rma.xfer(x) },
        // SAFETY: forwarded from the caller.
        Mode::Nb(h) if h.is_null() => unsafe { st.rma.start_implicit(x) },
        Mode::Nb(h) => {
            // SAFETY: forwarded from the caller.
            match unsafe { st.rma.start(x) } {
                Ok(handle) => {
                    // SAFETY: ARMCI's contract: a non-NULL handle points to an
                    // armci_hdl_t the caller owns.
                    let hdl = unsafe { &mut *h };
                    st.handles
                        .borrow_mut()
                        .record(call, &st.rma, hdl, x.proc, handle);
                    Ok(())
                }
                Err(e) => Err(e),
            }
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => fatal(call, describe(remote_arg, &e)),
    }
}
