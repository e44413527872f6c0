//! Describing one transfer: what it does ([`Kind`]), to whom, and the memory shape
//! on both sides ([`Shape`]), in ARMCI's terms.
//!
//! Sides are named *local* (this process's memory, a real pointer) and *remote* (the
//! target proc's memory, an address in that proc's address space as a collective
//! allocation returned it). For a put the local side is ARMCI's `src`, for a get it
//! is ARMCI's `dst`.
//!
//! Strided shapes follow `ARMCI_PutS`: with `L` stride levels, `count` has `L + 1`
//! entries, `count[0]` is the length in bytes of each contiguous chunk and
//! `count[1..]` the number of chunks at each level; `strides[k]` (one array per side,
//! `L` entries each) is the byte distance between consecutive chunks at level `k + 1`.
//! Chunk `(i1, …, iL)` starts at `base + Σ i_k · strides[k - 1]`. Both sides visit
//! their chunks in the same order (level 1 fastest), so chunk `n` of the local side
//! pairs with chunk `n` of the remote side.

/// Most stride levels a strided transfer may have (ARMCI's `ARMCI_MAX_STRIDE_LEVEL`).
pub const MAX_STRIDE_LEVELS: usize = 8;

/// The operation, and for accumulate its element type and scale factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Copy local → remote.
    Put,
    /// Copy remote → local.
    Get,
    /// `remote[i] += scale · local[i]`, element-wise, atomic with respect to every
    /// other accumulate and rmw on the same remote bytes.
    Acc(Scale),
}

impl Kind {
    /// Short name used in errors and reports.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Put => "put",
            Kind::Get => "get",
            Kind::Acc(_) => "acc",
        }
    }
}

/// Element type and scale of an accumulate (ARMCI_ACC_INT … ARMCI_ACC_DCP).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// 32-bit signed integers (C `int`).
    Int(i32),
    /// 64-bit signed integers (C `long` on LP64).
    Long(i64),
    /// `f32` (C `float`).
    Float(f32),
    /// `f64` (C `double`).
    Double(f64),
    /// Complex `f32`: (re, im) pairs; the scale is complex too.
    ComplexFloat([f32; 2]),
    /// Complex `f64`: (re, im) pairs; the scale is complex too.
    ComplexDouble([f64; 2]),
}

impl Scale {
    /// Size in bytes of one element; accumulated lengths must be multiples of it.
    pub fn elem_size(&self) -> usize {
        match self {
            Scale::Int(_) | Scale::Float(_) => 4,
            Scale::Long(_) | Scale::Double(_) | Scale::ComplexFloat(_) => 8,
            Scale::ComplexDouble(_) => 16,
        }
    }
}

/// One vector-transfer entry (`armci_giov_t`): `local.len()` chunks of `bytes` each,
/// chunk `i` between `local[i]` and `remote[i]`.
#[derive(Debug, Clone, Copy)]
pub struct IoVec<'a> {
    /// Local addresses (ARMCI's `src_ptr_array` for a put, `dst_ptr_array` for a get).
    pub local: &'a [*mut u8],
    /// Remote addresses, as many as `local`.
    pub remote: &'a [u64],
    /// Bytes per chunk.
    pub bytes: usize,
}

/// The memory touched on both sides.
#[derive(Debug, Clone, Copy)]
pub enum Shape<'a> {
    /// `bytes` contiguous bytes on each side.
    Contig {
        /// Local start.
        local: *mut u8,
        /// Remote start.
        remote: u64,
        /// Length.
        bytes: usize,
    },
    /// ARMCI's strided form (see the module docs).
    Strided {
        /// Local base.
        local: *mut u8,
        /// Local strides, one per level.
        local_strides: &'a [usize],
        /// Remote base.
        remote: u64,
        /// Remote strides, one per level.
        remote_strides: &'a [usize],
        /// `count[0]` bytes per chunk, `count[1..]` chunks per level.
        count: &'a [usize],
    },
    /// ARMCI's vector form: a list of [`IoVec`]s.
    Vector(&'a [IoVec<'a>]),
}

/// A whole transfer: operation, target proc, shape.
#[derive(Debug, Clone, Copy)]
pub struct Xfer<'a> {
    /// Put, get or accumulate.
    pub kind: Kind,
    /// The target proc (world rank).
    pub proc: usize,
    /// The memory on both sides.
    pub shape: Shape<'a>,
}

