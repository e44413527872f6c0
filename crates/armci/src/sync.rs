//! Fences, read-modify-write and mutexes.

use std::ffi::{c_int, c_long, c_void};

use nf_rma::RmwOp;

use crate::args::{count, describe, nonnull, proc};
use crate::ffi::fatal;
use crate::state::with;

/// `enum ARMCI_Rmw_e` (armci_types.h).
const FETCH_AND_ADD: c_int = 0;
const FETCH_AND_ADD_LONG: c_int = 1;
const SWAP: c_int = 2;
const SWAP_LONG: c_int = 3;

/// `ARMCI_Fence`: every put and accumulate issued to `proc` is complete there.
#[no_mangle]
pub extern "C" fn PARMCI_Fence(p: c_int) {
    let call = "ARMCI_Fence";
    with(call, |st| {
        let p = proc(call, st, p);
        st.rma
            .fence(p)
            .unwrap_or_else(|e| fatal(call, describe("proc", &e)));
    });
}

/// `ARMCI_AllFence`: [`ARMCI_Fence`](PARMCI_Fence) for every process.
#[no_mangle]
pub extern "C" fn PARMCI_AllFence() {
    let call = "ARMCI_AllFence";
    with(call, |st| {
        st.rma
            .all_fence()
            .unwrap_or_else(|e| fatal(call, describe("", &e)));
    });
}

/// `ARMCI_Rmw`: atomic fetch-and-add or swap of the int / long at `prem` on `proc`;
/// the old value lands in `*ploc`.
#[no_mangle]
pub extern "C" fn PARMCI_Rmw(
    op: c_int,
    ploc: *mut c_void,
    prem: *mut c_void,
    value: c_int,
    p: c_int,
) -> c_int {
    let call = "ARMCI_Rmw";
    with(call, |st| {
        let p = proc(call, st, p);
        let loc = nonnull(call, "ploc", ploc);
        let remote = nonnull(call, "prem", prem) as u64;
        let rmw = match op {
            FETCH_AND_ADD => RmwOp::FetchAddInt(value),
            FETCH_AND_ADD_LONG => RmwOp::FetchAddLong(i64::from(value)),
            // SAFETY: ARMCI's contract: for ARMCI_SWAP `ploc` points to an int (non-NULL).
            SWAP => RmwOp::SwapInt(unsafe { loc.cast::<c_int>().read_unaligned() }),
            // SAFETY: for ARMCI_SWAP_LONG `ploc` points to a long (non-NULL).
            SWAP_LONG => RmwOp::SwapLong(unsafe { loc.cast::<c_long>().read_unaligned() }),
            _ => fatal(
                call,
                format!(
                    "argument 'op' is {op}; use ARMCI_FETCH_AND_ADD, ARMCI_FETCH_AND_ADD_LONG, \
                     ARMCI_SWAP or ARMCI_SWAP_LONG ({FETCH_AND_ADD} .. {SWAP_LONG})"
                ),
            ),
        };
        let old = st
            .rma
            .rmw(rmw, remote, p)
            .unwrap_or_else(|e| fatal(call, describe("prem", &e)));
        // SAFETY: as above; the old value has the operand's width.
        unsafe {
            match rmw.size() {
                4 => loc.cast::<c_int>().write_unaligned(old as c_int),
                _ => loc.cast::<c_long>().write_unaligned(old as c_long),
            }
        }
        0
    })
}

/// `ARMCI_Create_mutexes`: `count` mutexes on this process (collective).
#[no_mangle]
pub extern "C" fn PARMCI_Create_mutexes(n: c_int) -> c_int {
    let call = "ARMCI_Create_mutexes";
    let n = count(call, "count", n);
    with(call, |st| {
        st.rma
            .create_mutexes(n)
            .unwrap_or_else(|e| fatal(call, describe("", &e)));
        0
    })
}

/// `ARMCI_Destroy_mutexes` (collective).
#[no_mangle]
pub extern "C" fn PARMCI_Destroy_mutexes() -> c_int {
    let call = "ARMCI_Destroy_mutexes";
    with(call, |st| {
        st.rma
            .destroy_mutexes()
            .unwrap_or_else(|e| fatal(call, describe("", &e)));
        0
    })
}

/// Takes or releases mutex `m` of `p`.
fn mutex(call: &str, m: c_int, p: c_int, take: bool) {
    let m = count(call, "mutex", m);
    with(call, |st| {
        let p = proc(call, st, p);
        let r = if take {
            st.rma.lock(m, p)
        } else {
            st.rma.unlock(m, p)
        };
        r.unwrap_or_else(|e| fatal(call, describe("mutex", &e)));
    });
}

/// `ARMCI_Lock`: takes mutex `mutex` of `proc`, waiting in line.
#[no_mangle]
pub extern "C" fn PARMCI_Lock(m: c_int, p: c_int) {
    mutex("ARMCI_Lock", m, p, true);
}

/// `ARMCI_Unlock`: releases it.
#[no_mangle]
pub extern "C" fn PARMCI_Unlock(m: c_int, p: c_int) {
    mutex("ARMCI_Unlock", m, p, false);
}
