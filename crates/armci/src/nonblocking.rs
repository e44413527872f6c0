//! Non-blocking handles: `armci_hdl_t` and the waits on it.
//!
//! GA keeps handles in its own tables, so an `armci_hdl_t` is two ints
//! (`armci_types.h`): the target of its last operation, and a token. Token 0 means
//! "nothing outstanding" (`ARMCI_INIT_HANDLE`); any other value names a list of
//! rma-layer handles in [`Handles`]. The top bit of the token marks an aggregate
//! handle (`ARMCI_SET_AGGREGATE_HANDLE`), which collects every operation started on
//! it until it is waited for; a plain handle holds one, so starting a second
//! operation on it first completes the first.

use std::collections::HashMap;
use std::ffi::c_int;

use nf_rma::{Handle, Rma};

use crate::args::{describe, proc};
use crate::ffi::fatal;
use crate::state::with;

/// `armci_hdl_t`.
#[repr(C)]
pub struct ArmciHdl {
    /// Target of the last operation started on the handle (-1: none).
    pub target: c_int,
    /// 0, or the token of outstanding operations (top bit: aggregate).
    pub token: c_int,
}

/// The aggregate bit of a token.
const AGGREGATE: u32 = 1 << 31;

/// Outstanding operations by token (the token without its aggregate bit).
#[derive(Default)]
pub struct Handles {
    next: u32,
    live: HashMap<u32, Vec<Handle>>,
}

impl Handles {
    /// Files rma handle `h`, started on `proc`, under the ARMCI handle `hdl`.
    pub fn record(
        &mut self,
        call: &str,
        rma: &Rma<'_>,
        hdl: &mut ArmciHdl,
        proc: usize,
        h: Handle,
    ) {
        let token = hdl.token as u32;
        let (aggregate, id) = (token & AGGREGATE, token & !AGGREGATE);
        match self.live.get_mut(&id) {
            Some(list) if id != 0 && aggregate != 0 => list.push(h),
            _ => {
                if id != 0 && aggregate == 0 {
                    // A plain handle holds one operation: finish the one before.
                    self.complete(call, rma, id);
                }
                let id = self.fresh();
                self.live.insert(id, vec![h]);
                hdl.token = (id | aggregate) as c_int;
            }
        }
        hdl.target = proc as c_int;
    }

    /// A token number not in use (never 0, never with the aggregate bit).
    fn fresh(&mut self) -> u32 {
        loop {
            self.next = (self.next + 1) & !AGGREGATE;
            if self.next != 0 && !self.live.contains_key(&self.next) {
                return self.next;
            }
        }
    }

    /// Waits for every operation under `id` (a live token, or one already done).
    fn complete(&mut self, call: &str, rma: &Rma<'_>, id: u32) {
        for h in self.live.remove(&id).unwrap_or_default() {
            if let Err(e) = rma.wait(h) {
                fatal(call, describe("handle", &e));
            }
        }
    }

    /// The token's id, checked to be outstanding; None for an empty handle.
    fn outstanding(&self, call: &str, hdl: &ArmciHdl) -> Option<u32> {
        let id = hdl.token as u32 & !AGGREGATE;
        if id == 0 {
            return None;
        }
        if !self.live.contains_key(&id) {
            fatal(
                call,
                format!(
                    "argument 'handle' (token {id}) names no outstanding operation: it was \
                     completed already, copied, or never set with ARMCI_INIT_HANDLE"
                ),
            );
        }
        Some(id)
    }
}

/// Reads a non-NULL handle pointer, or aborts naming `call`.
fn handle<'a>(call: &str, hdl: *mut ArmciHdl) -> &'a mut ArmciHdl {
    if hdl.is_null() {
        fatal(call, "argument 'handle' is NULL");
    }
    // SAFETY: ARMCI's contract: the handle points to an armci_hdl_t the caller owns
    // for the duration of the call (checked non-NULL above).
    unsafe { &mut *hdl }
}

/// `ARMCI_INIT_HANDLE`: the handle holds nothing (not aggregate).
#[no_mangle]
pub extern "C" fn ARMCI_INIT_HANDLE(hdl: *mut ArmciHdl) {
    let h = handle("ARMCI_INIT_HANDLE", hdl);
    h.target = -1;
    h.token = 0;
}

/// `ARMCI_SET_AGGREGATE_HANDLE`: later operations on the handle are waited for together.
#[no_mangle]
pub extern "C" fn ARMCI_SET_AGGREGATE_HANDLE(hdl: *mut ArmciHdl) {
    let h = handle("ARMCI_SET_AGGREGATE_HANDLE", hdl);
    h.token = (h.token as u32 | AGGREGATE) as c_int;
}

/// `ARMCI_UNSET_AGGREGATE_HANDLE`: back to one operation per handle.
#[no_mangle]
pub extern "C" fn ARMCI_UNSET_AGGREGATE_HANDLE(hdl: *mut ArmciHdl) {
    let h = handle("ARMCI_UNSET_AGGREGATE_HANDLE", hdl);
    h.token = (h.token as u32 & !AGGREGATE) as c_int;
}

/// `ARMCI_Wait`: returns once every operation on the handle is complete; 0.
#[no_mangle]
pub extern "C" fn PARMCI_Wait(hdl: *mut ArmciHdl) -> c_int {
    let call = "ARMCI_Wait";
    let h = handle(call, hdl);
    with(call, |st| {
        let mut handles = st.handles.borrow_mut();
        if let Some(id) = handles.outstanding(call, h) {
            handles.complete(call, &st.rma, id);
            h.token = (h.token as u32 & AGGREGATE) as c_int;
        }
        0
    })
}

/// `ARMCI_Test`: 0 when every operation on the handle is complete (the handle is
/// then empty), 1 while some is in flight. Never blocks.
#[no_mangle]
pub extern "C" fn PARMCI_Test(hdl: *mut ArmciHdl) -> c_int {
    let call = "ARMCI_Test";
    let h = handle(call, hdl);
    with(call, |st| {
        let mut handles = st.handles.borrow_mut();
        let Some(id) = handles.outstanding(call, h) else {
            return 0;
        };
        let list = handles.live.get_mut(&id).expect("outstanding");
        let mut failure = None;
        list.retain(|&x| match st.rma.test(x) {
            Ok(done) => !done,
            Err(e) => {
                failure.get_or_insert(e);
                false
            }
        });
        if let Some(e) = failure {
            fatal(call, describe("handle", &e));
        }
        if list.is_empty() {
            handles.live.remove(&id);
            h.token = (h.token as u32 & AGGREGATE) as c_int;
            0
        } else {
            1
        }
    })
}

/// `ARMCI_WaitProc`: completes every non-blocking operation to `proc`; 0.
#[no_mangle]
pub extern "C" fn PARMCI_WaitProc(p: c_int) -> c_int {
    let call = "ARMCI_WaitProc";
    with(call, |st| {
        let p = proc(call, st, p);
        st.rma
            .wait_proc(p)
            .unwrap_or_else(|e| fatal(call, describe("proc", &e)));
        0
    })
}

/// `ARMCI_WaitAll`: completes every non-blocking operation of this process; 0.
/// Explicit handles stay valid for a later `ARMCI_Wait`, which then returns at once.
#[no_mangle]
pub extern "C" fn PARMCI_WaitAll() -> c_int {
    let call = "ARMCI_WaitAll";
    with(call, |st| {
        st.rma
            .wait_all()
            .unwrap_or_else(|e| fatal(call, describe("", &e)));
        0
    })
}
