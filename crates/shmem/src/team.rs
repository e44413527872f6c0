//! What the C side's teams (`csrc/team.c`) need from the Rust side: a few symmetric
//! words per team slot, reserved at `shmem_init`, and the PEs of
//! `SHMEM_TEAM_SHARED`.
//!
//! 1. The team area is the heap's first block, taken by every PE at start-up before
//!    any `shmem_malloc` (so at the same offset everywhere, and zeroed, which is the
//!    idle state of its barrier words and counters). The program never sees it; its size is
//!    [`AREA`] bytes, which the C side checks against its own layout.
//! 2. `SHMEM_TEAM_SHARED` is the PEs whose heap is mapped here: those `shmem_ptr`
//!    reaches (the same host, unless `NF_RMA_DIRECT=0` makes each PE its own
//!    domain), this PE always among them.

use std::ffi::{c_char, c_int, c_void};

use crate::error::{call_name, fatal, say};
use crate::heap::Heap;
use crate::state::with;

/// Bytes of the team area: 64 slots of one 64-byte line each, then 64 slots of the
/// same-host collectives' 256 bytes of counters, then this PE's broadcast bounce
/// (a line and 4 KiB; `csrc/team.h`).
pub const AREA: usize = 64 * 64 + 64 * 256 + 64 + 4096;

/// Takes the team area from a fresh heap (start-up step 1 above): its offset.
pub fn reserve(heap: &mut Heap) -> Option<usize> {
    heap.alloc(AREA, 64)
}

/// The team area of this PE (a symmetric address); `*bytes` receives its size.
///
/// # Safety
/// `call` is a string literal; `bytes` is a writable `size_t`.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_team_area(call: *const c_char, bytes: *mut usize) -> *mut c_void {
    let call = call_name(call);
    // SAFETY: the C side passes a writable size_t.
    unsafe { *bytes = AREA };
    with(call, |st| (st.my_base() + st.team_area) as *mut c_void)
}

/// Writes the `SHMEM_TEAM_SHARED` PEs in increasing order into `out` (room for
/// every PE of the job); returns how many.
///
/// # Safety
/// `out` is writable for `shmem_n_pes()` ints.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_team_shared(out: *mut c_int) -> c_int {
    with("shmem_team_shared", |st| {
        let mut n = 0;
        for (p, m) in st.mapped.iter().enumerate() {
            if m.is_some() || p == st.me {
                // SAFETY: `out` has room for every PE (the caller's promise).
                unsafe { *out.add(n) = p as c_int };
                n += 1;
            }
        }
        n as c_int
    })
}

/// Prints `libshmem: PE <me>: <call>: <msg>` for a failure the call reports to the
/// program by its return value (a full team table), without ending it.
///
/// # Safety
/// `call` and `msg` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_say(call: *const c_char, msg: *const c_char) {
    if msg.is_null() {
        return say(call_name(call), "(no message)");
    }
    // SAFETY: `msg` is a NUL-terminated string (the caller's promise), read before
    // this returns.
    let msg = unsafe { std::ffi::CStr::from_ptr(msg) }.to_string_lossy();
    say(call_name(call), msg);
}

/// Ends start-up when the heap cannot hold the team area.
pub fn too_small(size: usize) -> ! {
    fatal(
        "shmem_init",
        format!(
            "SHMEM_SYMMETRIC_SIZE = {size} B cannot hold the {AREA} B the team table needs; \
             set at least 64K"
        ),
    )
}
