//! Strided put / get / accumulate (blocking and `Nb`), `ARMCI_PutS_flag`, and the
//! local packing helpers `armci_write_strided` / `armci_read_strided`.
//!
//! The layout (armci_onesided.h): `count[0]` bytes per chunk, `count[1..=L]` chunks
//! per level, one byte stride per level and side. A zero count moves nothing.

use std::ffi::{c_char, c_int, c_void};

use nf_rma::{Kind, Shape, Xfer};

use crate::args::{nonnull, proc, scale, strided, Strided};
use crate::contig::raise_flag;
use crate::ffi::fatal;
use crate::issue::{run, Mode};
use crate::nonblocking::ArmciHdl;
use crate::state::with;

/// ARMCI's strided arguments, as passed (`src_ptr`, `src_stride_arr`, `dst_ptr`,
/// `dst_stride_arr`, `count`, `stride_levels`, `proc` in armci.h).
#[derive(Clone, Copy)]
struct Args {
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
}

/// One strided transfer; for a get the local side is `dst`, otherwise `src`.
fn strided_op(call: &str, kind: impl FnOnce() -> Kind, a: Args, mode: Mode) -> c_int {
    let s: Strided = strided(call, a.levels, a.count, a.src_stride, a.dst_stride);
    with(call, |st| {
        let p = proc(call, st, a.proc);
        if s.is_empty() {
            return 0;
        }
        let kind = kind();
        let get = matches!(kind, Kind::Get);
        let (local, remote) = if get {
            (
                nonnull(call, "dst_ptr", a.dst),
                nonnull(call, "src_ptr", a.src),
            )
        } else {
            (
                nonnull(call, "src_ptr", a.src),
                nonnull(call, "dst_ptr", a.dst),
            )
        };
        let (local_strides, remote_strides) = if get {
            (&s.dst[..s.levels], &s.src[..s.levels])
        } else {
            (&s.src[..s.levels], &s.dst[..s.levels])
        };
        let x = Xfer {
            kind,
            proc: p,
            shape: Shape::Strided {
                local,
                local_strides,
                remote: remote as u64,
                remote_strides,
                count: s.count(),
            },
        };
        let remote_arg = if get { "src_ptr" } else { "dst_ptr" };
        // SAFETY: ARMCI's contract: the local side's layout is valid memory until the
        // operation completes (for Nb, until its handle is waited for).
        unsafe { run(call, remote_arg, st, &x, mode) }
    })
}

/// Gathers the strided arguments every call shares.
fn args(
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> Args {
    Args {
        src,
        src_stride,
        dst,
        dst_stride,
        count,
        levels,
        proc,
    }
}

/// `ARMCI_PutS`.
#[no_mangle]
pub extern "C" fn PARMCI_PutS(
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    let a = args(src, src_stride, dst, dst_stride, count, levels, proc);
    strided_op("ARMCI_PutS", || Kind::Put, a, Mode::Blocking)
}

/// `ARMCI_GetS`.
#[no_mangle]
pub extern "C" fn PARMCI_GetS(
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    let a = args(src, src_stride, dst, dst_stride, count, levels, proc);
    strided_op("ARMCI_GetS", || Kind::Get, a, Mode::Blocking)
}

/// `ARMCI_AccS`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn PARMCI_AccS(
    datatype: c_int,
    scale_ptr: *mut c_void,
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_AccS";
    let a = args(src, src_stride, dst, dst_stride, count, levels, proc);
    strided_op(
        call,
        || Kind::Acc(scale(call, datatype, scale_ptr)),
        a,
        Mode::Blocking,
    )
}

/// `ARMCI_NbPutS`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn PARMCI_NbPutS(
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    let a = args(src, src_stride, dst, dst_stride, count, levels, proc);
    strided_op("ARMCI_NbPutS", || Kind::Put, a, Mode::Nb(hdl))
}

/// `ARMCI_NbGetS`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn PARMCI_NbGetS(
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    let a = args(src, src_stride, dst, dst_stride, count, levels, proc);
    strided_op("ARMCI_NbGetS", || Kind::Get, a, Mode::Nb(hdl))
}

