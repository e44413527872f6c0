//! Collective allocation of global memory, and local memory for transfers.

use crate::error::RmaError;
use crate::rma::{not_yet, Rma};
use crate::wireup::Team;

impl Rma<'_> {
    /// Allocates `bytes` on every proc of the world (collective; `ARMCI_Malloc`).
    /// Returns, for every proc, the address of its part in *its* address space (0 for
    /// a proc that asked for 0 bytes). Procs may ask for different sizes. The memory
    /// starts zeroed and is page-aligned.
    pub fn malloc(&self, bytes: usize) -> Result<Vec<u64>, RmaError> {
        let _ = bytes;
        Err(not_yet("malloc"))
    }

    /// [`Rma::malloc`] over a team (`ARMCI_Malloc_group`): entry `i` belongs to team
    /// member `i` (`team.members()[i]`). Only members call it.
    pub fn malloc_team(&self, team: &dyn Team, bytes: usize) -> Result<Vec<u64>, RmaError> {
        let _ = (team, bytes);
        Err(not_yet("malloc_team"))
    }

    /// Frees a world allocation (collective; `ARMCI_Free`): `base` is this proc's
    /// entry of what [`Rma::malloc`] returned (0 if it asked for 0 bytes). Completes
    /// every transfer this proc issued first, and returns once no proc can reach the
    /// memory any more.
    pub fn free(&self, base: u64) -> Result<(), RmaError> {
        let _ = base;
        Err(not_yet("free"))
    }

    /// [`Rma::free`] over a team (`ARMCI_Free_group`).
    pub fn free_team(&self, team: &dyn Team, base: u64) -> Result<(), RmaError> {
        let _ = (team, base);
        Err(not_yet("free_team"))
    }

    /// Allocates `bytes` (at least 1) of local memory, zeroed and page-aligned, for use
    /// as the local side of transfers (`ARMCI_Malloc_local`).
    pub fn malloc_local(&self, bytes: usize) -> Result<*mut u8, RmaError> {
        let _ = bytes;
        Err(not_yet("malloc_local"))
    }

    /// Frees memory from [`Rma::malloc_local`] (`ARMCI_Free_local`); any other pointer
    /// is [`RmaError::NotAllocated`].
    pub fn free_local(&self, ptr: *mut u8) -> Result<(), RmaError> {
        let _ = ptr;
        Err(not_yet("free_local"))
    }
}
