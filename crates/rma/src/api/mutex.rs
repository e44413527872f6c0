//! Mutexes hosted by procs (`ARMCI_Create_mutexes` and friends).
//!
//! Each is a ticket lock in its host proc's control segment, so takers are served
//! first come, first served, whether they reach it directly or through the host's
//! service thread. A waiter on a same-domain holder notices if the holder dies.

use std::sync::atomic::Ordering;

use crate::error::RmaError;
use crate::rma::{gather, word_u64, Rma};
use crate::shm::control::MAX_MUTEXES;
use crate::shm::lock::{release, take_ticket, wait_ticket};

impl Rma<'_> {
    /// Creates `n` mutexes on this proc (collective over the world; procs may ask for
    /// different numbers, including 0; at most 4096 per proc). Destroy the previous
    /// set first.
    pub fn create_mutexes(&self, n: usize) -> Result<(), RmaError> {
        let op = "create_mutexes";
        let counts: Vec<usize> = gather(
            &*self.wire,
            &(n as u64).to_le_bytes(),
            "mutex count",
            word_u64,
        )?
        .into_iter()
        .map(|c| c as usize)
        .collect();
        // Every proc sees the same counts and the same state, so all fail alike.
        if self.mutexes.borrow().iter().any(|&c| c > 0) {
            return Err(RmaError::Collective {
                op,
                why: "mutexes exist already; call destroy_mutexes first".into(),
            });
        }
        if let Some(p) = counts.iter().position(|&c| c > MAX_MUTEXES) {
            return Err(RmaError::Collective {
                op,
                why: format!(
                    "proc {p} asked for {} mutexes; at most {MAX_MUTEXES} per proc",
                    counts[p]
                ),
            });
        }
        let ctl = self.ctl_of(self.rank);
        for m in 0..n {
            let w = ctl.mutex(m);
            w.next.store(0, Ordering::Relaxed);
            w.serving.store(0, Ordering::Relaxed);
            w.holder.store(0, Ordering::Relaxed);
        }
        ctl.header().nmutex.store(n as u32, Ordering::Release);
        self.wire.barrier()?;
        *self.mutexes.borrow_mut() = counts;
        Ok(())
    }

    /// Destroys every proc's mutexes (collective over the world).
    pub fn destroy_mutexes(&self) -> Result<(), RmaError> {
        // Unlocks sent to other domains must land before the mutexes go.
        self.all_fence()?;
        self.wire.barrier()?;
        self.ctl_of(self.rank)
            .header()
            .nmutex
            .store(0, Ordering::Release);
        self.mutexes.borrow_mut().fill(0);
        Ok(())
    }

    fn check_mutex(&self, op: &'static str, m: usize, proc: usize) -> Result<(), RmaError> {
        self.check_proc(op, proc)?;
        let count = self.mutexes.borrow()[proc];
        if m >= count {
            return Err(RmaError::NoSuchMutex {
                op,
                mutex: m,
                proc,
                count,
            });
        }
        Ok(())
    }

    /// Takes mutex `m` of `proc`, waiting in line behind earlier takers.
    pub fn lock(&self, m: usize, proc: usize) -> Result<(), RmaError> {
        self.check_mutex("lock", m, proc)?;
        if !self.same_node(proc) {
            return self.origin.borrow_mut().lock(proc, m);
        }
        let ctl = self.ctl_of(proc);
        let ticket = take_ticket(ctl.mutex(m));
        wait_ticket(ctl, m, ticket, self.rank, &self.patience)
    }

    /// Releases mutex `m` of `proc`, which this proc holds. Does not fence: fence the
    /// procs whose memory the critical section wrote before unlocking (ARMCI's rule).
    pub fn unlock(&self, m: usize, proc: usize) -> Result<(), RmaError> {
        self.check_mutex("unlock", m, proc)?;
        if !self.same_node(proc) {
            return self.origin.borrow_mut().unlock(proc, m);
        }
        if !release(self.ctl_of(proc).mutex(m), self.rank) {
            return Err(RmaError::NotHeld {
                op: "unlock",
                mutex: m,
                proc,
            });
        }
        Ok(())
    }
}
