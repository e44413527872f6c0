//! Memory ordering, barriers, distributed locks, and the pause of the C side's wait
//! loops (`csrc/p2p.c`).
//!
//! Locks: the lock is the `long` at the symmetric address the program passes, on
//! PE 0. It holds 0 when free and `1 + holder` when taken; taking it is one
//! compare-and-swap of 0 by `1 + me`, retried with pauses; releasing first makes
//! this PE's puts remotely complete (the critical section's writes are then
//! visible to the next holder), then swaps 0 back and checks that we held it.

use std::ffi::{c_char, c_int, c_long};

use nf_rma::RmwOp;

use crate::error::{call_name, fatal};
use crate::state::{with, SlowCounts, State};

/// Spins of a wait loop before it starts yielding the CPU.
const SPINS: u32 = 64;

/// Makes every put and atomic this PE issued remotely complete.
fn quiet(st: &State, call: &str) {
    st.rma.all_fence().unwrap_or_else(|e| fatal(call, e));
}

/// `shmem_quiet` and `shmem_fence` (the stronger quiet for both) where a call
/// reached the Rust side since the last quiet (`csrc/fast.c`; otherwise nothing can
/// be outstanding in the rma layer and the C side only fences): every put and
/// atomic issued so far is complete and visible.
///
/// # Safety
/// `call` is a string literal.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_quiet(call: *const c_char) {
    let call = call_name(call);
    with(call, |st| {
        SlowCounts::count(&st.slow.quiets);
        quiet(st, call);
        crate::state::rma_idle();
    });
}

/// Orders what this PE put to `pe` before what it sends `pe` next (the C side's
/// put-with-signal: the data, this, then the signal).
#[no_mangle]
pub extern "C" fn nf_shmem_order(call: *const c_char, pe: c_int) {
    let call = call_name(call);
    with(call, |st| {
        let proc = st.check_pe(call, pe);
        st.rma.fence(proc).unwrap_or_else(|e| fatal(call, e));
    });
}

/// The world barrier through the rma layer: quiet, then wait for every PE
/// (`shmem_barrier_all` where the PEs do not all share this host, `csrc/team.c`).
///
/// # Safety
/// `call` is a string literal.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_world_barrier(call: *const c_char) {
    let call = call_name(call);
    with(call, |st| {
        st.rma.barrier().unwrap_or_else(|e| fatal(call, e))
    });
}

/// The world barrier of the wire-up, without completing puts (`shmem_sync_all`
/// where the PEs do not all share this host).
///
/// # Safety
/// `call` is a string literal.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_world_sync(call: *const c_char) {
    let call = call_name(call);
    with(call, |st| {
        st.rma.wireup().barrier().unwrap_or_else(|e| fatal(call, e))
    });
}

/// One compare-and-swap on the lock word on PE 0: the old value.
fn lock_cas(st: &State, call: &str, lock: *mut c_long, cond: i64, value: i64) -> i64 {
    let (remote, proc) = st.remote(call, "lock", lock as usize, 8, 0);
    st.rma
        .rmw(RmwOp::CompareSwapLong { cond, value }, remote, proc)
        .unwrap_or_else(|e| fatal(call, e))
}

/// `shmem_set_lock`: takes the lock, waiting while another PE holds it.
#[no_mangle]
pub extern "C" fn shmem_set_lock(lock: *mut c_long) {
    let call = "shmem_set_lock";
    let mut round = 0;
    loop {
        let taken = with(call, |st| {
            let me = st.me as i64 + 1;
            match lock_cas(st, call, lock, 0, me) {
                0 => true,
                old if old == me => fatal(call, "this PE holds the lock already"),
                _ => false,
            }
        });
        if taken {
            return;
        }
        pause(&mut round);
    }
}

/// `shmem_test_lock`: takes the lock if free (0), else returns 1 at once.
#[no_mangle]
pub extern "C" fn shmem_test_lock(lock: *mut c_long) -> c_int {
    let call = "shmem_test_lock";
    with(call, |st| {
        c_int::from(lock_cas(st, call, lock, 0, st.me as i64 + 1) != 0)
    })
}

/// `shmem_clear_lock`: completes this PE's puts, then releases the lock it holds.
#[no_mangle]
pub extern "C" fn shmem_clear_lock(lock: *mut c_long) {
    let call = "shmem_clear_lock";
    with(call, |st| {
        quiet(st, call);
        let me = st.me as i64 + 1;
        let old = lock_cas(st, call, lock, me, 0);
        if old != me {
            let who = if old == 0 {
                "nobody".to_owned()
            } else {
                format!("PE {}", old - 1)
            };
            fatal(call, format!("this PE does not hold the lock ({who} does)"));
        }
    });
}

/// Spin, then yield: waiting for memory other PEs change.
fn pause(round: &mut u32) {
    if *round < SPINS {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
    *round = round.saturating_add(1);
}

/// One step of a C wait loop (see `csrc/internal.h`).
///
/// # Safety
/// `call` is a string literal; `round` is a writable unsigned int.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_pause(call: *const c_char, round: *mut u32) {
    if !crate::state::usable() {
        // The state's own message: not running, or not this thread.
        crate::state::with(call_name(call), |_| ());
    }
    // SAFETY: the C side passes its loop's counter.
    pause(unsafe { &mut *round });
}

/// A comparison operator the C side does not know.
///
/// # Safety
/// `call` is a string literal.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_bad_cmp(call: *const c_char, cmp: c_int) {
    fatal(
        call_name(call),
        format!("cmp = {cmp} is not one of SHMEM_CMP_EQ, _NE, _GT, _GE, _LT, _LE"),
    );
}
