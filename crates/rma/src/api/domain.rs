//! Node queries: who shares memory with us, and direct pointers into it.

use crate::domain::{Domains, Route};
use crate::error::RmaError;
use crate::rma::Rma;

impl Rma<'_> {
    /// Whether `proc` shares this proc's node, i.e. its memory is reached by load /
    /// store (`ARMCI_Same_node`); false outside the job.
    pub fn same_node(&self, proc: usize) -> bool {
        self.domains.same(proc)
    }

    /// How put and get reach `proc`'s memory (`Direct` outside the job's range too,
    /// where every call fails anyway).
    pub fn route(&self, proc: usize) -> Route {
        if proc >= self.size || self.same_node(proc) {
            Route::Direct
        } else if self.origin.borrow().native_route(proc) {
            Route::Native
        } else {
            Route::Service
        }
    }

    /// The job's domains (`armci_domain_*` with `ARMCI_DOMAIN_SMP`).
    pub fn domains(&self) -> &Domains {
        &self.domains
    }

    /// A pointer in this process to `bytes` bytes at `remote` on `proc`, when `proc`
    /// is on this node (`None` otherwise). Accesses through it race with other procs'
    /// transfers unless the program orders them (fences, barriers, mutexes).
    pub fn local_ptr(
        &self,
        proc: usize,
        remote: u64,
        bytes: usize,
    ) -> Result<Option<*mut u8>, RmaError> {
        self.check_proc("local_ptr", proc)?;
        let seg = self.segment_of("local_ptr", proc, remote, bytes as u64)?;
        Ok(self.same_node(proc).then(|| seg.local(remote)))
    }
}
