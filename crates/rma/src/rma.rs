//! [`Rma`]: one process's handle on the job's global memory.
//!
//! Start-up (collective over the world, in order):
//! 1. Read settings; allgather every proc's host identity, pid and service address
//!    (the listener is bound before the allgather).
//! 2. Group procs into domains; same-domain procs will map each other's segments.
//! 3. The lowest proc of each domain reclaims segment files of dead jobs.
//! 4. Create this proc's control segment (locks, mutexes); barrier; map the
//!    control segments of the domain's procs; barrier; unlink our name.
//!
//! The public operations live in `api/`, one file per family.

use crate::config::RmaConfig;
use crate::domain::Domains;
use crate::error::RmaError;
use crate::wireup::Wireup;

/// One process's handle on the job's global memory (one per process).
///
/// It is used from one thread (like `nf_core::World`); a service thread it owns
/// answers other procs' requests on its memory without this thread's help.
pub struct Rma<'w> {
    pub(crate) wire: Box<dyn Wireup + 'w>,
    pub(crate) cfg: RmaConfig,
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) domains: Domains,
}

impl<'w> Rma<'w> {
    /// Joins the job's global memory with settings from the environment (collective
    /// over the world).
    pub fn new(wire: impl Wireup + 'w) -> Result<Rma<'w>, RmaError> {
        Self::with_config(wire, RmaConfig::from_env()?)
    }

    /// Joins with explicit settings (collective over the world).
    pub fn with_config(wire: impl Wireup + 'w, cfg: RmaConfig) -> Result<Rma<'w>, RmaError> {
        let rank = wire.rank();
        let size = wire.members().len();
        let _ = (Domains::from_keys(&vec![(); size], rank), cfg);
        Err(not_yet("Rma::new"))
    }

    /// This process's proc number (its world rank).
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of procs in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The world's wire-up (the world team for [`Rma::malloc_team`] and friends).
    pub fn wireup(&self) -> &dyn Wireup {
        &*self.wire
    }

    /// The settings in force.
    pub fn config(&self) -> &RmaConfig {
        &self.cfg
    }

    /// Checks that `proc` is in the job.
    pub(crate) fn check_proc(&self, op: &'static str, proc: usize) -> Result<(), RmaError> {
        if proc >= self.size {
            return Err(RmaError::NoSuchProc {
                op,
                proc,
                size: self.size,
            });
        }
        Ok(())
    }
}

/// The error of a call whose body is not written yet (step 0 of issue 4).
pub(crate) fn not_yet(op: &str) -> RmaError {
    RmaError::Unsupported(format!("{op} (not written yet)"))
}
