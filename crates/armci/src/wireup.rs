//! The rma layer's wire-up over MPI: a [`CTeam`] is one ARMCI group (the world or a
//! subgroup), its collectives the C side's MPI calls on the group's communicator.
//!
//! MPI's allgather moves equal sizes, the rma layer's any sizes (rule 2 of
//! `nf_rma::wireup`), so [`CTeam::allgather`] takes two rounds: the lengths, then
//! every contribution padded to the longest.

use std::ffi::c_void;

use nf_rma::{Team, Wireup, WireupError};

use crate::ffi::NfaWireup;

/// One group's collectives (only its members hold one).
pub struct CTeam {
    wu: NfaWireup,
    members: Vec<usize>,
}

impl CTeam {
    /// The team C describes in `wu`. Members come from its table (the world when it
    /// has none).
    ///
    /// # Safety
    /// `wu.members` must be NULL or point to `wu.size` ints, and `wu.ctx` must stay
    /// valid (an MPI communicator of the group) while the team is used.
    pub unsafe fn new(wu: &NfaWireup) -> CTeam {
        let size = usize::try_from(wu.size).unwrap_or(0);
        let members = if wu.members.is_null() {
            (0..size).collect()
        } else {
            // SAFETY: the caller promises `size` readable ints at `members`.
            let table = unsafe { std::slice::from_raw_parts(wu.members, size) };
            table
                .iter()
                .map(|&m| usize::try_from(m).unwrap_or(usize::MAX))
                .collect()
        };
        CTeam { wu: *wu, members }
    }

    /// The caller's rank in the group.
    pub fn rank(&self) -> usize {
        usize::try_from(self.wu.rank).unwrap_or(usize::MAX)
    }

    /// One fixed-size MPI allgather.
    fn raw_allgather(&self, mine: &[u8]) -> Result<Vec<u8>, WireupError> {
        let mut all = vec![0u8; mine.len() * self.members.len()];
        // SAFETY: `mine` holds `mine.len()` bytes and `all` room for that many from
        // every member; the C side only reads and writes those (MPI_Allgather), and
        // `ctx` is valid by `CTeam::new`'s promise.
        let rc = unsafe {
            (self.wu.allgather)(
                self.wu.ctx,
                mine.as_ptr().cast::<c_void>(),
                all.as_mut_ptr().cast::<c_void>(),
                mine.len(),
            )
        };
        if rc != 0 {
            return Err(WireupError(format!(
                "MPI_Allgather failed with MPI error {rc}"
            )));
        }
        Ok(all)
    }
}

impl Team for CTeam {
    fn members(&self) -> &[usize] {
        &self.members
    }

    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        let lens = self.raw_allgather(&(mine.len() as u64).to_le_bytes())?;
        let lens: Vec<usize> = lens
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize)
            .collect();
        let longest = lens.iter().copied().max().unwrap_or(0);
        if longest == 0 {
            return Ok(vec![Vec::new(); lens.len()]);
        }
        let mut padded = mine.to_vec();
        padded.resize(longest, 0);
        let all = self.raw_allgather(&padded)?;
        Ok(all
            .chunks_exact(longest)
            .zip(&lens)
            .map(|(c, &n)| c[..n].to_vec())
            .collect())
    }

    fn allgather_fixed(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, WireupError> {
        if mine.is_empty() {
            return Ok(vec![Vec::new(); self.members.len()]);
        }
        let all = self.raw_allgather(mine)?;
        Ok(all.chunks_exact(mine.len()).map(<[u8]>::to_vec).collect())
    }

    fn barrier(&self) -> Result<(), WireupError> {
        // SAFETY: `ctx` is valid by `CTeam::new`'s promise.
        let rc = unsafe { (self.wu.barrier)(self.wu.ctx) };
        if rc != 0 {
            return Err(WireupError(format!(
                "MPI_Barrier failed with MPI error {rc}"
            )));
        }
        Ok(())
    }
}

/// The world group is the rma layer's world. Host identities and the job id are the
/// rma layer's defaults (host name, boot id, network namespace; a made-up job id).
impl Wireup for CTeam {
    fn rank(&self) -> usize {
        CTeam::rank(self)
    }
}
