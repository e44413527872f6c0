//! C arguments to rma-layer values, checked, with errors in ARMCI's words: every
//! message names the ARMCI call and the argument as the C prototype spells it.
//!
//! What the rma layer checks again (shapes, segments) it reports in its own words;
//! [`describe`] turns those into the caller's argument names too.

use std::ffi::{c_int, c_void};

use nf_rma::{RmaError, Scale, MAX_STRIDE_LEVELS};

use crate::ffi::fatal;
use crate::state::State;

/// `enum ARMCI_Acc_e` (armci_types.h).
const ACC_INT: c_int = 0;
const ACC_LNG: c_int = 1;
const ACC_FLT: c_int = 2;
const ACC_DBL: c_int = 3;
const ACC_CPL: c_int = 4;
const ACC_DCP: c_int = 5;

/// A world rank, checked against the job's size.
pub fn proc(call: &str, st: &State, proc: c_int) -> usize {
    let size = st.rma.size();
    match usize::try_from(proc) {
        Ok(p) if p < size => p,
        _ => fatal(
            call,
            format!(
                "argument 'proc' is {proc}; processes are 0 .. {}",
                size as i64 - 1
            ),
        ),
    }
}

/// A byte count or length that must not be negative.
pub fn count(call: &str, name: &str, n: c_int) -> usize {
    usize::try_from(n)
        .unwrap_or_else(|_| fatal(call, format!("argument '{name}' is {n}; it must be >= 0")))
}

/// A pointer that must not be NULL (when there are bytes to move).
pub fn nonnull(call: &str, name: &str, p: *const c_void) -> *mut u8 {
    if p.is_null() {
        fatal(call, format!("argument '{name}' is NULL"));
    }
    p as *mut u8
}

/// The accumulate element type and scale factor that `datatype` and `scale` say.
pub fn scale(call: &str, datatype: c_int, scale: *const c_void) -> Scale {
    if !(ACC_INT..=ACC_DCP).contains(&datatype) {
        fatal(
            call,
            format!(
                "argument 'datatype' is {datatype}; use ARMCI_ACC_INT, _LNG, _FLT, _DBL, _CPL \
                 or _DCP ({ACC_INT} .. {ACC_DCP})"
            ),
        );
    }
    if scale.is_null() {
        fatal(
            call,
            "argument 'scale' is NULL; pass a pointer to the scale factor",
        );
    }
    // SAFETY: ARMCI's contract: `scale` points to one value of the element type
    // (two for the complex types); checked non-NULL above.
    unsafe {
        match datatype {
            ACC_INT => Scale::Int(scale.cast::<i32>().read_unaligned()),
            ACC_LNG => Scale::Long(scale.cast::<i64>().read_unaligned()),
            ACC_FLT => Scale::Float(scale.cast::<f32>().read_unaligned()),
            ACC_DBL => Scale::Double(scale.cast::<f64>().read_unaligned()),
            ACC_CPL => Scale::ComplexFloat(scale.cast::<[f32; 2]>().read_unaligned()),
            _ => Scale::ComplexDouble(scale.cast::<[f64; 2]>().read_unaligned()),
        }
    }
}

/// A strided description read from C: `levels` strides per side, `levels + 1` counts.
pub struct Strided {
    /// Stride levels.
    pub levels: usize,
    /// `count[0]` bytes, then chunks per level.
    pub count: [usize; MAX_STRIDE_LEVELS + 1],
    /// Strides of the source side (ARMCI's `src_stride_arr`).
    pub src: [usize; MAX_STRIDE_LEVELS],
    /// Strides of the destination side (`dst_stride_arr`).
    pub dst: [usize; MAX_STRIDE_LEVELS],
}

impl Strided {
    /// Whether the description moves no byte at all (a zero count anywhere).
    pub fn is_empty(&self) -> bool {
        self.count[..=self.levels].contains(&0)
    }

    /// The counts in use.
    pub fn count(&self) -> &[usize] {
        &self.count[..=self.levels]
    }
}

/// Reads and checks ARMCI's strided arguments (names as in `ARMCI_PutS`).
pub fn strided(
    call: &str,
    levels: c_int,
    count: *const c_int,
    src_stride: *const c_int,
    dst_stride: *const c_int,
) -> Strided {
    let levels = match usize::try_from(levels) {
        Ok(l) if l <= MAX_STRIDE_LEVELS => l,
        _ => fatal(
            call,
            format!(
                "argument 'stride_levels' is {levels}; it must be 0 .. {MAX_STRIDE_LEVELS} \
                 (ARMCI_MAX_STRIDE_LEVEL)"
            ),
        ),
    };
    let mut s = Strided {
        levels,
        count: [0; MAX_STRIDE_LEVELS + 1],
        src: [0; MAX_STRIDE_LEVELS],
        dst: [0; MAX_STRIDE_LEVELS],
    };
    read_ints(call, "count", count, levels + 1, &mut s.count);
    if levels > 0 {
        read_ints(call, "src_stride_arr", src_stride, levels, &mut s.src);
        read_ints(call, "dst_stride_arr", dst_stride, levels, &mut s.dst);
    }
    s
}

/// Copies `n` non-negative ints from C into `out`, naming `name[i]` on error.
fn read_ints(call: &str, name: &str, p: *const c_int, n: usize, out: &mut [usize]) {
    if p.is_null() {
        fatal(call, format!("argument '{name}' is NULL"));
    }
    // SAFETY: ARMCI's contract gives `n` readable ints at `p` (checked non-NULL).
    let ints = unsafe { std::slice::from_raw_parts(p, n) };
    for (i, (&v, slot)) in ints.iter().zip(out.iter_mut()).enumerate() {
        *slot = usize::try_from(v).unwrap_or_else(|_| {
            fatal(
                call,
                format!("argument '{name}[{i}]' is {v}; it must be >= 0"),
            )
        });
    }
}

/// An rma-layer refusal in the words of `call`, whose remote-side argument is
/// `remote_arg` (`dst` for a put, `src` for a get, ...).
pub fn describe(remote_arg: &str, e: &RmaError) -> String {
    match e {
        RmaError::OutOfSegment {
            proc, addr, len, ..
        } => format!(
            "argument '{remote_arg}' ({addr:#x}, {len} bytes) lies outside every segment of \
             process {proc}; remote addresses must come from that process's entry of \
             ARMCI_Malloc"
        ),
        RmaError::NoSuchMutex {
            mutex, proc, count, ..
        } => format!(
            "argument 'mutex' is {mutex}; process {proc} has {count} mutexes \
             (ARMCI_Create_mutexes)"
        ),
        RmaError::NotHeld { mutex, proc, .. } => format!(
            "mutex {mutex} of process {proc} is not held by this process (ARMCI_Lock it first)"
        ),
        RmaError::Misaligned { addr, align, .. } => {
            format!("argument '{remote_arg}' ({addr:#x}) is not aligned to {align} bytes")
        }
        other => other.to_string(),
    }
}
