//! Reduce and allreduce over numeric slices: binomial-tree reduce to rank 0, then
//! broadcast, so every rank ends with the bit-identical result.

use bytemuck::Pod;

use crate::error::CoreError;
use crate::world::World;

/// The combining operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// Elementwise sum.
    Sum,
    /// Elementwise minimum.
    Min,
    /// Elementwise maximum.
    Max,
}

/// Element types a reduction can combine.
pub trait Reducible: Pod + PartialOrd + std::ops::Add<Output = Self> {}
impl<T: Pod + PartialOrd + std::ops::Add<Output = T>> Reducible for T {}

fn combine<T: Reducible>(acc: &mut [T], other: &[T], op: ReduceOp) {
    for (a, &b) in acc.iter_mut().zip(other) {
        *a = match op {
            ReduceOp::Sum => *a + b,
            ReduceOp::Min if b < *a => b,
            ReduceOp::Max if b > *a => b,
            _ => *a,
        };
    }
}

impl World {
    /// Combines `data` elementwise across all ranks; every rank gets the result.
    /// All ranks must pass slices of the same length.
    pub fn allreduce<T: Reducible>(&self, data: &mut [T], op: ReduceOp) -> Result<(), CoreError> {
        let seq = self.next_collective();
        let (n, v) = (self.size, self.rank);
        let mut mask = 1;
        while mask < n {
            if v & mask != 0 {
                self.coll_send(v - mask, seq, 1, bytemuck::cast_slice(data))?;
                break;
            }
            if v + mask < n {
                let bytes = self.coll_recv(v + mask, seq, 1)?;
                if bytes.len() != std::mem::size_of_val(data) {
                    return Err(CoreError::Collective(format!(
                        "allreduce lengths differ: rank {} sent {} B, rank {} has {} B",
                        v + mask,
                        bytes.len(),
                        v,
                        std::mem::size_of_val(data)
                    )));
                }
                let other: Vec<T> = bytemuck::pod_collect_to_vec(&bytes);
                combine(data, &other, op);
            }
            mask <<= 1;
        }
        let mut bytes = bytemuck::cast_slice::<T, u8>(data).to_vec();
        self.bcast_tree(0, seq, &mut bytes)?;
        if bytes.len() != std::mem::size_of_val(data) {
            return Err(CoreError::Collective(
                "allreduce result has the wrong length".into(),
            ));
        }
        bytemuck::cast_slice_mut::<T, u8>(data).copy_from_slice(&bytes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_applies_each_op() {
        let mut a = [1.0f64, 5.0, -2.0];
        combine(&mut a, &[2.0, 1.0, 3.0], ReduceOp::Sum);
        assert_eq!(a, [3.0, 6.0, 1.0]);
        combine(&mut a, &[2.0, 9.0, 0.0], ReduceOp::Min);
        assert_eq!(a, [2.0, 6.0, 0.0]);
        combine(&mut a, &[2.5, 1.0, 7.0], ReduceOp::Max);
        assert_eq!(a, [2.5, 6.0, 7.0]);
    }
}
