//! Waiting policy: how a rank spends the time between polls that found nothing.
//!
//! Busy polling is right when every rank has a core. With more ranks than cores
//! (8 ranks on a 2-core CI machine) a spinning rank steals the core of the rank it
//! waits for, so [`WaitMode::Yield`] escalates: spin a little, then `sched_yield`,
//! then nap for a few microseconds, resetting whenever progress was made.

use std::time::Duration;

use crate::config::WaitMode;

const SPINS: u32 = 256;
const YIELDS: u32 = 2048;
const NAP: Duration = Duration::from_micros(20);

/// The resolved policy of this rank.
#[derive(Debug, Clone, Copy)]
pub struct Waiter {
    spin_only: bool,
}

impl Waiter {
    /// Resolves `Auto` against the ranks on this host and the cores we may use.
    pub fn new(mode: WaitMode, local_ranks: usize) -> Waiter {
        let spin_only = match mode {
            WaitMode::Spin => true,
            WaitMode::Yield => false,
            WaitMode::Auto => local_ranks <= available_cores(),
        };
        Waiter { spin_only }
    }

    /// Whether this rank busy-polls.
    pub fn spins(&self) -> bool {
        self.spin_only
    }

    /// Called after the `idle`-th consecutive empty poll.
    pub fn idle(&self, idle: u32) {
        if self.spin_only || idle < SPINS {
            std::hint::spin_loop();
        } else if idle < SPINS + YIELDS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(NAP);
        }
    }
}

/// Online cores of this host. Not this process's affinity mask: a rank pinned to
/// one core (`nf run --bind-to core`) still has that core to itself.
pub fn available_cores() -> usize {
    // SAFETY: sysconf takes an integer name and has no memory-safety preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(1)
}
