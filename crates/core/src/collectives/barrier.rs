//! Dissemination barrier: ⌈log2 n⌉ rounds; in round k rank r signals r + 2^k and
//! waits for r − 2^k (mod n). No rank leaves before every rank has entered.

use crate::error::CoreError;
use crate::world::World;

impl World {
    /// Blocks until every rank has called `barrier`.
    pub fn barrier(&self) -> Result<(), CoreError> {
        let (n, r) = (self.size, self.rank);
        let seq = self.next_collective();
        let mut dist = 1;
        let mut round = 0u16;
        while dist < n {
            self.coll_send((r + dist) % n, seq, round, &[])?;
            self.coll_recv((r + n - dist) % n, seq, round)?;
            dist *= 2;
            round += 1;
        }
        Ok(())
    }
}
