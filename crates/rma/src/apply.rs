//! Applying accumulate and rmw to target memory, under the target's stripe locks.
//!
//! The same functions run in an origin that reaches the target's memory directly and
//! in the target's service thread, so both paths take the same locks (`control.rs`
//! rule 2) and their accumulates and rmw are atomic with respect to each other.

use crate::error::RmaError;
use crate::shm::control::{stripes_of, Control};
use crate::shm::lock::{lock_stripes, Patience};
use crate::xfer::{RmwOp, Scale};

/// Where an operation lands: the target's control segment, the address in the
/// target's space (which picks the stripes) and the same bytes in this process.
pub(crate) struct Target<'c> {
    /// The target's control segment.
    pub ctl: &'c Control,
    /// The address in the owner's space.
    pub owner_addr: u64,
    /// The same address in this process.
    pub local: *mut u8,
}

/// Who is applying: stamped into the locks for diagnostics, and how to wait.
pub(crate) struct Applier<'p> {
    /// Our pid.
    pub pid: u32,
    /// How to wait for a held stripe.
    pub patience: &'p Patience,
}

/// `dst[i] += scale · src[i]` for `len` bytes under the stripes of the range.
///
/// # Safety
/// `t.local` must be valid for `len` bytes of writes and `src` for `len` bytes of
/// reads; the ranges may be unaligned but must not overlap.
pub(crate) unsafe fn acc(
    t: &Target<'_>,
    who: &Applier<'_>,
    scale: Scale,
    src: *const u8,
    len: usize,
) -> Result<(), RmaError> {
    let _guard = lock_stripes(
        t.ctl,
        stripes_of(t.owner_addr, len as u64),
        who.pid,
        who.patience,
        "acc",
    )?;
    // SAFETY: forwarded from the caller; the stripes make us the only accumulator.
    unsafe { acc_kernel(scale, t.local, src, len) };
    Ok(())
}

/// Applies `op` to the integer at `t` (aligned to its size) and returns the old value.
///
/// # Safety
/// `t.local` must be valid and aligned for an integer of `op.size()` bytes.
pub(crate) unsafe fn rmw(t: &Target<'_>, who: &Applier<'_>, op: RmwOp) -> Result<i64, RmaError> {
    let _guard = lock_stripes(
        t.ctl,
        stripes_of(t.owner_addr, op.size() as u64),
        who.pid,
        who.patience,
        "rmw",
    )?;
    // SAFETY: the caller promises validity and alignment; other processes touch these
    // bytes only atomically or under the same stripe.
    let old = unsafe { op.apply(t.local) };
    Ok(old)
}

/// The element-wise kernels (wrapping for integers, as C's unsigned arithmetic on
/// two's complement; IEEE for floats; complex scale multiplies complex elements).
///
/// # Safety
/// As for [`acc`].
unsafe fn acc_kernel(scale: Scale, dst: *mut u8, src: *const u8, len: usize) {
    // SAFETY: (all arms) `dst` and `src` are valid for `len` bytes, `len` is a multiple
    // of the element size (checked by `shape::check`), and unaligned access is used.
    unsafe {
        match scale {
            // A scale of one (the common case) is a plain sum: one operation per element.
            Scale::Int(1) => each(dst, src, len, |d: i32, x: i32| d.wrapping_add(x)),
            Scale::Long(1) => each(dst, src, len, |d: i64, x: i64| d.wrapping_add(x)),
            Scale::Float(1.0) => each(dst, src, len, |d: f32, x: f32| d + x),
            Scale::Double(1.0) => each(dst, src, len, |d: f64, x: f64| d + x),
            Scale::Int(s) => each(dst, src, len, |d: i32, x: i32| {
                d.wrapping_add(s.wrapping_mul(x))
            }),
            Scale::Long(s) => each(dst, src, len, |d: i64, x: i64| {
                d.wrapping_add(s.wrapping_mul(x))
            }),
            Scale::Float(s) => each(dst, src, len, |d: f32, x: f32| d + s * x),
            Scale::Double(s) => each(dst, src, len, |d: f64, x: f64| d + s * x),
            Scale::ComplexFloat([sr, si]) => each(dst, src, len, |d: [f32; 2], x: [f32; 2]| {
                [d[0] + sr * x[0] - si * x[1], d[1] + sr * x[1] + si * x[0]]
            }),
            Scale::ComplexDouble([sr, si]) => each(dst, src, len, |d: [f64; 2], x: [f64; 2]| {
                [d[0] + sr * x[0] - si * x[1], d[1] + sr * x[1] + si * x[0]]
            }),
        }
    }
}

