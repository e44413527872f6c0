//! The `armci_msg_*gop` operators on the node's shared-memory path: element-wise
//! folds of one ARMCI type, as MPI's built-in operations and msg_reduce.c's user
//! operations compute them (the MPI path still serves the leaders' step and groups).
//!
//! | op | result | types |
//! |---|---|---|
//! | sum, prod | `a + b`, `a * b` (integers wrap, as MPI's do in practice) | all |
//! | max, min | the larger / smaller | all |
//! | absmax, absmin | the larger / smaller of `|a|`, `|b|` (callers start from `|x|`) | all |
//! | land, lor | 1 or 0 in the element's type (non-zero is true) | all |
//! | band, bor | bitwise and / or | integers |
//!
//! Operator names, and the refusal of bitwise operators on floating types, stay in
//! msg_reduce.c: C parses once for both paths and hands over [`Op`] and the type.

use std::ffi::{c_int, c_long, c_longlong};

/// `enum nfa_gop` (internal.h), same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `+`
    Sum,
    /// `*`
    Prod,
    /// `max`
    Max,
    /// `min`
    Min,
    /// `absmax`
    AbsMax,
    /// `absmin`
    AbsMin,
    /// `&&`, `land`
    Land,
    /// `||`, `lor`
    Lor,
    /// `&`, `band`, `and`
    Band,
    /// `|`, `bor`, `or`
    Bor,
}

impl Op {
    /// The operator C numbered `op`.
    pub fn from_c(op: c_int) -> Option<Op> {
        use Op::*;
        [Sum, Prod, Max, Min, AbsMax, AbsMin, Land, Lor, Band, Bor]
            .get(usize::try_from(op).ok()?)
            .copied()
    }
}

/// `enum armci_type_e` (message.h), same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Type {
    /// `ARMCI_INT`
    Int,
    /// `ARMCI_LONG`
    Long,
    /// `ARMCI_LONG_LONG`
    LongLong,
    /// `ARMCI_FLOAT`
    Float,
    /// `ARMCI_DOUBLE`
    Double,
}

impl Type {
    /// The type C numbered `ty`.
    pub fn from_c(ty: c_int) -> Option<Type> {
        use Type::*;
        [Int, Long, LongLong, Float, Double]
            .get(usize::try_from(ty).ok()?)
            .copied()
    }

    /// Bytes of one element.
    pub fn size(self) -> usize {
        match self {
            Type::Int => size_of::<c_int>(),
            Type::Long => size_of::<c_long>(),
            Type::LongLong => size_of::<c_longlong>(),
            Type::Float => size_of::<f32>(),
            Type::Double => size_of::<f64>(),
        }
    }
}

/// What the folds need of an element type.
trait Num: Copy + PartialOrd {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn abs(self) -> Self;
    /// Bitwise and / or; `None` for floating types.
    fn bits(self, o: Self, and: bool) -> Option<Self>;
}

macro_rules! int_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn abs(self) -> Self { self.wrapping_abs() }
            fn bits(self, o: Self, and: bool) -> Option<Self> {
                Some(if and { self & o } else { self | o })
            }
        }
    )*};
}
int_num!(i32, i64);

macro_rules! float_num {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn add(self, o: Self) -> Self { self + o }
            fn mul(self, o: Self) -> Self { self * o }
            fn abs(self) -> Self { <$t>::abs(self) }
            fn bits(self, _: Self, _: bool) -> Option<Self> { None }
        }
    )*};
}
float_num!(f32, f64);

/// Applies `f(acc, x)` to every element pair (one instance per operator, so the
/// loop has no branch on the operator).
fn zip_with<T: Num>(acc: &mut [T], x: &[T], f: impl Fn(T, T) -> T) {
    for (a, &b) in acc.iter_mut().zip(x) {
        *a = f(*a, b);
    }
}

fn fold_typed<T: Num>(op: Op, acc: &mut [T], x: &[T]) -> Result<(), &'static str> {
    let larger = |a: T, b: T| if b > a { b } else { a };
    let smaller = |a: T, b: T| if b < a { b } else { a };
    let truth = |t: bool| if t { T::ONE } else { T::ZERO };
    match op {
        Op::Sum => zip_with(acc, x, T::add),
        Op::Prod => zip_with(acc, x, T::mul),
        Op::Max => zip_with(acc, x, larger),
        Op::Min => zip_with(acc, x, smaller),
        Op::AbsMax => zip_with(acc, x, |a, b| larger(a.abs(), b.abs())),
        Op::AbsMin => zip_with(acc, x, |a, b| smaller(a.abs(), b.abs())),
        Op::Land => zip_with(acc, x, |a, b| truth(a != T::ZERO && b != T::ZERO)),
        Op::Lor => zip_with(acc, x, |a, b| truth(a != T::ZERO || b != T::ZERO)),
        Op::Band | Op::Bor => {
            let and = op == Op::Band;
            if acc.first().is_some_and(|a| a.bits(*a, and).is_none()) {
                return Err("bitwise operators take integer types only");
            }
            zip_with(acc, x, |a, b| a.bits(b, and).unwrap_or(a));
        }
    }
    Ok(())
}

