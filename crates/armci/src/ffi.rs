//! The boundary with libarmci's C side (`csrc/internal.h` declares the same items).
//!
//! C hands Rust its collectives as a [`NfaWireup`] (function pointers over a group's
//! MPI communicator) and offers [`fatal`] to abort the job; everything else C needs
//! from Rust is an exported `nf_armci_rs_*` function in the other modules.

use std::borrow::Cow;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt::Display;

/// `struct nfa_wireup`: one group's collectives, as C provides them.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct NfaWireup {
    /// The group's `MPI_Comm`, opaque here.
    pub ctx: *mut c_void,
    /// The caller's rank in the group.
    pub rank: c_int,
    /// Members.
    pub size: c_int,
    /// World rank of each group rank (`size` entries).
    pub members: *const c_int,
    /// Fixed-size allgather: `bytes` from every member into `all`, in rank order.
    pub allgather: unsafe extern "C" fn(
        ctx: *mut c_void,
        mine: *const c_void,
        all: *mut c_void,
        bytes: usize,
    ) -> c_int,
    /// Barrier over the group.
    pub barrier: unsafe extern "C" fn(ctx: *mut c_void) -> c_int,
}

extern "C" {
    /// Prints "libarmci: rank R: CALL: MSG" and aborts the whole job.
    fn nfa_fatal_msg(call: *const c_char, msg: *const c_char) -> !;
}

/// Aborts the job with `msg`, naming the ARMCI `call` that failed. Every bad argument
/// and every failure of an ARMCI call ends here: ARMCI has no way to recover.
pub fn fatal(call: &str, msg: impl Display) -> ! {
    let text = |s: String| CString::new(s.replace('\0', " ")).expect("NULs were replaced");
    let call = text(call.to_owned());
    let msg = text(msg.to_string());
    // SAFETY: both are valid NUL-terminated strings; the function never returns, so
    // their lifetime does not matter after the call.
    unsafe { nfa_fatal_msg(call.as_ptr(), msg.as_ptr()) }
}

/// The caller's name as C passed it (borrowed: no allocation on the fast paths).
pub(crate) fn call_name(call: *const c_char) -> Cow<'static, str> {
    if call.is_null() {
        return Cow::Borrowed("ARMCI");
    }
    // SAFETY: C passes a string literal, which lives as long as the library.
    unsafe { CStr::from_ptr(call) }.to_string_lossy()
}
