//! Binomial-tree broadcast: ranks are renumbered so the root is 0; rank v receives
//! from v minus its lowest set bit, then forwards to v + 2^k for each smaller k.

use crate::error::CoreError;
use crate::world::World;

impl World {
    /// Copies `data` from `root` to every rank; non-roots' `data` is replaced.
    pub fn broadcast(&self, root: usize, data: &mut Vec<u8>) -> Result<(), CoreError> {
        if root >= self.size {
            return Err(CoreError::NoSuchRank {
                rank: root,
                size: self.size,
            });
        }
        let seq = self.next_collective();
        self.bcast_tree(root, seq, data)
    }

    pub(crate) fn bcast_tree(
        &self,
        root: usize,
        seq: u32,
        data: &mut Vec<u8>,
    ) -> Result<(), CoreError> {
        let n = self.size;
        let v = (self.rank + n - root) % n;
        let mut mask = 1;
        while mask < n {
            if v & mask != 0 {
                *data = self.coll_recv((v - mask + root) % n, seq, 0)?;
                break;
            }
            mask <<= 1;
        }
        mask >>= 1;
        while mask > 0 {
            if v + mask < n {
                self.coll_send((v + mask + root) % n, seq, 0, data)?;
            }
            mask >>= 1;
        }
        Ok(())
    }
}
