//! The one way an OpenSHMEM call fails: a message naming the call and this PE on
//! stderr, then the end of this process (the launcher stops the job, naming it).

use std::ffi::{c_char, CStr};
use std::fmt::Display;
use std::sync::atomic::{AtomicI64, Ordering};

/// This PE's number once known (-1 before `shmem_init` has joined the job).
static MY_PE: AtomicI64 = AtomicI64::new(-1);

/// Records this PE's number for error messages.
pub fn set_pe(pe: usize) {
    MY_PE.store(pe as i64, Ordering::Relaxed);
}

/// Prints `libshmem: PE <me>: <call>: <msg>` and ends the process with status 1.
pub fn fatal(call: impl Display, msg: impl Display) -> ! {
    say(call, msg);
    exit(1)
}

/// Prints `libshmem: PE <me>: <call>: <msg>` on stderr, for a failure the call
/// reports to the program (a NULL from `shmem_malloc`) rather than ending it.
pub fn say(call: impl Display, msg: impl Display) {
    let pe = MY_PE.load(Ordering::Relaxed);
    let who = if pe < 0 {
        "PE ?".to_owned()
    } else {
        format!("PE {pe}")
    };
    // One write, so the lines of PEs failing together do not interleave.
    let line = format!("libshmem: {who}: {call}: {msg}\n");
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), line.as_bytes());
}

/// Ends the process with `status` through C's `exit`, so the program's buffered
/// stdio output is written first.
pub fn exit(status: i32) -> ! {
    // SAFETY: `exit` runs the C atexit handlers and flushes stdio; it never returns.
    unsafe { libc::exit(status) }
}

/// The call name the C side passed (a string literal), borrowed.
pub(crate) fn call_name(call: *const c_char) -> &'static str {
    if call.is_null() {
        return "shmem";
    }
    // SAFETY: the C side passes string literals, which live as long as the library.
    unsafe { CStr::from_ptr(call) }.to_str().unwrap_or("shmem")
}

/// A call's name as the C side passed it, read only when a message shows it: the
/// hot calls (put, get, atomics) carry it through their checks without measuring or
/// validating the string (that was a quarter of a same-host 8-byte put).
#[derive(Clone, Copy)]
pub(crate) struct CallName(pub *const c_char);

impl Display for CallName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(call_name(self.0))
    }
}

/// [`fatal`] for the C side (`csrc/coll.c`).
///
/// # Safety
/// `call` and `msg` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_fatal(call: *const c_char, msg: *const c_char) {
    let msg = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: the C side passes a NUL-terminated string.
        unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned()
    };
    fatal(call_name(call), msg)
}
