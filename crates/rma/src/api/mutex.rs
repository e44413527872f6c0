//! Mutexes hosted by procs (`ARMCI_Create_mutexes` and friends).
//!
//! Each is a ticket lock in its host proc's control segment, so waiters are served
//! first come, first served, whether they reach it directly or through the host's
//! service thread.

use crate::error::RmaError;
use crate::rma::{not_yet, Rma};

impl Rma<'_> {
    /// Creates `n` mutexes on this proc (collective over the world; procs may ask
    /// for different numbers, including 0). Replaces none: destroy first.
    pub fn create_mutexes(&self, n: usize) -> Result<(), RmaError> {
        let _ = n;
        Err(not_yet("create_mutexes"))
    }

    /// Destroys every proc's mutexes (collective over the world).
    pub fn destroy_mutexes(&self) -> Result<(), RmaError> {
        Err(not_yet("destroy_mutexes"))
    }

    /// Takes mutex `m` of `proc`, waiting in line behind earlier takers.
    pub fn lock(&self, m: usize, proc: usize) -> Result<(), RmaError> {
        self.check_proc("lock", proc)?;
        let _ = m;
        Err(not_yet("lock"))
    }

    /// Releases mutex `m` of `proc`, which this proc holds. Does not fence: fence the
    /// procs whose memory the critical section wrote before unlocking (ARMCI's rule).
    pub fn unlock(&self, m: usize, proc: usize) -> Result<(), RmaError> {
        self.check_proc("unlock", proc)?;
        let _ = m;
        Err(not_yet("unlock"))
    }
}
