//! Collective allocation over a group, and local buffers (called from memory.c,
//! which owns the group and hands its wire-up over); direct local access
//! (`ARMCI_Access_begin` / `_end`).
//!
//! A process may only free what it allocated: `ARMCI_Free` of any other address is
//! refused before the collective starts, so a bad call aborts instead of leaving
//! the other members waiting.

use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::atomic::{fence, Ordering};

use crate::args::describe;
use crate::ffi::{call_name, fatal, NfaWireup};
use crate::state::{limit, with};
use crate::wireup::CTeam;

/// The team C passed, or an abort naming `call`.
fn team(call: &str, wu: *const NfaWireup) -> CTeam {
    if wu.is_null() {
        fatal(call, "no group wire-up");
    }
    // SAFETY: C passes the wire-up of a group it checked the caller belongs to; its
    // communicator and rank table outlive this call.
    unsafe { CTeam::new(&*wu) }
}

/// What `ARMCI_Malloc` returns when the host cannot hold the allocation (`ENOMEM`).
const NO_ROOM: c_int = 12;

/// Collective allocation of `bytes` on every member; `ptr_arr[i]` gets member `i`'s
/// address (NULL for 0 bytes). An allocation some member's host cannot hold
/// (`RmaError::NoRoom`) is no programming error: every member prints why and
/// returns `NO_ROOM` with every slot NULL, as ARMCI lets `ARMCI_Malloc` fail;
/// every other failure aborts the job.
///
/// # Safety
/// `wu` is the wire-up of a group the caller belongs to; `ptr_arr` is NULL or has a
/// slot per member; `call` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_malloc(
    call: *const c_char,
    wu: *const NfaWireup,
    bytes: c_long,
    ptr_arr: *mut *mut c_void,
) -> c_int {
    let call = &call_name(call);
    let team = team(call, wu);
    let bytes = u64::try_from(bytes).unwrap_or_else(|_| {
        fatal(
            call,
            format!("argument 'bytes' is {bytes}; it must be >= 0"),
        )
    });
    with(call, |st| {
        let cap = limit();
        let held: u64 = st.own.borrow().values().sum();
        if cap > 0 && held + bytes > cap {
            fatal(
                call,
                format!(
                    "argument 'bytes' ({bytes}) would take this process's segments to {} bytes, \
                     over the {cap} bytes ARMCI_Set_shm_limit allows",
                    held + bytes
                ),
            );
        }
        if ptr_arr.is_null() {
            fatal(call, "argument 'ptr_arr' is NULL");
        }
        let bases = match st.rma.malloc_team(&team, bytes as usize) {
            Ok(bases) => bases,
            // Not a mistake in the program: say why and let it decide (every member
            // gets the same answer, so none is left waiting).
            Err(e @ nf_rma::RmaError::NoRoom { .. }) => {
                eprintln!("libarmci: rank {}: {call}: {e}", st.rma.rank());
                let slots = nf_rma::Team::members(&team).len();
                // SAFETY: ARMCI's contract: `ptr_arr` has one slot per group member.
                let out = unsafe { std::slice::from_raw_parts_mut(ptr_arr, slots) };
                out.fill(std::ptr::null_mut());
                return NO_ROOM;
            }
            Err(e) => fatal(call, describe("bytes", &e)),
        };
        // SAFETY: ARMCI's contract: `ptr_arr` has one slot per group member.
        let out = unsafe { std::slice::from_raw_parts_mut(ptr_arr, bases.len()) };
        for (slot, &b) in out.iter_mut().zip(&bases) {
            *slot = b as *mut c_void;
        }
        let mine = bases[team.rank()];
        if mine != 0 {
            st.own.borrow_mut().insert(mine, bytes);
        }
        0
    })
}

/// Collective free of the allocation whose local part starts at `ptr` (NULL for a
/// member that asked for 0 bytes).
#[no_mangle]
pub extern "C" fn nf_armci_rs_free(
    call: *const c_char,
    wu: *const NfaWireup,
    ptr: *mut c_void,
) -> c_int {
    let call = &call_name(call);
    let team = team(call, wu);
    let base = ptr as u64;
    with(call, |st| {
        if base != 0 && !st.own.borrow().contains_key(&base) {
            fatal(
                call,
                format!(
                    "argument 'ptr' ({ptr:p}) is not the start of a segment this process got from \
                     ARMCI_Malloc (or it was freed already)"
                ),
            );
        }
        st.rma
            .free_team(&team, base)
            .unwrap_or_else(|e| fatal(call, describe("ptr", &e)));
        st.own.borrow_mut().remove(&base);
        0
    })
}

/// A local buffer for transfers (`ARMCI_Malloc_local`); NULL if memory ran out.
#[no_mangle]
pub extern "C" fn nf_armci_rs_malloc_local(bytes: c_long) -> *mut c_void {
    let n = usize::try_from(bytes).unwrap_or(0).max(1);
    with("ARMCI_Malloc_local", |st| {
        st.rma
            .malloc_local(n)
            .map_or(std::ptr::null_mut(), |p| p.cast::<c_void>())
    })
}

/// Frees what [`nf_armci_rs_malloc_local`] returned; NULL is accepted.
#[no_mangle]
pub extern "C" fn nf_armci_rs_free_local(call: *const c_char, ptr: *mut c_void) -> c_int {
    let call = &call_name(call);
    if ptr.is_null() {
        return 0;
    }
    with(call, |st| {
        st.rma.free_local(ptr.cast::<u8>()).unwrap_or_else(|_| {
            fatal(
                call,
                format!("argument 'ptr' ({ptr:p}) did not come from ARMCI_Malloc_local"),
            )
        });
        0
    })
}

/// Checks that `ptr` lies in one of this process's live segments (the access calls).
fn check_own(call: &str, ptr: *mut c_void) {
    let addr = ptr as u64;
    with(call, |st| {
        let inside = st
            .own
            .borrow()
            .iter()
            .any(|(&base, &bytes)| addr >= base && addr - base < bytes);
        if !inside {
            fatal(
                call,
                format!(
                    "argument 'ptr' ({ptr:p}) is not in memory this process got from \
                     ARMCI_Malloc"
                ),
            );
        }
    });
}

/// `ARMCI_Access_begin`: the process may now load and store its own segment at
/// `ptr` directly. Remote operations write that memory in place (load / store from
/// the node, the service thread from elsewhere), so this is a full barrier making
/// what completed before visible to the loads that follow.
#[no_mangle]
pub extern "C" fn PARMCI_Access_begin(ptr: *mut c_void) {
    check_own("ARMCI_Access_begin", ptr);
    fence(Ordering::SeqCst);
}

/// `ARMCI_Access_end`: the direct stores since [`PARMCI_Access_begin`] are visible to
/// remote gets that follow.
#[no_mangle]
pub extern "C" fn PARMCI_Access_end(ptr: *mut c_void) {
    check_own("ARMCI_Access_end", ptr);
    fence(Ordering::SeqCst);
}
