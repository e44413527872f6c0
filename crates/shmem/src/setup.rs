//! Library setup, exit and query: `shmem_init` … `shmem_info_get_name`.

use std::ffi::{c_char, c_int, c_void};

use crate::error::exit;
use crate::state::{self, with};

/// `SHMEM_THREAD_FUNNELED`: what `shmem_init` grants.
const FUNNELED: c_int = 1;
/// `SHMEM_THREAD_MULTIPLE`: the most `shmem_init_thread` grants (`state.rs`).
const MULTIPLE: c_int = 3;
/// `SHMEM_MAX_NAME_LEN`.
const MAX_NAME_LEN: usize = 256;
/// `SHMEM_VENDOR_STRING`.
const VENDOR: &str = "ninefold libshmem";

/// `shmem_init`: joins the job, allocates the symmetric heap and makes the
/// executable's static data symmetric (collective). A
/// second call while running does nothing.
#[no_mangle]
pub extern "C" fn shmem_init() {
    if !state::running() {
        state::init(FUNNELED);
    }
}

/// `shmem_init_thread`: as `shmem_init`, granting the level asked for (every level up to
/// `SHMEM_THREAD_MULTIPLE`).
///
/// # Safety
/// `provided` is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn shmem_init_thread(requested: c_int, provided: *mut c_int) -> c_int {
    let level = requested.clamp(0, MULTIPLE);
    if !state::running() {
        state::init(level);
    }
    if !provided.is_null() {
        // SAFETY: the caller passes a writable int (checked non-NULL).
        unsafe { *provided = with("shmem_init_thread", |st| st.thread) };
    }
    0
}

/// `shmem_query_thread`: the thread level granted.
///
/// # Safety
/// `provided` is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn shmem_query_thread(provided: *mut c_int) {
    let level = with("shmem_query_thread", |st| st.thread);
    if !provided.is_null() {
        // SAFETY: as above.
        unsafe { *provided = level };
    }
}

/// `shmem_finalize`: completes everything and leaves the job (collective).
#[no_mangle]
pub extern "C" fn shmem_finalize() {
    state::finalize();
}

/// `shmem_global_exit`: asks the launcher to end the whole job with `status` (it stops
/// every other PE, and its own exit status is `status` where its protocol carries one),
/// then ends this process with `status`. Even a status of 0 ends the others, which
/// would otherwise wait for this PE forever.
#[no_mangle]
pub extern "C" fn shmem_global_exit(status: c_int) {
    state::end_job(status);
    exit(status)
}

/// `shmem_my_pe`.
#[no_mangle]
pub extern "C" fn shmem_my_pe() -> c_int {
    with("shmem_my_pe", |st| st.me as c_int)
}

/// `shmem_n_pes`.
#[no_mangle]
pub extern "C" fn shmem_n_pes() -> c_int {
    with("shmem_n_pes", |st| st.npes as c_int)
}

/// `shmem_pe_accessible`: 1 for every PE of the job (all are reachable), else 0.
#[no_mangle]
pub extern "C" fn shmem_pe_accessible(pe: c_int) -> c_int {
    with("shmem_pe_accessible", |st| {
        c_int::from(usize::try_from(pe).is_ok_and(|p| p < st.npes))
    })
}

/// `shmem_addr_accessible`: 1 when `addr` is symmetric (in the heap, or a global or
/// static variable of the executable) and `pe` exists.
#[no_mangle]
pub extern "C" fn shmem_addr_accessible(addr: *const c_void, pe: c_int) -> c_int {
    with("shmem_addr_accessible", |st| {
        let pe_ok = usize::try_from(pe).is_ok_and(|p| p < st.npes);
        let sym = st.offset(addr as usize, 1).is_some() || st.static_at(addr as usize, 1).is_some();
        c_int::from(pe_ok && sym)
    })
}

/// `shmem_ptr`: a load / store pointer to `dest` on `pe` when `pe` shares this host
/// (its part of the heap is mapped here), else NULL.
#[no_mangle]
pub extern "C" fn shmem_ptr(dest: *const c_void, pe: c_int) -> *mut c_void {
    let call = "shmem_ptr";
    with(call, |st| {
        let (remote, p) = st.remote(call, "dest", dest as usize, 1, pe);
        match st.rma.local_ptr(p, remote, 1) {
            Ok(Some(ptr)) => ptr.cast(),
            _ => std::ptr::null_mut(),
        }
    })
}

/// `shmem_info_get_version`: 1.5.
///
/// # Safety
/// Each pointer is NULL or a writable int.
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_version(major: *mut c_int, minor: *mut c_int) {
    // SAFETY: the caller passes writable ints (checked non-NULL).
    unsafe {
        if !major.is_null() {
            *major = 1;
        }
        if !minor.is_null() {
            *minor = 5;
        }
    }
}

/// `shmem_info_get_name`: the vendor string, NUL-terminated.
///
/// # Safety
/// `name` is NULL or `SHMEM_MAX_NAME_LEN` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn shmem_info_get_name(name: *mut c_char) {
    if name.is_null() {
        return;
    }
    let n = VENDOR.len().min(MAX_NAME_LEN - 1);
    // SAFETY: the caller passes SHMEM_MAX_NAME_LEN bytes; we write n + 1 of them.
    unsafe {
        std::ptr::copy_nonoverlapping(VENDOR.as_ptr(), name.cast::<u8>(), n);
        *name.add(n) = 0;
    }
}
