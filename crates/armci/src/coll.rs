//! The node's shared-memory collectives for the C side's `armci_msg_*` (coll.c
//! decides when they apply): barrier, all-reduce and broadcast over the rma layer's
//! node collectives (`nf_rma::Rma::node_barrier` and friends), the leaders' step an
//! MPI call C hands over as a [`NfaAcross`].
//!
//! Every failure aborts the job naming the ARMCI call, as everywhere in libarmci; a
//! process of the node that dies while the others wait is one of them.

use std::ffi::{c_char, c_int, c_void};

use nf_rma::{Across, RmaError};

use crate::ffi::{call_name, fatal};
use crate::reduce::{fold, reduction_args};
use crate::state::with;

/// `struct nfa_across`: the step among the nodes' leaders (NULL `step`: none, the
/// collective stays on this node).
#[repr(C)]
pub struct NfaAcross {
    /// What `step` needs (its communicator, type, operator), opaque here.
    pub ctx: *mut c_void,
    /// Runs the leaders' step on `bytes` bytes at `buf` in place; 0, or an MPI error.
    pub step:
        Option<unsafe extern "C" fn(ctx: *mut c_void, buf: *mut c_void, bytes: usize) -> c_int>,
}

/// Runs `f` with the leaders' step C described in `across` (NULL: none).
///
/// # Safety
/// `across` is NULL or points to a description whose `ctx` is valid for `step` for
/// the duration of the call.
unsafe fn with_across<R>(across: *const NfaAcross, f: impl FnOnce(Across<'_>) -> R) -> R {
    // SAFETY: the caller's promise.
    let Some(NfaAcross {
        ctx,
        step: Some(step),
    }) = (unsafe { across.as_ref() })
    else {
        return f(None);
    };
    let mut run = |data: &mut [u8]| {
        // SAFETY: `data` is `data.len()` bytes the hook may read and write; `ctx` is
        // valid by the caller's promise.
        let rc = unsafe { step(*ctx, data.as_mut_ptr().cast::<c_void>(), data.len()) };
        if rc == 0 {
            Ok(())
        } else {
            Err(RmaError::Collective {
                op: "leaders' step",
                why: format!("MPI error {rc} among the nodes' leaders"),
            })
        }
    };
    f(Some(&mut run))
}

/// The node's barrier, then the leaders' (`armci_msg_barrier`, `ARMCI_Barrier` after
/// its fence).
///
/// # Safety
/// `call` is NULL or a C string; `across` is NULL or describes a leaders' step whose
/// `ctx` is valid for its `step` during the call.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_barrier(
    call: *const c_char,
    across: *const NfaAcross,
) -> c_int {
    let call = &call_name(call);
    with(call, |st| {
        // SAFETY: the caller's promise.
        unsafe { with_across(across, |a| st.rma.node_barrier(a)) }
            .unwrap_or_else(|e| fatal(call, e));
    });
    0
}

/// All-reduce of `n` elements of ARMCI type `ty` at `x` with operator `op` (C's
/// `enum nfa_gop`), in place. C has checked the arguments and, for absmax / absmin,
/// made `x` absolute.
///
/// # Safety
/// `x` holds `n` elements of the type; `call` and `across` as for
/// [`nf_armci_rs_barrier`].
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_allreduce(
    call: *const c_char,
    x: *mut c_void,
    n: c_int,
    ty: c_int,
    op: c_int,
    across: *const NfaAcross,
) -> c_int {
    let call = &call_name(call);
    let (ty, op, n) = reduction_args(call, ty, op, n);
    if n == 0 {
        return 0;
    }
    if x.is_null() {
        fatal(call, "argument 'x' is NULL");
    }
    // SAFETY: the caller's promise: `n` elements of `ty` at `x`.
    let data = unsafe { std::slice::from_raw_parts_mut(x.cast::<u8>(), n * ty.size()) };
    let mut fold_err = None;
    let mut folder = |acc: &mut [u8], other: &[u8]| {
        if let Err(e) = fold(ty, op, acc, other) {
            fold_err.get_or_insert(e);
        }
    };
    with(call, |st| {
        // SAFETY: the caller's promise.
        unsafe {
            with_across(across, |a| {
                st.rma.node_allreduce(data, ty.size(), &mut folder, a)
            })
        }
        .unwrap_or_else(|e| fatal(call, e));
    });
    if let Some(e) = fold_err {
        fatal(call, e);
    }
    0
}

/// Broadcast of `len` bytes at `buf` from world rank `root`.
///
/// # Safety
/// `buf` holds `len` bytes; `call` and `across` as for [`nf_armci_rs_barrier`].
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_bcast(
    call: *const c_char,
    buf: *mut c_void,
    len: c_int,
    root: c_int,
    across: *const NfaAcross,
) -> c_int {
    let call = &call_name(call);
    let (Ok(len), Ok(root)) = (usize::try_from(len), usize::try_from(root)) else {
        fatal(call, format!("length {len} / root {root} out of range"));
    };
    if len == 0 {
        return 0;
    }
    if buf.is_null() {
        fatal(call, "argument 'buffer' is NULL");
    }
    // SAFETY: the caller's promise: `len` bytes at `buf`.
    let data = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
    with(call, |st| {
        // SAFETY: the caller's promise.
        unsafe { with_across(across, |a| st.rma.node_broadcast(data, root, a)) }
            .unwrap_or_else(|e| fatal(call, e));
    });
    0
}
