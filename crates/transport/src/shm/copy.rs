//! Copies of a few bytes into shared memory, without a call to `memcpy`.

/// Copies a short slice without a call to `memcpy` (most fast-box packets are a few
/// bytes of metadata and a small payload, where the call costs more than the copy).
///
/// # Safety
/// `dst` must be valid for `src.len()` bytes and not overlap `src`.
#[inline(always)]
pub(crate) unsafe fn copy_small(src: &[u8], dst: *mut u8) {
    let (s, n) = (src.as_ptr(), src.len());
    match n {
        0 => {}
        1 => dst.write(s.read()),
        2..=3 => copy_ends::<u16>(s, dst, n),
        4..=7 => copy_ends::<u32>(s, dst, n),
        8..=16 => copy_ends::<u64>(s, dst, n),
        _ => std::ptr::copy_nonoverlapping(s, dst, n),
    }
}

/// Copies `n` bytes, `size_of::<T>() <= n <= 2 * size_of::<T>()`, as two possibly
/// overlapping words: the first and the last.
///
/// # Safety
/// As for [`copy_small`], with `n` in that range.
#[inline(always)]
unsafe fn copy_ends<T: Copy>(s: *const u8, dst: *mut u8, n: usize) {
    let w = std::mem::size_of::<T>();
    dst.cast::<T>()
        .write_unaligned(s.cast::<T>().read_unaligned());
    dst.add(n - w)
        .cast::<T>()
        .write_unaligned(s.add(n - w).cast::<T>().read_unaligned());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_small_copies_every_length_exactly() {
        let src: Vec<u8> = (1..=64).collect();
        for n in 0..=src.len() {
            let mut dst = [0u8; 80];
            // SAFETY: dst has room for 64 bytes and does not overlap src.
            unsafe { copy_small(&src[..n], dst.as_mut_ptr()) };
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(dst[n..].iter().all(|&b| b == 0), "wrote past length {n}");
        }
    }
}
