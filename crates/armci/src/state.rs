//! The process's ARMCI state: one [`Rma`] over the world group, and what the ABI
//! keeps beside it (its own segments, non-blocking handles).
//!
//! ARMCI has no handle to pass around, so the state is process-wide. `Rma` is used
//! from one thread (it is `!Sync`), so the state lives in a thread-local of the
//! thread that called `ARMCI_Init`; a call from another thread is told so and aborts.
//!
//! Start-up and shutdown, called from `ARMCI_Init` / `ARMCI_Finalize` (setup.c):
//! 1. `nf_armci_rs_init`: join the rma layer over the world group's wire-up;
//! 2. `nf_armci_rs_node_of`: hand C the rma layer's domains, so the topology calls
//!    name exactly the processes that share memory;
//! 3. `nf_armci_rs_finalize`: complete everything, barrier, stop the service thread.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_char, c_int};

use nf_rma::Rma;

use crate::ffi::{fatal, NfaWireup};
use crate::nonblocking::Handles;
use crate::wireup::CTeam;

/// Everything between `ARMCI_Init` and `ARMCI_Finalize`.
pub struct State {
    /// The rma layer, over the world group.
    pub rma: Rma<'static>,
    /// This process's live segments: base → bytes (for `ARMCI_Free` checks and the
    /// cap of `ARMCI_Set_shm_limit`).
    pub own: RefCell<HashMap<u64, u64>>,
    /// Outstanding non-blocking operations by handle token.
    pub handles: RefCell<Handles>,
}

thread_local! {
    static STATE: RefCell<Option<State>> = const { RefCell::new(None) };
    /// `ARMCI_Set_shm_limit`'s cap in bytes (0: none); may be set before `ARMCI_Init`.
    static LIMIT: Cell<u64> = const { Cell::new(0) };
}

/// Runs `f` on the state, or aborts naming `call` when ARMCI is not running here.
pub fn with<R>(call: &str, f: impl FnOnce(&State) -> R) -> R {
    STATE.with(|s| {
        let Ok(s) = s.try_borrow() else {
            fatal(call, "called while ARMCI_Init or ARMCI_Finalize is running");
        };
        match s.as_ref() {
            Some(state) => f(state),
            None => fatal(
                call,
                "ARMCI is not initialised on this thread; call ARMCI_Init after MPI_Init, \
                 and make ARMCI calls from the thread that did",
            ),
        }
    })
}

/// The cap of `ARMCI_Set_shm_limit` (0: none).
pub fn limit() -> u64 {
    LIMIT.with(Cell::get)
}

/// Copies `msg` into C's `err` buffer of `len` bytes, NUL-terminated.
fn report(err: *mut c_char, len: usize, msg: &str) {
    if err.is_null() || len == 0 {
        return;
    }
    let n = msg.len().min(len - 1);
    // SAFETY: C passes a buffer of `len` writable bytes; we write `n + 1 <= len`.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr(), err.cast::<u8>(), n);
        *err.add(n) = 0;
    }
}

/// Step 1: joins the rma layer over the world group; 0, or 1 with the reason in `err`.
///
/// # Safety
/// `world` is NULL or a wire-up whose communicator and rank table outlive the state;
/// `err` is NULL or `errlen` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_init(
    world: *const NfaWireup,
    err: *mut c_char,
    errlen: usize,
) -> c_int {
    if world.is_null() {
        report(err, errlen, "no world wire-up");
        return 1;
    }
    // SAFETY: C passes the world group's wire-up, whose communicator and rank table
    // live in its static state until after nf_armci_rs_finalize.
    let team = unsafe { CTeam::new(&*world) };
    match Rma::new(team) {
        Ok(rma) => {
            let state = State {
                rma,
                own: RefCell::default(),
                handles: RefCell::default(),
            };
            STATE.with(|s| *s.borrow_mut() = Some(state));
            0
        }
        Err(e) => {
            report(err, errlen, &e.to_string());
            1
        }
    }
}

/// Step 2: writes the domain (node) of every world rank into `node_of[0..n]`.
///
/// # Safety
/// `node_of` is NULL or `n` writable ints.
#[no_mangle]
pub unsafe extern "C" fn nf_armci_rs_node_of(node_of: *mut c_int, n: c_int) -> c_int {
    with("ARMCI_Init", |st| {
        let domains = st.rma.domains();
        let n = usize::try_from(n).unwrap_or(0);
        if node_of.is_null() || n != st.rma.size() {
            fatal("ARMCI_Init", "the node table does not match the world");
        }
        // SAFETY: C passes a table of `n` ints (one per world rank), checked non-NULL.
        let out = unsafe { std::slice::from_raw_parts_mut(node_of, n) };
        for (p, slot) in out.iter_mut().enumerate() {
            *slot = domains.id_of(p).map_or(-1, |d| d as c_int);
        }
        0
    })
}

/// Step 3: completes every operation, waits for every process, stops the service
/// thread and unmaps every segment (collective).
#[no_mangle]
pub extern "C" fn nf_armci_rs_finalize(_world: *const NfaWireup) -> c_int {
    let state = STATE.with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else {
            fatal("ARMCI_Finalize", "called from inside another ARMCI call");
        };
        s.take()
    });
    let Some(state) = state else {
        fatal("ARMCI_Finalize", "ARMCI is not initialised on this thread");
    };
    match state.rma.finalize() {
        Ok(()) => 0,
        Err(e) => fatal("ARMCI_Finalize", e),
    }
}

/// Drops the state without talking to anyone (for `ARMCI_Error` and exits); the
/// segment files are already unlinked, so nothing is left behind.
#[no_mangle]
pub extern "C" fn nf_armci_rs_cleanup() {
    STATE.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.take();
        }
    });
}

/// `ARMCI_Set_shm_limit`: caps the bytes of this process's live segments.
#[no_mangle]
pub extern "C" fn nf_armci_rs_set_limit(bytes: u64) {
    LIMIT.with(|l| l.set(bytes));
}