/// `ARMCI_NbAccS`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn PARMCI_NbAccS(
    datatype: c_int,
    scale_ptr: *mut c_void,
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    proc: c_int,
    hdl: *mut ArmciHdl,
) -> c_int {
    let call = "ARMCI_NbAccS";
    let a = args(src, src_stride, dst, dst_stride, count, levels, proc);
    strided_op(
        call,
        || Kind::Acc(scale(call, datatype, scale_ptr)),
        a,
        Mode::Nb(hdl),
    )
}

/// `ARMCI_PutS_flag`: strided put, then set the remote flag once the data is in place.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn PARMCI_PutS_flag(
    src: *mut c_void,
    src_stride: *const c_int,
    dst: *mut c_void,
    dst_stride: *const c_int,
    count: *const c_int,
    levels: c_int,
    flag: *mut c_int,
    value: c_int,
    proc: c_int,
) -> c_int {
    let call = "ARMCI_PutS_flag";
    if flag.is_null() {
        fatal(call, "argument 'flag' is NULL");
    }
    let a = args(src, src_stride, dst, dst_stride, count, levels, proc);
    strided_op(call, || Kind::Put, a, Mode::Blocking);
    raise_flag(call, flag, value, proc)
}

/// Calls `f(offset, bytes)` for each chunk of a local strided layout, in ARMCI's
/// order (level 1 fastest); offsets count from the layout's base.
fn for_each_chunk(s: &Strided, strides: &[usize], mut f: impl FnMut(usize, usize)) {
    let mut idx = [0usize; nf_rma::MAX_STRIDE_LEVELS + 1];
    loop {
        let off: usize = (1..=s.levels).map(|l| idx[l] * strides[l - 1]).sum();
        f(off, s.count[0]);
        let mut l = 1;
        while l <= s.levels {
            idx[l] += 1;
            if idx[l] < s.count[l] {
                break;
            }
            idx[l] = 0;
            l += 1;
        }
        if l > s.levels {
            return;
        }
    }
}

/// Packs (`pack`) or unpacks a local strided layout at `ptr` against `buf`.
fn local_strided(
    call: &str,
    ptr: *mut c_void,
    levels: c_int,
    stride: *const c_int,
    count: *const c_int,
    buf: *mut c_char,
    pack: bool,
) {
    let s = strided(call, levels, count, stride, stride);
    if s.is_empty() {
        return;
    }
    let base = nonnull(call, "ptr", ptr);
    let buf = nonnull(call, "buf", buf as *const c_void);
    let mut at = 0usize;
    for_each_chunk(&s, &s.src[..s.levels], |off, n| {
        // SAFETY: ARMCI's contract: `ptr` covers the strided layout and `buf` its
        // packed size; each chunk lies in both, and the two never overlap.
        unsafe {
            if pack {
                std::ptr::copy_nonoverlapping(base.add(off), buf.add(at), n);
            } else {
                std::ptr::copy_nonoverlapping(buf.add(at), base.add(off), n);
            }
        }
        at += n;
    });
}

/// `armci_write_strided`: packs the strided layout at `ptr` into `buf`.
#[no_mangle]
pub extern "C" fn armci_write_strided(
    ptr: *mut c_void,
    stride_levels: c_int,
    stride_arr: *const c_int,
    count: *const c_int,
    buf: *mut c_char,
) {
    local_strided(
        "armci_write_strided",
        ptr,
        stride_levels,
        stride_arr,
        count,
        buf,
        true,
    );
}

/// `armci_read_strided`: unpacks `buf` into the strided layout at `ptr`.
#[no_mangle]
pub extern "C" fn armci_read_strided(
    ptr: *mut c_void,
    stride_levels: c_int,
    stride_arr: *const c_int,
    count: *const c_int,
    buf: *mut c_char,
) {
    local_strided(
        "armci_read_strided",
        ptr,
        stride_levels,
        stride_arr,
        count,
        buf,
        false,
    );
}