/// Views `bytes` as elements of `T`; `None` unless aligned and whole.
fn typed<T>(bytes: &[u8]) -> Option<&[T]> {
    // SAFETY: every T used here (i32, i64, f32, f64) is valid for any bit pattern.
    let (pre, mid, post) = unsafe { bytes.align_to::<T>() };
    (pre.is_empty() && post.is_empty()).then_some(mid)
}

/// As [`typed`], mutable.
fn typed_mut<T>(bytes: &mut [u8]) -> Option<&mut [T]> {
    // SAFETY: as in `typed`: any bit pattern is a valid T, and any T is valid bytes.
    let (pre, mid, post) = unsafe { bytes.align_to_mut::<T>() };
    (pre.is_empty() && post.is_empty()).then_some(mid)
}

fn fold_as<T: Num>(op: Op, acc: &mut [u8], x: &[u8]) -> Result<(), &'static str> {
    match (typed_mut::<T>(acc), typed::<T>(x)) {
        (Some(a), Some(b)) if a.len() == b.len() => fold_typed(op, a, b),
        _ => Err("the buffers are not whole, aligned elements of equal length"),
    }
}

/// The element type, operator and count of a C reduction call, or the job ends naming
/// `call` and the values out of range.
pub fn reduction_args(call: &str, ty: c_int, op: c_int, n: c_int) -> (Type, Op, usize) {
    match (Type::from_c(ty), Op::from_c(op), usize::try_from(n)) {
        (Some(ty), Some(op), Ok(n)) => (ty, op, n),
        _ => crate::ffi::fatal(
            call,
            format!("type {ty} / operator {op} / count {n} out of range"),
        ),
    }
}

/// `acc[i] = acc[i] op x[i]` for every element of type `ty` (both buffers aligned
/// for it, of equal length).
pub fn fold(ty: Type, op: Op, acc: &mut [u8], x: &[u8]) -> Result<(), &'static str> {
    match ty {
        Type::Int => fold_as::<c_int>(op, acc, x),
        Type::Long => fold_as::<c_long>(op, acc, x),
        Type::LongLong => fold_as::<c_longlong>(op, acc, x),
        Type::Float => fold_as::<f32>(op, acc, x),
        Type::Double => fold_as::<f64>(op, acc, x),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: Copy>(ty: Type, op: Op, a: &[T], b: &[T]) -> Vec<T> {
        let mut acc = a.to_vec();
        // SAFETY: both hold plain numbers (aligned, as any slice of T); viewing them
        // as bytes is sound.
        let (acc_bytes, x_bytes) = unsafe {
            (
                std::slice::from_raw_parts_mut(acc.as_mut_ptr().cast::<u8>(), size_of_val(a)),
                std::slice::from_raw_parts(b.as_ptr().cast::<u8>(), size_of_val(b)),
            )
        };
        fold(ty, op, acc_bytes, x_bytes).unwrap();
        acc
    }

    #[test]
    fn every_operator_folds_like_c() {
        use Op::*;
        let a = [3i32, -4, 0, i32::MAX];
        let b = [-5i32, 2, 7, 1];
        assert_eq!(run(Type::Int, Sum, &a, &b), [-2, -2, 7, i32::MIN]);
        assert_eq!(run(Type::Int, Prod, &a, &b), [-15, -8, 0, i32::MAX]);
        assert_eq!(run(Type::Int, Max, &a, &b), [3, 2, 7, i32::MAX]);
        assert_eq!(run(Type::Int, Min, &a, &b), [-5, -4, 0, 1]);
        assert_eq!(run(Type::Int, AbsMax, &a, &b), [5, 4, 7, i32::MAX]);
        assert_eq!(run(Type::Int, AbsMin, &a, &b), [3, 2, 0, 1]);
        assert_eq!(run(Type::Int, Land, &a, &b), [1, 1, 0, 1]);
        assert_eq!(
            run(Type::Int, Lor, &[0, 0, 5, 0], &[0, 1, 0, 0]),
            [0, 1, 1, 0]
        );
        assert_eq!(run(Type::Int, Band, &[6, 12], &[3, 10]), [2, 8]);
        assert_eq!(
            run(Type::Long, Bor, &[6i64, 1 << 40], &[3, 1]),
            [7, (1 << 40) | 1]
        );
        assert_eq!(
            run(Type::Double, AbsMax, &[-2.5f64, 1.0], &[1.0, -3.0]),
            [2.5, 3.0]
        );
        assert_eq!(
            run(Type::Float, Land, &[0.5f32, 0.0], &[-1.0, 2.0]),
            [1.0, 0.0]
        );
        assert_eq!(
            run(Type::LongLong, Sum, &[1i64 << 33], &[1 << 33]),
            [1 << 34]
        );
    }

    #[test]
    fn bitwise_operators_refuse_floating_types() {
        let mut acc = [0u8; 8];
        assert!(fold(Type::Double, Op::Band, &mut acc, &[0u8; 8]).is_err());
    }

    #[test]
    fn c_numbering_is_the_headers() {
        assert_eq!(Op::from_c(0), Some(Op::Sum));
        assert_eq!(Op::from_c(9), Some(Op::Bor));
        assert_eq!(Op::from_c(10), None);
        assert_eq!(Type::from_c(4), Some(Type::Double));
        assert_eq!(Type::from_c(-1), None);
    }
}