/// `dst[i] = f(dst[i], src[i])` over `len / size_of::<T>()` elements, aligned or not.
///
/// # Safety
/// `dst` and `src` valid for `len` bytes, not overlapping.
#[inline(always)]
unsafe fn each<T: bytemuck::Pod>(dst: *mut u8, src: *const u8, len: usize, f: impl Fn(T, T) -> T) {
    let n = len / std::mem::size_of::<T>();
    let (d, s) = (dst.cast::<T>(), src.cast::<T>());
    if d.is_aligned() && s.is_aligned() {
        // The usual case (segments are page-aligned, buffers naturally aligned): as
        // slices, so the loop vectorizes.
        // SAFETY: aligned, valid for n elements, not overlapping (caller), and any bit
        // pattern is a valid T (Pod).
        let (d, s) = unsafe {
            (
                std::slice::from_raw_parts_mut(d, n),
                std::slice::from_raw_parts(s, n),
            )
        };
        for (a, &b) in d.iter_mut().zip(s) {
            *a = f(*a, b);
        }
        return;
    }
    for i in 0..n {
        // SAFETY: i < n elements lie within the `len` bytes the caller vouches for.
        unsafe {
            d.add(i)
                .write_unaligned(f(d.add(i).read_unaligned(), s.add(i).read_unaligned()))
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::control::{self, Control};
    use crate::shm::map::Mapping;
    use nf_core::config::WaitMode;
    use nf_core::wait::Waiter;
    use std::sync::Arc;
    use std::time::Duration;

    /// Every rmw kind on a real control segment: the old value comes back and the
    /// integer holds the result (what OpenSHMEM's atomics rely on).
    #[test]
    fn every_rmw_kind_returns_the_old_value_and_stores_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let ctl = Control::new(Mapping::create(&dir.path().join("ctl"), control::SIZE).unwrap());
        ctl.init(std::process::id());
        let patience = Patience::new(
            Waiter::new(WaitMode::Yield, 1, None, None),
            Duration::from_millis(50),
            Arc::new(vec![0]),
        );
        let who = Applier {
            pid: std::process::id(),
            patience: &patience,
        };
        let mut words = [0i64; 2];
        let mut apply = |op: RmwOp, start: i64| -> (i64, i64) {
            words[0] = start;
            let t = Target {
                ctl: &ctl,
                owner_addr: words.as_ptr() as u64,
                local: words.as_mut_ptr().cast(),
            };
            // SAFETY: an aligned i64 we own (its low half is the i32 on little-endian).
            let old = unsafe { rmw(&t, &who, op) }.unwrap();
            (old, words[0])
        };
        let c = |cond, value| RmwOp::CompareSwapLong { cond, value };
        assert_eq!(apply(c(5, 9), 5), (5, 9));
        assert_eq!(apply(c(4, 9), 5), (5, 5));
        let ci = |cond, value| RmwOp::CompareSwapInt { cond, value };
        assert_eq!(apply(ci(-1, 3), 0xffff_ffff), (-1, 3));
        assert_eq!(apply(ci(2, 3), 1), (1, 1));
        assert_eq!(apply(RmwOp::AndLong(0b1100), 0b1010), (0b1010, 0b1000));
        assert_eq!(apply(RmwOp::OrLong(0b0101), 0b1010), (0b1010, 0b1111));
        assert_eq!(apply(RmwOp::XorLong(-1), 0), (0, -1));
        assert_eq!(apply(RmwOp::AndInt(6), 3), (3, 2));
        assert_eq!(apply(RmwOp::OrInt(4), 3), (3, 7));
        assert_eq!(apply(RmwOp::XorInt(1), 3), (3, 2));
        assert_eq!(apply(RmwOp::FetchAddLong(-1), 0), (0, -1));
        assert_eq!(apply(RmwOp::SwapInt(8), 2), (2, 8));
    }

    fn run<T: bytemuck::Pod>(scale: Scale, dst: &mut [T], src: &[T]) {
        let len = std::mem::size_of_val(src);
        // SAFETY: both slices hold `len` bytes and do not overlap.
        unsafe { acc_kernel(scale, dst.as_mut_ptr().cast(), src.as_ptr().cast(), len) };
    }

    #[test]
    fn kernels_scale_and_add_every_type() {
        let mut i = [1i32, 2, 3];
        run(Scale::Int(3), &mut i, &[10, 20, -1]);
        assert_eq!(i, [31, 62, 0]);
        let mut l = [i64::MAX, 5];
        run(Scale::Long(-2), &mut l, &[1, 1]);
        assert_eq!(l, [i64::MAX - 2, 3]);
        let mut f = [1.0f32, 2.0];
        run(Scale::Float(0.5), &mut f, &[2.0, 4.0]);
        assert_eq!(f, [2.0, 4.0]);
        let mut d = [1.0f64, 2.0];
        run(Scale::Double(2.0), &mut d, &[0.25, 0.5]);
        assert_eq!(d, [1.5, 3.0]);
        run(Scale::Double(1.0), &mut d, &[0.5, -3.0]);
        assert_eq!(d, [2.0, 0.0]);
        let mut ones = [7i32, 8];
        run(Scale::Int(1), &mut ones, &[1, -1]);
        assert_eq!(ones, [8, 7]);
        // (1+2i) += (0+1i)·(3+4i) = (1+2i) + (-4+3i)
        let mut c = [[1.0f32, 2.0]];
        run(Scale::ComplexFloat([0.0, 1.0]), &mut c, &[[3.0, 4.0]]);
        assert_eq!(c, [[-3.0, 5.0]]);
        // Unaligned on both sides: the element-by-element path.
        let mut raw = [0u8; 17];
        let src = [0u8, 2, 0, 0, 0];
        // SAFETY: 4 bytes at offset 1 of each buffer.
        unsafe {
            acc_kernel(
                Scale::Int(5),
                raw.as_mut_ptr().add(1),
                src.as_ptr().add(1),
                4,
            )
        };
        assert_eq!(i32::from_le_bytes(raw[1..5].try_into().unwrap()), 10);
        let mut z = [[0.0f64, 0.0]];
        run(Scale::ComplexDouble([2.0, -1.0]), &mut z, &[[1.0, 1.0]]);
        assert_eq!(z, [[3.0, 1.0]]);
    }
}
