//! Vector (generalized I/O) put / get / accumulate, blocking and `Nb`.
//!
//! Each `armci_giov_t` moves `ptr_array_len` pieces of `bytes` bytes, piece `i` from
//! `src_ptr_array[i]` to `dst_ptr_array[i]`. Descriptors with no bytes or no pieces
//! move nothing; a call where all are empty succeeds without communicating.

use std::ffi::{c_int, c_void};

use nf_rma::{IoVec, Kind, Shape, Xfer};

use crate::args::{count, proc, scale};
use crate::ffi::fatal;
use crate::issue::{run, Mode};
use crate::nonblocking::ArmciHdl;
use crate::state::with;

/// `armci_giov_t`.
#[repr(C)]
pub struct ArmciGiov {
    src_ptr_array: *mut *mut c_void,
    dst_ptr_array: *mut *mut c_void,
    bytes: c_int,
    ptr_array_len: c_int,
}

/// One descriptor's pieces, as the rma layer wants them.
struct Pieces {
    local: Vec<*mut u8>,
    remote: Vec<u64>,
    bytes: usize,
}

/// Reads `iov[i].<name>[0..n]`, each non-NULL.
fn pointers(call: &str, i: usize, name: &str, arr: *mut *mut c_void, n: usize) -> Vec<*mut u8> {
    if arr.is_null() {
        fatal(call, format!("argument 'iov[{i}].{name}' is NULL"));
    }
    // SAFETY: ARMCI's contract: the array holds `ptr_array_len` pointers (checked
    // non-NULL above).
    let ptrs = unsafe { std::slice::from_raw_parts(arr, n) };
    ptrs.iter()
        .enumerate()
        .map(|(j, &p)| {
            if p.is_null() {
                fatal(call, format!("argument 'iov[{i}].{name}[{j}]' is NULL"));
            }
            p.cast::<u8>()
        })
        .collect()
}

/// Reads and checks the descriptors; `get` says which side is local.
fn read(call: &str, iov: *const ArmciGiov, len: c_int, get: bool) -> Vec<Pieces> {
    let len = count(call, "iov_len", len);
    if len == 0 {
        return Vec::new();
    }
    if iov.is_null() {
        fatal(call, "argument 'iov' is NULL");
    }
    // SAFETY: ARMCI's contract: `iov` holds `iov_len` descriptors (checked non-NULL).
    let descs = unsafe { std::slice::from_raw_parts(iov, len) };
    let mut out = Vec::with_capacity(len);
    for (i, d) in descs.iter().enumerate() {
        let bytes = count(call, &format!("iov[{i}].bytes"), d.bytes);
        let n = count(call, &format!("iov[{i}].ptr_array_len"), d.ptr_array_len);
        if bytes == 0 || n == 0 {
            continue;
        }
        let src = pointers(call, i, "src_ptr_array", d.src_ptr_array, n);
        let dst = pointers(call, i, "dst_ptr_array", d.dst_ptr_array, n);
        let (local, remote) = if get { (dst, src) } else { (src, dst) };
        out.push(Pieces {
            local,
            remote: remote.into_iter().map(|p| p as u64).collect(),
            bytes,
        });
    }
    out
}

/// One vector transfer.
fn vector(
    call: &str,
    kind: impl FnOnce() -> Kind,
    iov: *const ArmciGiov,
    len: c_int,
    p: c_int,
    mode: Mode,
) -> c_int {
    with(call, |st| {
        let p = proc(call, st, p);
        let kind = kind();
        let get = matches!(kind, Kind::Get);
        let pieces = read(call, iov, len, get);
        if pieces.is_empty() {
            return 0;
        }
        let iovs: Vec<IoVec<'_>> = pieces
            .iter()
            .map(|d| IoVec {
                local: &d.local,
                remote: &d.remote,
                bytes: d.bytes,
            })
            .collect();
        let x = Xfer {
            kind,
            proc: p,
            shape: Shape::Vector(&iovs),
        };
        let remote_arg = if get {
            "iov[].src_ptr_array"
        } else {
            "iov[].dst_ptr_array"
        };
        // SAFETY: ARMCI's contract: every local piece is valid memory until the
        // operation completes (for Nb, until its handle is waited for).
        unsafe { run(call, remote_arg, st, &x, mode) }
    })
}

/// `ARMCI_PutV`.
#[no_mangle]
pub extern "C" fn PARMCI_PutV(iov: *mut ArmciGiov, iov_len: c_int, proc: c_int) -> c_int {
    vector(
        "ARMCI_PutV",
        || Kind::Put,
        iov,
        iov_len,
        proc,
        Mode::Blocking,
    )
}

/// `ARMCI_GetV`.
#[no_mangle]
pub extern "C" fn PARMCI_GetV(iov: *mut ArmciGiov, iov_len: c_int, proc: c_int) -> c_int {
    vector(
        "ARMCI_GetV",
        || Kind::Get,
        iov,
        iov_len,
        proc,
        Mode::Blocking,
    )
}

/// `ARMCI_AccV`.
#[no_mangle]
pub extern "C" fn PARMCI_AccV(
    datatype: c_int,
    sc: *mut c_void,
    iov: *mut ArmciGiov,
    iov_len: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_AccV";
    vector(
        call,
        || Kind::Acc(scale(call, datatype, sc)),
        iov,
        iov_len,
        proc,
        Mode::Blocking,
    )
}

/// `ARMCI_NbPutV`.
#[no_mangle]
pub extern "C" fn PARMCI_NbPutV(
    iov: *mut ArmciGiov,
    iov_len: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    vector(
        "ARMCI_NbPutV",
        || Kind::Put,
        iov,
        iov_len,
        proc,
        Mode::Nb(hdl),
    )
}

/// `ARMCI_NbGetV`.
#[no_mangle]
pub extern "C" fn PARMCI_NbGetV(
    iov: *mut ArmciGiov,
    iov_len: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    vector(
        "ARMCI_NbGetV",
        || Kind::Get,
        iov,
        iov_len,
        proc,
        Mode::Nb(hdl),
    )
}

/// `ARMCI_NbAccV`.
#[no_mangle]
pub extern "C" fn PARMCI_NbAccV(
    datatype: c_int,
    sc: *mut c_void,
    iov: *mut ArmciGiov,
    iov_len: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    let call = "ARMCI_NbAccV";
    vector(
        call,
        || Kind::Acc(scale(call, datatype, sc)),
        iov,
        iov_len,
        proc,
        Mode::Nb(hdl),
    )
}
