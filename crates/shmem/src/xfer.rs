//! The untyped RMA every typed, sized and `mem` put / get of the C side ends in
//! (`csrc/rma.c`): translate the symmetric address, then a memcpy on the mapping of a
//! same-host PE's heap (the rma layer's direct path without its per-call lookups),
//! or one rma transfer.

use std::ffi::{c_char, c_int, c_void};

use nf_rma::{Kind, Shape, Xfer};

use crate::error::{fatal, CallName};
use crate::state::{with, SlowCounts, State};

/// Runs `x`, naming `call` if the rma layer refuses it.
///
/// # Safety
/// The local memory of `x` must be valid for its shape (read for a put, written for
/// a get).
unsafe fn run(st: &State, call: CallName, x: &Xfer<'_>) {
    // SAFETY: forwarded from the caller.
    if let Err(e) = unsafe { st.rma.xfer(x) } {
        fatal(call, e);
    }
}

/// A contiguous transfer of `bytes`: symmetric `sym` on `pe` (put: the destination,
/// named `dest`; get: the source, named `source`), `local` here; a memcpy where `pe`
/// shares this host, else one rma transfer.
///
/// # Safety
/// `local` is valid for `bytes` bytes (read for a put, written for a get).
unsafe fn contig(call: CallName, kind: Kind, sym: usize, local: *mut u8, bytes: usize, pe: c_int) {
    with(call, |st| {
        let (arg, counter) = if matches!(kind, Kind::Put) {
            ("dest", &st.slow.puts)
        } else {
            ("source", &st.slow.gets)
        };
        SlowCounts::count(counter);
        // Nothing to move: the addresses may be anything, even NULL (as in every
        // implementation); the PE must still exist.
        if bytes == 0 {
            st.check_pe(call, pe);
            return;
        }
        if let Some(at) = st.mapped_at(call, arg, sym, bytes, pe) {
            let (from, to) = match kind {
                Kind::Put => (local.cast_const(), at),
                _ => (at.cast_const(), local),
            };
            // SAFETY: the caller vouches for `local`; `at` lies in the peer's live heap
            // mapping (checked); `copy` tolerates overlap (a PE putting to itself).
            unsafe { std::ptr::copy(from, to, bytes) };
            return;
        }
        let (remote, proc) = st.remote(call, arg, sym, bytes, pe);
        let shape = Shape::Contig {
            local,
            remote,
            bytes,
        };
        // SAFETY: the caller vouches for `local`.
        unsafe { run(st, call, &Xfer { kind, proc, shape }) }
    })
}

/// Contiguous put of `bytes` from local `src` to symmetric `dest` on `pe`.
///
/// # Safety
/// `src` is readable for `bytes` bytes; `call` is a string literal.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_put(
    call: *const c_char,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    pe: c_int,
) {
    // SAFETY: forwarded from the caller; a put only reads `src`.
    unsafe {
        contig(
            CallName(call),
            Kind::Put,
            dest as usize,
            src as *mut u8,
            bytes,
            pe,
        )
    }
}

/// Contiguous get of `bytes` from symmetric `src` on `pe` into local `dest`.
///
/// # Safety
/// `dest` is writable for `bytes` bytes; `call` is a string literal.
#[no_mangle]
pub unsafe extern "C" fn nf_shmem_get(
    call: *const c_char,
    dest: *mut c_void,
    src: *const c_void,
    bytes: usize,
    pe: c_int,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        contig(
            CallName(call),
            Kind::Get,
            src as usize,
            dest.cast(),
            bytes,
            pe,
        )
    }
}

/// A strided transfer: `nelems` elements of `elem` bytes, the symmetric side
/// `sym` with stride `sym_stride` elements, the local side `local` with
/// `local_stride` (`iput`: dest is symmetric; `iget`: source is).
#[allow(clippy::too_many_arguments)]
unsafe fn strided(
    call: *const c_char,
    kind: Kind,
    sym: usize,
    sym_stride: isize,
    local: *mut u8,
    local_stride: isize,
    elem: usize,
    nelems: usize,
    pe: c_int,
) {
    let call = CallName(call);
    with(call, |st| {
        let (sym_arg, local_arg) = match kind {
            Kind::Put => ("dst", "sst"),
            _ => ("sst", "dst"),
        };
        for (arg, s) in [(sym_arg, sym_stride), (local_arg, local_stride)] {
            if s < 1 {
                fatal(
                    call,
                    format!("stride {arg} = {s}; strides must be at least 1"),
                );
            }
        }
        // A stride whose bytes overflow cannot be in the heap: refused, not wrapped.
        let step = |s: isize| (s as usize).checked_mul(elem);
        let (Some(sym_step), Some(local_step)) = (step(sym_stride), step(local_stride)) else {
            fatal(
                call,
                format!(
                    "strides {sym_arg} = {sym_stride}, {local_arg} = {local_stride} of \
                     {elem}-byte elements overflow the address space"
                ),
            );
        };
        if nelems == 0 || elem == 0 {
            st.check_pe(call, pe);
            return;
        }
        let extent = nelems
            .saturating_sub(1)
            .saturating_mul(sym_step)
            .saturating_add(elem);
        let arg = if matches!(kind, Kind::Put) {
            "dest"
        } else {
            "source"
        };
        let (remote, proc) = st.remote(call, arg, sym, extent, pe);
        let count = [elem, nelems];
        let shape = Shape::Strided {
            local,
            local_strides: &[local_step],
            remote,
            remote_strides: &[sym_step],
            count: &count,
        };
        // SAFETY: the caller vouches for the local side.
        unsafe { run(st, call, &Xfer { kind, proc, shape }) }
    })
}

/// `iput`: element `i` of local `src` (stride `sst`) to element `i` of symmetric
/// `dest` (stride `dst`) on `pe`.
///
/// # Safety
/// `src` is readable at every element the strides reach; `call` is a literal.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn nf_shmem_iput(
    call: *const c_char,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    elem: usize,
    nelems: usize,
    pe: c_int,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        strided(
            call,
            Kind::Put,
            dest as usize,
            dst,
            src as *mut u8,
            sst,
            elem,
            nelems,
            pe,
        )
    }
}

/// `iget`: element `i` of symmetric `src` (stride `sst`) on `pe` to element `i` of
/// local `dest` (stride `dst`).
///
/// # Safety
/// `dest` is writable at every element the strides reach; `call` is a literal.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn nf_shmem_iget(
    call: *const c_char,
    dest: *mut c_void,
    src: *const c_void,
    dst: isize,
    sst: isize,
    elem: usize,
    nelems: usize,
    pe: c_int,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        strided(
            call,
            Kind::Get,
            src as usize,
            sst,
            dest.cast(),
            dst,
            elem,
            nelems,
            pe,
        )
    }
}