/// A read-modify-write on one remote integer (`ARMCI_Rmw`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RmwOp {
    /// Add to a 32-bit integer; returns the old value (`ARMCI_FETCH_AND_ADD`).
    FetchAddInt(i32),
    /// Add to a 64-bit integer; returns the old value (`ARMCI_FETCH_AND_ADD_LONG`).
    FetchAddLong(i64),
    /// Store into a 32-bit integer; returns the old value (`ARMCI_SWAP`).
    SwapInt(i32),
    /// Store into a 64-bit integer; returns the old value (`ARMCI_SWAP_LONG`).
    SwapLong(i64),
    /// Store `value` into a 32-bit integer if it equals `cond`; returns the old value
    /// (OpenSHMEM's `compare_swap`).
    CompareSwapInt {
        /// The value the integer must hold for the store to happen.
        cond: i32,
        /// The value stored.
        value: i32,
    },
    /// [`RmwOp::CompareSwapInt`] on a 64-bit integer.
    CompareSwapLong {
        /// The value the integer must hold for the store to happen.
        cond: i64,
        /// The value stored.
        value: i64,
    },
    /// Bitwise and into a 32-bit integer; returns the old value.
    AndInt(i32),
    /// Bitwise and into a 64-bit integer; returns the old value.
    AndLong(i64),
    /// Bitwise or into a 32-bit integer; returns the old value.
    OrInt(i32),
    /// Bitwise or into a 64-bit integer; returns the old value.
    OrLong(i64),
    /// Bitwise exclusive or into a 32-bit integer; returns the old value.
    XorInt(i32),
    /// Bitwise exclusive or into a 64-bit integer; returns the old value.
    XorLong(i64),
}

impl RmwOp {
    /// Applies the operation to the integer at `p` with one hardware atomic and
    /// returns its old value (4-byte values sign-extended). The rma layer calls it
    /// under the target's stripes (so it is atomic with respect to accumulates too);
    /// a caller that never accumulates on these bytes may call it directly on a
    /// mapping, as libshmem's same-host path does.
    ///
    /// # Safety
    /// `p` must be valid for reads and writes of `self.size()` bytes and aligned to
    /// that size, and every other access to those bytes must be atomic.
    pub unsafe fn apply(&self, p: *mut u8) -> i64 {
        use std::sync::atomic::{AtomicI32, AtomicI64, Ordering};
        // SAFETY: the caller promises validity and alignment (from_ptr's
        // contract), and that other accesses are atomic.
        let int = || unsafe { AtomicI32::from_ptr(p.cast()) };
        // SAFETY: as above.
        let long = || unsafe { AtomicI64::from_ptr(p.cast()) };
        let ord = Ordering::AcqRel;
        match *self {
            RmwOp::FetchAddInt(v) => i64::from(int().fetch_add(v, ord)),
            RmwOp::SwapInt(v) => i64::from(int().swap(v, ord)),
            RmwOp::AndInt(v) => i64::from(int().fetch_and(v, ord)),
            RmwOp::OrInt(v) => i64::from(int().fetch_or(v, ord)),
            RmwOp::XorInt(v) => i64::from(int().fetch_xor(v, ord)),
            RmwOp::CompareSwapInt { cond, value } => i64::from(
                int()
                    .compare_exchange(cond, value, ord, Ordering::Acquire)
                    .unwrap_or_else(|old| old),
            ),
            RmwOp::FetchAddLong(v) => long().fetch_add(v, ord),
            RmwOp::SwapLong(v) => long().swap(v, ord),
            RmwOp::AndLong(v) => long().fetch_and(v, ord),
            RmwOp::OrLong(v) => long().fetch_or(v, ord),
            RmwOp::XorLong(v) => long().fetch_xor(v, ord),
            RmwOp::CompareSwapLong { cond, value } => long()
                .compare_exchange(cond, value, ord, Ordering::Acquire)
                .unwrap_or_else(|old| old),
        }
    }

    /// Operand size in bytes (also the alignment the remote address needs).
    pub fn size(&self) -> usize {
        match self {
            RmwOp::FetchAddInt(_)
            | RmwOp::SwapInt(_)
            | RmwOp::CompareSwapInt { .. }
            | RmwOp::AndInt(_)
            | RmwOp::OrInt(_)
            | RmwOp::XorInt(_) => 4,
            RmwOp::FetchAddLong(_)
            | RmwOp::SwapLong(_)
            | RmwOp::CompareSwapLong { .. }
            | RmwOp::AndLong(_)
            | RmwOp::OrLong(_)
            | RmwOp::XorLong(_) => 8,
        }
    }
}
