//! The shared-memory collectives for the C side's `armci_msg_*` (coll.c decides
//! when they apply): barrier, all-reduce and broadcast over the rma layer's node
//! collectives (`nf_rma::Rma::node_barrier` and friends) for the world and groups
//! of whole nodes, or over an [`nf_rma::NodeTeam`] for a group holding part of a
//! node (made with the group: [`nf_armci_rs_team_new`]); the leaders' step an MPI
//! call C hands over as a [`NfaAcross`].
//!
//! Every failure aborts the job naming the ARMCI call, as everywhere in libarmci; a
//! process of the node that dies while the others wait is one of them.

use std::ffi::{c_char, c_int, c_void};

use nf_rma::{Across, NodeTeam, Rma, RmaError};

use crate::ffi::{call_name, fatal, NfaWireup};
use crate::reduce::{fold, reduction_args};
use crate::state::with;
use crate::wireup::CTeam;

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

/// Whose steps a call runs: the node's (the world, a group of whole nodes) or a
/// group's team.
#[derive(Clone, Copy)]
enum Steps<'a> {
    Node,
    Team(&'a NodeTeam),
}

impl<'a> Steps<'a> {
    /// The steps of `team`, a handle of [`nf_armci_rs_team_new`] or NULL (the node's).
    ///
    /// # Safety
    /// `team` is NULL or a live handle, not freed while the result is used.
    unsafe fn of(team: *mut c_void) -> Steps<'a> {
        // SAFETY: the caller's promise.
        match unsafe { team.cast::<NodeTeam>().as_ref() } {
            None => Steps::Node,
            Some(t) => Steps::Team(t),
        }
    }

    fn barrier(self, rma: &Rma<'_>, a: Across<'_>) -> Result<(), RmaError> {
        match self {
            Steps::Node => rma.node_barrier(a),
            Steps::Team(t) => t.barrier(rma, a),
        }
    }

    fn allreduce(
        self,
        rma: &Rma<'_>,
        data: &mut [u8],
        elem: usize,
        fold: &mut dyn FnMut(&mut [u8], &[u8]),
        a: Across<'_>,
    ) -> Result<(), RmaError> {
        match self {
            Steps::Node => rma.node_allreduce(data, elem, fold, a),
            Steps::Team(t) => t.allreduce(rma, data, elem, fold, a),
        }
    }

    fn broadcast(
        self,
        rma: &Rma<'_>,
        data: &mut [u8],
        root: usize,
        a: Across<'_>,
    ) -> Result<(), RmaError> {
        match self {
            Steps::Node => rma.node_broadcast(data, root, a),
            Steps::Team(t) => t.broadcast(rma, data, root, a),
        }
    }
}

/// A group's team collectives (`NodeTeam`), made by every member of a group that
/// holds part of a node (collective over the group's wire-up `wu`, which must not be
/// these collectives themselves).
///
/// # Safety
/// `call` is NULL or a C string; `wu` is the wire-up of a group this process belongs
/// to, valid during the call.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_team_new(
    call: *const c_char,
    wu: *const NfaWireup,
) -> *mut c_void {
    let call = &call_name(call);
    if wu.is_null() {
        fatal(call, "no group wire-up");
    }
    // SAFETY: the caller's promise.
    let team = unsafe { CTeam::new(&*wu) };
    let t = with(call, |st| NodeTeam::new(&st.rma, &team)).unwrap_or_else(|e| fatal(call, e));
    Box::into_raw(Box::new(t)).cast::<c_void>()
}

/// Frees a handle of [`nf_armci_rs_team_new`]: with `wu` (the group's wire-up, plain
/// MPI) its slots too, collectively; with NULL (`ARMCI_Finalize`, which releases
/// every segment) only this process's bookkeeping.
///
/// # Safety
/// `team` is such a handle, not used afterwards; `call` and `wu` as there.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_team_free(
    call: *const c_char,
    team: *mut c_void,
    wu: *const NfaWireup,
) {
    // SAFETY: the caller's promise: a live handle, given back once.
    let t = unsafe { Box::from_raw(team.cast::<NodeTeam>()) };
    if wu.is_null() {
        return;
    }
    let call = &call_name(call);
    // SAFETY: the caller's promise.
    let group = unsafe { CTeam::new(&*wu) };
    with(call, |st| t.free(&st.rma, &group)).unwrap_or_else(|e| fatal(call, e));
}

/// The barrier of the node (`team` NULL) or of a group's team, then the leaders'
/// (`armci_msg_barrier`, `ARMCI_Barrier` after its fence).
///
/// # Safety
/// `call` is NULL or a C string; `team` is NULL or a live handle of
/// [`nf_armci_rs_team_new`]; `across` is NULL or describes a leaders' step whose
/// `ctx` is valid for its `step` during the call.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_barrier(
    call: *const c_char,
    team: *mut c_void,
    across: *const NfaAcross,
) -> c_int {
    let call = &call_name(call);
    // SAFETY: the caller's promise.
    let steps = unsafe { Steps::of(team) };
    with(call, |st| {
        // SAFETY: the caller's promise.
        unsafe { with_across(across, |a| steps.barrier(&st.rma, a)) }
            .unwrap_or_else(|e| fatal(call, e));
    });
    0
}

/// All-reduce over the node (`team` NULL) or a group's team of `n` elements of
/// ARMCI type `ty` at `x` with operator `op` (C's `enum nfa_gop`), in place. C has
/// checked the arguments and, for absmax / absmin, made `x` absolute.
///
/// # Safety
/// `x` holds `n` elements of the type; `call`, `team` and `across` as for
/// [`nf_armci_rs_barrier`].
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_allreduce(
    call: *const c_char,
    team: *mut c_void,
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
    // SAFETY: the caller's promise.
    let steps = unsafe { Steps::of(team) };
    with(call, |st| {
        // SAFETY: the caller's promise.
        unsafe {
            with_across(across, |a| {
                steps.allreduce(&st.rma, data, ty.size(), &mut folder, a)
            })
        }
        .unwrap_or_else(|e| fatal(call, e));
    });
    if let Some(e) = fold_err {
        fatal(call, e);
    }
    0
}

/// Broadcast over the node (`team` NULL) or a group's team of `len` bytes at `buf`
/// from world rank `root`.
///
/// # Safety
/// `buf` holds `len` bytes; `call`, `team` and `across` as for
/// [`nf_armci_rs_barrier`].
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_bcast(
    call: *const c_char,
    team: *mut c_void,
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
    // SAFETY: the caller's promise.
    let steps = unsafe { Steps::of(team) };
    with(call, |st| {
        // SAFETY: the caller's promise.
        unsafe { with_across(across, |a| steps.broadcast(&st.rma, data, root, a)) }
            .unwrap_or_else(|e| fatal(call, e));
    });
    0
}
