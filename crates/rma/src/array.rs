//! Typed global arrays: the safe Rust face of the rma layer.
//!
//! A [`GlobalArray<T>`] is one collective allocation holding, on every proc, a run of
//! `T`s (lengths may differ per proc). Elements are addressed as `(proc, index)`;
//! every call checks its range against that proc's length, and local memory is Rust
//! slices, so nothing here is `unsafe` to use.

use std::marker::PhantomData;
use std::mem::{size_of, size_of_val};

use bytemuck::Pod;

use crate::error::RmaError;
use crate::rma::{gather, word_u64, Rma};
use crate::xfer::{RmwOp, Scale};

/// Element types that can be accumulated, and how.
pub trait Accumulate: Pod {
    /// The accumulate of this type scaled by `scale`.
    fn scale(scale: Self) -> Scale;
}

impl Accumulate for i32 {
    fn scale(s: i32) -> Scale {
        Scale::Int(s)
    }
}

impl Accumulate for i64 {
    fn scale(s: i64) -> Scale {
        Scale::Long(s)
    }
}

impl Accumulate for f32 {
    fn scale(s: f32) -> Scale {
        Scale::Float(s)
    }
}

impl Accumulate for f64 {
    fn scale(s: f64) -> Scale {
        Scale::Double(s)
    }
}

/// Complex `f32` as `[re, im]`.
impl Accumulate for [f32; 2] {
    fn scale(s: [f32; 2]) -> Scale {
        Scale::ComplexFloat(s)
    }
}

/// Complex `f64` as `[re, im]`.
impl Accumulate for [f64; 2] {
    fn scale(s: [f64; 2]) -> Scale {
        Scale::ComplexDouble(s)
    }
}

/// Integer types with remote fetch-and-add and swap.
pub trait RmwInt: Pod {
    /// Fetch-and-add of `v`.
    fn fetch_add(v: Self) -> RmwOp;
    /// Swap in `v`.
    fn swap(v: Self) -> RmwOp;
    /// The old value as the rmw returned it.
    fn from_old(old: i64) -> Self;
}

impl RmwInt for i32 {
    fn fetch_add(v: i32) -> RmwOp {
        RmwOp::FetchAddInt(v)
    }
    fn swap(v: i32) -> RmwOp {
        RmwOp::SwapInt(v)
    }
    fn from_old(old: i64) -> i32 {
        old as i32
    }
}

impl RmwInt for i64 {
    fn fetch_add(v: i64) -> RmwOp {
        RmwOp::FetchAddLong(v)
    }
    fn swap(v: i64) -> RmwOp {
        RmwOp::SwapLong(v)
    }
    fn from_old(old: i64) -> i64 {
        old
    }
}

/// A distributed array of `T`: a run of elements on every proc.
pub struct GlobalArray<'r, 'w, T: Pod> {
    rma: &'r Rma<'w>,
    bases: Vec<u64>,
    lens: Vec<usize>,
    _t: PhantomData<T>,
}

impl<'r, 'w, T: Pod> GlobalArray<'r, 'w, T> {
    /// Allocates `local_len` zeroed elements on this proc (collective over the world;
    /// each proc gives its own length).
    pub fn new(rma: &'r Rma<'w>, local_len: usize) -> Result<Self, RmaError> {
        let bytes = local_len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| RmaError::BadShape {
                op: "GlobalArray::new",
                arg: "local_len".into(),
                why: format!("{local_len} elements overflow the address space"),
            })?;
        let lens = gather(
            &*rma.wire,
            &(local_len as u64).to_le_bytes(),
            "array length",
            word_u64,
        )?
        .into_iter()
        .map(|l| l as usize)
        .collect();
        let bases = rma.malloc(bytes)?;
        Ok(GlobalArray {
            rma,
            bases,
            lens,
            _t: PhantomData,
        })
    }

    /// Elements held by `proc` (0 outside the job).
    pub fn len_of(&self, proc: usize) -> usize {
        self.lens.get(proc).copied().unwrap_or(0)
    }

    /// The remote address of element `start` of `proc`, once `start .. start + n` is
    /// checked to be inside that proc's part.
    fn at(&self, op: &'static str, proc: usize, start: usize, n: usize) -> Result<u64, RmaError> {
        self.rma.check_proc(op, proc)?;
        let have = self.lens[proc];
        if start.checked_add(n).is_none_or(|end| end > have) {
            return Err(RmaError::BadShape {
                op,
                arg: "start".into(),
                why: format!(
                    "elements {start}..{} are outside proc {proc}'s {have}",
                    start.saturating_add(n)
                ),
            });
        }
        Ok(self.bases[proc] + (start * size_of::<T>()) as u64)
    }

    /// Writes `data` to `proc`'s elements from `start` on (visible there after a fence).
    pub fn put(&self, proc: usize, start: usize, data: &[T]) -> Result<(), RmaError> {
        let at = self.at("GlobalArray::put", proc, start, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let bytes = size_of_val(data);
        // SAFETY: `data` is a live slice of `bytes` bytes for the whole call.
        unsafe { self.rma.put(data.as_ptr().cast(), at, bytes, proc) }
    }

    /// Reads `proc`'s elements from `start` on into `out`.
    pub fn get(&self, proc: usize, start: usize, out: &mut [T]) -> Result<(), RmaError> {
        let at = self.at("GlobalArray::get", proc, start, out.len())?;
        if out.is_empty() {
            return Ok(());
        }
        let bytes = size_of_val(out);
        // SAFETY: `out` is a live, exclusively borrowed slice of `bytes` bytes; any bit
        // pattern is a valid `T` (Pod).
        unsafe { self.rma.get(at, out.as_mut_ptr().cast(), bytes, proc) }
    }

    /// A copy of this proc's own elements.
    pub fn read_local(&self) -> Result<Vec<T>, RmaError> {
        let mut v = vec![T::zeroed(); self.len_of(self.rma.rank())];
        self.get(self.rma.rank(), 0, &mut v)?;
        Ok(v)
    }

    /// Frees the array (collective over the world).
    pub fn free(self) -> Result<(), RmaError> {
        self.rma.free(self.bases[self.rma.rank()])
    }
}

impl<T: Accumulate> GlobalArray<'_, '_, T> {
    /// `proc`'s elements from `start` on `+= scale · data`, atomically per call with
    /// respect to other accumulates.
    pub fn acc(&self, proc: usize, start: usize, data: &[T], scale: T) -> Result<(), RmaError> {
        let at = self.at("GlobalArray::acc", proc, start, data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let bytes = size_of_val(data);
        // SAFETY: `data` is a live slice of `bytes` bytes for the whole call.
        unsafe {
            self.rma
                .acc(T::scale(scale), data.as_ptr().cast(), at, bytes, proc)
        }
    }
}

impl<T: RmwInt> GlobalArray<'_, '_, T> {
    /// Adds `v` to element `index` of `proc` and returns its old value.
    pub fn fetch_add(&self, proc: usize, index: usize, v: T) -> Result<T, RmaError> {
        let at = self.at("GlobalArray::fetch_add", proc, index, 1)?;
        self.rma.rmw(T::fetch_add(v), at, proc).map(T::from_old)
    }

    /// Stores `v` into element `index` of `proc` and returns its old value.
    pub fn swap(&self, proc: usize, index: usize, v: T) -> Result<T, RmaError> {
        let at = self.at("GlobalArray::swap", proc, index, 1)?;
        self.rma.rmw(T::swap(v), at, proc).map(T::from_old)
    }
}
