//! The one untyped atomic every typed atomic of the C side ends in (`csrc/amo.c`):
//! a read-modify-write on a 4- or 8-byte integer (lib.rs rule 3): on a same-host
//! PE's heap one hardware atomic on the mapping (`RmwOp::apply`), else `Rma::rmw`
//! (whose service thread applies the same hardware atomic, so both mix safely).
//!
//! | C operation (`enum nf_amo`) | rma op, 4 B / 8 B |
//! |---|---|
//! | 0 fetch | `FetchAddInt(0)` / `FetchAddLong(0)` |
//! | 1 set, 2 swap | `SwapInt` / `SwapLong` (set drops the old value) |
//! | 3 compare_swap | `CompareSwapInt` / `CompareSwapLong` |
//! | 4 add, inc (operand 1), fetch_add, fetch_inc | `FetchAddInt` / `FetchAddLong` |
//! | 5 and, 6 or, 7 xor | `AndInt` … `XorLong` |

use std::ffi::{c_char, c_int, c_void};

use nf_rma::RmwOp;

use crate::error::{fatal, CallName};
use crate::state::{with, SlowCounts};

/// The rma op for C operation `op` on `size` bytes, operand `v`, condition `c`.
pub fn rmw_op(op: c_int, size: usize, v: i64, c: i64) -> Option<RmwOp> {
    let (vi, ci) = (v as i32, c as i32);
    Some(match (op, size) {
        (0, 4) => RmwOp::FetchAddInt(0),
        (0, 8) => RmwOp::FetchAddLong(0),
        (1 | 2, 4) => RmwOp::SwapInt(vi),
        (1 | 2, 8) => RmwOp::SwapLong(v),
        (3, 4) => RmwOp::CompareSwapInt {
            cond: ci,
            value: vi,
        },
        (3, 8) => RmwOp::CompareSwapLong { cond: c, value: v },
        (4, 4) => RmwOp::FetchAddInt(vi),
        (4, 8) => RmwOp::FetchAddLong(v),
        (5, 4) => RmwOp::AndInt(vi),
        (5, 8) => RmwOp::AndLong(v),
        (6, 4) => RmwOp::OrInt(vi),
        (6, 8) => RmwOp::OrLong(v),
        (7, 4) => RmwOp::XorInt(vi),
        (7, 8) => RmwOp::XorLong(v),
        _ => return None,
    })
}

/// Applies C operation `op` to the `size`-byte integer at symmetric `dest` on `pe`;
/// returns its old value (4-byte values sign-extended).
///
/// # Safety
/// `call` is a string literal.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_amo(
    call: *const c_char,
    op: c_int,
    dest: *mut c_void,
    value: i64,
    cond: i64,
    size: usize,
    pe: c_int,
) -> i64 {
    let call = CallName(call);
    with(call, |st| {
        SlowCounts::count(&st.slow.amos);
        let Some(rmw) = rmw_op(op, size, value, cond) else {
            fatal(
                call,
                format!("no atomic operation {op} on {size}-byte integers"),
            );
        };
        // Checked here for both paths: the hardware atomic of the same-host path
        // needs it (the rma layer checks its own).
        if !(dest as usize).is_multiple_of(size) {
            fatal(
                call,
                format!(
                    "dest = {dest:p} is not aligned to {size} bytes; atomics work on \
                     naturally aligned integers"
                ),
            );
        }
        if let Some(at) = st.mapped_at(call, "dest", dest as usize, size, pe) {
            // SAFETY: `at` lies in the peer's live heap mapping (checked), aligned to
            // `size` (the mapping is page-aligned and `dest` aligned, checked), and
            // every other access to it by this library is a hardware atomic too.
            return unsafe { rmw.apply(at) };
        }
        let (remote, proc) = st.remote(call, "dest", dest as usize, size, pe);
        st.rma
            .rmw(rmw, remote, proc)
            .unwrap_or_else(|e| fatal(call, e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_maps_on_both_sizes_and_nothing_else() {
        for op in 0..8 {
            for size in [4, 8] {
                let r = rmw_op(op, size, 5, 3).unwrap();
                assert_eq!(r.size(), size, "op {op}");
            }
            assert_eq!(rmw_op(op, 2, 0, 0), None);
        }
        assert_eq!(rmw_op(8, 8, 0, 0), None);
        assert_eq!(
            rmw_op(3, 4, -1, 7),
            Some(RmwOp::CompareSwapInt { cond: 7, value: -1 })
        );
    }
}
