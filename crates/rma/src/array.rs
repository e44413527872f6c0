//! Typed global arrays: the safe Rust face of the rma layer.
//!
//! A [`GlobalArray<T>`] is one collective allocation holding, on every proc, a run of
//! `T`s (lengths may differ per proc). Elements are addressed as `(proc, index)`;
//! every call checks its range against that proc's length, and local memory is Rust
//! slices, so nothing here is `unsafe` to use.

use std::marker::PhantomData;

use bytemuck::Pod;

use crate::error::RmaError;
use crate::rma::{not_yet, Rma};
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
        let _ = (rma, local_len);
        Err(not_yet("GlobalArray::new"))
    }

    /// Elements held by `proc` (0 outside the job).
    pub fn len_of(&self, proc: usize) -> usize {
        self.lens.get(proc).copied().unwrap_or(0)
    }

    /// Writes `data` to `proc`'s elements from `start` on (visible there after a fence).
    pub fn put(&self, proc: usize, start: usize, data: &[T]) -> Result<(), RmaError> {
        let _ = (proc, start, data, &self.bases, self.rma);
        Err(not_yet("GlobalArray::put"))
    }

    /// Reads `proc`'s elements from `start` on into `out`.
    pub fn get(&self, proc: usize, start: usize, out: &mut [T]) -> Result<(), RmaError> {
        let _ = (proc, start, out);
        Err(not_yet("GlobalArray::get"))
    }

    /// Frees the array (collective over the world).
    pub fn free(self) -> Result<(), RmaError> {
        Err(not_yet("GlobalArray::free"))
    }
}

impl<T: Accumulate> GlobalArray<'_, '_, T> {
    /// `proc`'s elements from `start` on `+= scale · data`, atomically per call with
    /// respect to other accumulates.
    pub fn acc(&self, proc: usize, start: usize, data: &[T], scale: T) -> Result<(), RmaError> {
        let _ = (proc, start, data, scale);
        Err(not_yet("GlobalArray::acc"))
    }
}

impl<T: RmwInt> GlobalArray<'_, '_, T> {
    /// Adds `v` to element `index` of `proc` and returns its old value.
    pub fn fetch_add(&self, proc: usize, index: usize, v: T) -> Result<T, RmaError> {
        let _ = (proc, index, v);
        Err(not_yet("GlobalArray::fetch_add"))
    }

    /// Stores `v` into element `index` of `proc` and returns its old value.
    pub fn swap(&self, proc: usize, index: usize, v: T) -> Result<T, RmaError> {
        let _ = (proc, index, v);
        Err(not_yet("GlobalArray::swap"))
    }
}
