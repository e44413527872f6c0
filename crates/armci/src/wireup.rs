//! The rma layer's wire-up over MPI: a [`CTeam`] is one ARMCI group (the world or a
//! subgroup), its collectives the C side's MPI calls on the group's communicator.
//!
//! MPI's allgather moves equal sizes, the rma layer's any sizes (rule 2 of
//! `nf_rma::wireup`). Every round is a collective across the group, which between
//! hosts costs far more than the bytes it moves (about 45 ms a round at 4 ranks on
//! two namespace hosts of a loaded 2-core VM), so [`CTeam::allgather`] takes one
//! round where it can:
//! 1. Every member sends a slot of [`SLOT`] bytes: its length, then its bytes (all
//!    of them when they fit, which the rma layer's start-up and allocation messages
//!    do).
//! 2. Only when some member's bytes did not fit, a second round moves every
//!    contribution padded to the longest (every member sees the same lengths, so
//!    all take it or none).

use std::ffi::c_void;

use nf_rma::{Team, Wireup, WireupError};

use crate::ffi::NfaWireup;

/// Bytes of one member's slot in the first round of [`CTeam::allgather`] (its length
/// word included).
pub const SLOT: usize = 512;

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
        let mut slot = vec![0u8; SLOT];
        slot[..8].copy_from_slice(&(mine.len() as u64).to_le_bytes());
        let head = mine.len().min(SLOT - 8);
        slot[8..8 + head].copy_from_slice(&mine[..head]);
        let slots = self.raw_allgather(&slot)?;
        let lens: Vec<usize> = slots
            .chunks_exact(SLOT)
            .map(|c| u64::from_le_bytes(c[..8].try_into().expect("8 bytes")) as usize)
            .collect();
        let longest = lens.iter().copied().max().unwrap_or(0);
        if longest <= SLOT - 8 {
            return Ok(slots
                .chunks_exact(SLOT)
                .zip(&lens)
                .map(|(c, &n)| c[8..8 + n].to_vec())
                .collect());
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
