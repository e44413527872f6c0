//! The symmetric heap calls: `shmem_malloc`, `shmem_calloc`, `shmem_align`,
//! `shmem_realloc`, `shmem_free`, `shmem_malloc_with_hints`.
//!
//! Each is collective (lib.rs rule 5): `agree` allgathers its arguments and ends the
//! process naming the PEs whose differ; the allocator ([`crate::heap`]) then runs
//! alike on every PE, and a barrier ends the call.

use std::ffi::{c_long, c_void};

use crate::error::{fatal, say};
use crate::state::{with, State};

/// Checks that every PE passed the same `(name, value)` arguments to `call`.
fn agree(st: &State, call: &str, args: &[(&str, u64)]) {
    let mine: Vec<u8> = args.iter().flat_map(|(_, v)| v.to_le_bytes()).collect();
    let all = st
        .rma
        .wireup()
        .allgather_fixed(&mine)
        .unwrap_or_else(|e| fatal(call, e));
    for (pe, theirs) in all.iter().enumerate() {
        if *theirs == mine {
            continue;
        }
        let show = |b: &[u8]| -> String {
            args.iter()
                .zip(b.chunks(8))
                .map(|((n, _), w)| {
                    let v = u64::from_le_bytes(w.try_into().unwrap_or([0; 8]));
                    format!("{n} = {v}")
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        fatal(
            call,
            format!(
                "a collective with inconsistent arguments: this PE passed {}, PE {pe} \
                 passed {}; every PE must make the same heap calls with the same sizes",
                show(&mine),
                show(theirs)
            ),
        );
    }
}

/// Waits for every PE (the end of every heap call).
fn barrier(st: &State, call: &str) {
    st.rma.wireup().barrier().unwrap_or_else(|e| fatal(call, e));
}

/// A new block of `bytes` aligned to `align` (agreed and checked by the caller);
/// NULL for 0 bytes, and NULL with a message when the heap has no room (the spec's
/// answer, which every PE gives alike since their heaps are alike).
fn carve(st: &State, call: &str, bytes: usize, align: usize) -> *mut c_void {
    if bytes == 0 {
        return std::ptr::null_mut();
    }
    let mut heap = st.heap.borrow_mut();
    let Some(off) = heap.alloc(bytes, align) else {
        // The alignment is named when it, not the size, is what cannot fit.
        let aligned = if align > heap.size() {
            format!(" aligned to {align} B (more than the whole heap)")
        } else {
            String::new()
        };
        say(
            call,
            format!(
                "cannot allocate {bytes} B{aligned}: the symmetric heap's largest free range \
                 is {} B of {} B per PE; returning NULL (set SHMEM_SYMMETRIC_SIZE larger, \
                 e.g. 1G)",
                heap.largest_free(),
                heap.size()
            ),
        );
        return std::ptr::null_mut();
    };
    (st.my_base() + off) as *mut c_void
}

/// `malloc` with an alignment: the common path of the allocating calls.
fn alloc(call: &str, bytes: usize, align: usize, zero: bool) -> *mut c_void {
    with(call, |st| {
        agree(
            st,
            call,
            &[("size", bytes as u64), ("alignment", align as u64)],
        );
        if !align.is_power_of_two() {
            fatal(call, format!("alignment {align} is not a power of two"));
        }
        let p = carve(st, call, bytes, align);
        if zero && !p.is_null() {
            // SAFETY: `p` is a fresh block of at least `bytes` bytes in our heap part.
            unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
        }
        barrier(st, call);
        p
    })
}

/// The heap offset of a block pointer, or an error naming `call`.
fn block_of(st: &State, call: &str, ptr: *mut c_void) -> usize {
    st.offset(ptr as usize, 0)
        .filter(|&off| st.heap.borrow().len_of(off).is_some())
        .unwrap_or_else(|| {
            fatal(
                call,
                format!("ptr = {ptr:p} is not a block that shmem_malloc returned and that is live"),
            )
        })
}

/// `shmem_malloc` (collective).
#[no_mangle]
pub extern "C" fn shmem_malloc(size: usize) -> *mut c_void {
    alloc("shmem_malloc", size, 1, false)
}

/// `shmem_malloc_with_hints` (collective): the hints are accepted; none changes
/// where the block goes.
#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, _hints: c_long) -> *mut c_void {
    alloc("shmem_malloc_with_hints", size, 1, false)
}

/// `shmem_calloc` (collective): `count` zeroed elements of `size` bytes.
#[no_mangle]
pub extern "C" fn shmem_calloc(count: usize, size: usize) -> *mut c_void {
    let call = "shmem_calloc";
    let Some(bytes) = count.checked_mul(size) else {
        fatal(call, format!("count {count} x size {size} overflows"));
    };
    alloc(call, bytes, 1, true)
}

/// `shmem_align` (collective): a block aligned to `alignment` (a power of two).
#[no_mangle]
pub extern "C" fn shmem_align(alignment: usize, size: usize) -> *mut c_void {
    alloc("shmem_align", size, alignment, false)
}

/// `shmem_free` (collective): completes this PE's puts first, so none lands in a
/// block after it is reused.
#[no_mangle]
pub extern "C" fn shmem_free(ptr: *mut c_void) {
    let call = "shmem_free";
    if ptr.is_null() {
        return;
    }
    with(call, |st| {
        st.rma.all_fence().unwrap_or_else(|e| fatal(call, e));
        let off = block_of(st, call, ptr);
        agree(st, call, &[("ptr offset", off as u64)]);
        st.heap
            .borrow_mut()
            .free(off)
            .unwrap_or_else(|e| fatal(call, e));
        barrier(st, call);
    })
}

/// `shmem_realloc` (collective): a block of `size` bytes holding the old block's
/// bytes (as many as fit); NULL `ptr` allocates, size 0 frees.
#[no_mangle]
pub extern "C" fn shmem_realloc(ptr: *mut c_void, size: usize) -> *mut c_void {
    let call = "shmem_realloc";
    if ptr.is_null() {
        return alloc(call, size, 1, false);
    }
    if size == 0 {
        shmem_free(ptr);
        return std::ptr::null_mut();
    }
    with(call, |st| {
        st.rma.all_fence().unwrap_or_else(|e| fatal(call, e));
        let off = block_of(st, call, ptr);
        agree(
            st,
            call,
            &[("ptr offset", off as u64), ("size", size as u64)],
        );
        let old_len = st.heap.borrow().len_of(off).unwrap_or(0);
        let p = carve(st, call, size, 1);
        // SAFETY: both blocks lie in our heap part and do not overlap (the old one is
        // still allocated while the new one is carved).
        unsafe {
            std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), p.cast::<u8>(), old_len.min(size))
        };
        st.heap
            .borrow_mut()
            .free(off)
            .unwrap_or_else(|e| fatal(call, e));
        barrier(st, call);
        p
    })
}
