//! Taking the control segment's locks (rules 2 and 3 of `control.rs`), and waiting
//! for them without spinning oversubscribed procs to death or hanging on a dead holder.

use std::sync::Arc;
use std::time::{Duration, Instant};

use nf_core::wait::Waiter;
use nf_transport::shm::segment::pid_alive;

use super::control::{Control, MutexWord, NSTRIPES};
use super::sync::{idle, Ordering};
use crate::error::RmaError;

/// Yields of [`Patience::wait_yielding`] before it naps between polls. Few: where
/// procs outnumber CPUs, a yielding waiter stays runnable and the scheduler still
/// hands it slices the awaited proc needs, and a node collective has every other proc
/// of the node waiting at once. Measured with 16 ranks on 2 CPUs (`armci_calls`,
/// `ARMCI_Barrier` median): 4096 yields 143–1038 µs, 256: 121–242, 16: 83–122, 0
/// (nap at once): 190–217; ARMCI-MPI 190–272 in the same runs.
const YIELDS: u32 = 16;
/// Its nap.
const NAP: Duration = Duration::from_micros(20);

/// What [`Patience::wait_yielding`] does after an empty poll.
#[derive(Debug, PartialEq, Eq)]
enum Idle {
    /// Poll again at once (the proc has a CPU of its own).
    Poll,
    /// `sched_yield`: runnable, but behind the others on this CPU.
    Yield,
    /// Sleep [`NAP`]: off the run queue, leaving the CPU to the procs that work.
    Nap,
}

/// The policy of [`Patience::wait_yielding`] after the `idle`-th empty poll (from 1).
fn yielding_idle(spins: bool, idle: u32) -> Idle {
    if spins {
        Idle::Poll
    } else if idle < YIELDS {
        Idle::Yield
    } else {
        Idle::Nap
    }
}

/// How a proc (or its service thread) waits for a lock held by someone else.
#[derive(Clone)]
pub(crate) struct Patience {
    waiter: Waiter,
    check_every: Duration,
    /// Pid of each proc of our domain (0 for procs elsewhere).
    pids: Arc<Vec<u32>>,
}

impl Patience {
    /// A policy: `waiter` between tries, a liveness check every `check_every`.
    pub(crate) fn new(waiter: Waiter, check_every: Duration, pids: Arc<Vec<u32>>) -> Self {
        Patience {
            waiter,
            check_every,
            pids,
        }
    }

    /// The pid of `proc` when it shares our domain.
    pub(crate) fn pid_of(&self, proc: usize) -> Option<u32> {
        self.pids.get(proc).copied().filter(|&p| p != 0)
    }

    /// Retries `attempt` until it succeeds. Every `check_every`, `holder` names the pid
    /// holding what we wait for (0: unknown or nobody); if that process is gone the wait
    /// fails, since nobody will ever release it.
    pub(crate) fn wait(
        &self,
        op: &'static str,
        what: &dyn Fn() -> String,
        attempt: impl FnMut() -> bool,
        holder: impl Fn() -> u32,
    ) -> Result<(), RmaError> {
        self.wait_idling(op, what, attempt, holder, 64, |turn| {
            idle(&self.waiter, turn)
        })
    }

    /// [`Patience::wait`] for a proc that waits on one other proc of its domain, which
    /// must run to end the wait (a node collective): where procs outnumber CPUs it
    /// yields from the first empty poll and naps after [`YIELDS`] of them, since every
    /// pause spent spinning or queued for the CPU there is time the awaited proc does
    /// not get.
    pub(crate) fn wait_yielding(
        &self,
        op: &'static str,
        what: &dyn Fn() -> String,
        attempt: impl FnMut() -> bool,
        holder: impl Fn() -> u32,
    ) -> Result<(), RmaError> {
        let spins = self.waiter.spins();
        // A spinning poll takes nanoseconds: read the clock for the liveness check
        // less often than after every 64th, as a yield's microseconds allow.
        let clock_every = if spins { 4096 } else { 64 };
        self.wait_idling(op, what, attempt, holder, clock_every, |idle| {
            match yielding_idle(spins, idle) {
                // Poll again at once, as `Waiter::idle` does.
                Idle::Poll => {}
                Idle::Yield => std::thread::yield_now(),
                Idle::Nap => std::thread::sleep(NAP),
            }
        })
    }

    /// The loop of both waits, idling with `idle_once(n)` after the n-th empty poll and
    /// reading the clock (for the liveness check) after every `clock_every`-th.
    fn wait_idling(
        &self,
        op: &'static str,
        what: &dyn Fn() -> String,
        mut attempt: impl FnMut() -> bool,
        holder: impl Fn() -> u32,
        clock_every: u32,
        idle_once: impl Fn(u32),
    ) -> Result<(), RmaError> {
        let mut turn = 0u32;
        let mut last_check: Option<Instant> = None;
        loop {
            if attempt() {
                return Ok(());
            }
            turn = turn.saturating_add(1);
            idle_once(turn);
            if !turn.is_multiple_of(clock_every) {
                continue;
            }
            let now = Instant::now();
            let since = *last_check.get_or_insert(now);
            if now - since < self.check_every {
                continue;
            }
            last_check = Some(now);
            let pid = holder();
            if pid != 0 && !pid_alive(pid) {
                let proc = self
                    .pids
                    .iter()
                    .position(|&p| p == pid)
                    .unwrap_or(usize::MAX);
                return Err(RmaError::PeerDied {
                    op,
                    proc,
                    pid,
                    what: what(),
                });
            }
        }
    }
}

/// Stripe locks held; released when dropped.
pub(crate) struct StripeGuard<'c> {
    ctl: &'c Control,
    held: u64,
}

impl Drop for StripeGuard<'_> {
    fn drop(&mut self) {
        let mut m = self.held;
        while m != 0 {
            let s = m.trailing_zeros() as usize;
            self.ctl.stripe(s).store(0, Ordering::Release);
            m &= m - 1;
        }
    }
}

/// Takes the stripes in `mask` in ascending order (so two takers never deadlock),
/// stamping them with `pid`.
pub(crate) fn lock_stripes<'c>(
    ctl: &'c Control,
    mask: u64,
    pid: u32,
    patience: &Patience,
    op: &'static str,
) -> Result<StripeGuard<'c>, RmaError> {
    let mut guard = StripeGuard { ctl, held: 0 };
    let mut m = mask;
    while m != 0 {
        let s = m.trailing_zeros() as usize;
        debug_assert!(s < NSTRIPES);
        let word = ctl.stripe(s);
        patience.wait(
            op,
            &|| format!("accumulate stripe lock {s}"),
            || {
                word.compare_exchange_weak(0, pid, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            },
            || word.load(Ordering::Relaxed),
        )?;
        guard.held |= 1 << s;
        m &= m - 1;
    }
    Ok(guard)
}

/// Rule 3: a ticket for mutex `w`.
pub(crate) fn take_ticket(w: &MutexWord) -> u32 {
    w.next.fetch_add(1, Ordering::AcqRel)
}

/// Whether `ticket` holds mutex `w` now.
pub(crate) fn served(w: &MutexWord, ticket: u32) -> bool {
    w.serving.load(Ordering::Acquire) == ticket
}

/// Records `proc` as the holder (after [`served`] said yes).
pub(crate) fn mark_holder(w: &MutexWord, proc: usize) {
    w.holder.store(proc as u32 + 1, Ordering::Relaxed);
}

/// Releases mutex `w` if `proc` holds it; false (and nothing changes) otherwise.
pub(crate) fn release(w: &MutexWord, proc: usize) -> bool {
    if w.holder
        .compare_exchange(proc as u32 + 1, 0, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    w.serving.fetch_add(1, Ordering::Release);
    true
}

/// Marks the holder word of a mutex whose holder left without releasing it: the bit
/// plus the holder's proc + 1. Nobody is served after it; waiters fail instead.
pub(crate) const POISONED: u32 = 1 << 31;

/// Poisons every mutex among the first `n` of `ctl` that `proc` holds (it is gone).
pub(crate) fn poison_held(ctl: &Control, n: usize, proc: usize) -> usize {
    let holder = proc as u32 + 1;
    (0..n)
        .filter(|&m| {
            ctl.mutex(m)
                .holder
                .compare_exchange(
                    holder,
                    POISONED | holder,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                )
                .is_ok()
        })
        .count()
}

/// The proc that left holding mutex `w`, if it is poisoned.
pub(crate) fn poisoned_by(w: &MutexWord) -> Option<usize> {
    let h = w.holder.load(Ordering::Acquire);
    (h & POISONED != 0).then(|| (h & !POISONED) as usize - 1)
}

/// Skips a ticket whose taker is gone, as if it had taken and released the mutex.
pub(crate) fn skip(w: &MutexWord) {
    w.serving.fetch_add(1, Ordering::Release);
}

/// Waits for `ticket` of mutex `m` on `ctl` as `proc`, then marks it held. Fails if
/// the holder dies (same domain) or left holding it (poisoned).
pub(crate) fn wait_ticket(
    ctl: &Control,
    m: usize,
    ticket: u32,
    proc: usize,
    patience: &Patience,
) -> Result<(), RmaError> {
    let w = ctl.mutex(m);
    let mut left = None;
    patience.wait(
        "lock",
        &|| format!("mutex {m}"),
        || {
            left = poisoned_by(w);
            left.is_some() || served(w, ticket)
        },
        || {
            let h = w.holder.load(Ordering::Relaxed) as usize;
            h.checked_sub(1)
                .and_then(|p| patience.pid_of(p))
                .unwrap_or(0)
        },
    )?;
    if let Some(gone) = left {
        return Err(RmaError::PeerDied {
            op: "lock",
            proc: gone,
            pid: patience.pid_of(gone).unwrap_or(0),
            what: format!("mutex {m} (it left the job without unlocking)"),
        });
    }
    mark_holder(w, proc);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{yielding_idle, Idle};

    /// An oversubscribed waiter of a node collective leaves the run queue after a few
    /// yields (16 ranks on 2 CPUs: barriers 2-10x faster than after 4096), and a proc
    /// with a CPU of its own never leaves the CPU.
    #[test]
    fn oversubscribed_collective_waiters_nap_after_a_few_yields() {
        assert_eq!(yielding_idle(false, 1), Idle::Yield);
        assert_eq!(yielding_idle(false, 17), Idle::Nap);
        assert_eq!(yielding_idle(false, 64), Idle::Nap);
        assert_eq!(yielding_idle(true, 1), Idle::Poll);
        assert_eq!(yielding_idle(true, 100_000), Idle::Poll);
    }
}
