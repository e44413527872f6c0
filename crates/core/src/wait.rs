//! Waiting policy: how a rank spends the time between polls that found nothing.
//!
//! Busy polling is right when every rank has a core. With more ranks than cores
//! (8 ranks on a 2-core CI machine) a spinning rank steals the core of the rank it
//! waits for, so [`WaitMode::Yield`] escalates: spin a little, then `sched_yield`,
//! then nap for a few microseconds, resetting whenever progress was made.
//!
//! Poll-then-block (seed 004): a rank that does not busy-poll (`Yield`, or `Auto`
//! with more ranks than cores) parks after a wait found nothing for
//! [`Waiter::park_after`] (`NF_PARK_US`) — sleeps in `poll(2)` on the network until
//! something may have arrived, rather than napping — when every peer is reached over
//! tcp, whose sockets can wake it (shared memory and ofi cannot), and it reads no
//! connection itself (`Net::should_park`): arrivals then come through the tcp
//! progress thread, which a spinning rank only keeps from the CPU. A busy-polling
//! rank never parks: measured on a shared 2-core machine, a rank that sleeps between
//! round trips wakes late (the scheduler favours tasks that did not spin), its peer
//! waits that out and parks too, and round trips of 8 B to 1 MiB became 10–100×
//! slower in that regime.

use std::time::Duration;

use crate::config::WaitMode;

/// Longest single park; waits re-check their condition and peers between parks.
pub const PARK_MAX: Duration = Duration::from_millis(10);

const SPINS: u32 = 256;
const YIELDS: u32 = 2048;
const NAP: Duration = Duration::from_micros(20);

/// The resolved policy of this rank.
#[derive(Debug, Clone, Copy)]
pub struct Waiter {
    spin_only: bool,
    /// Spin before parking; `None`: never.
    park_after: Option<Duration>,
}

impl Waiter {
    /// Resolves `Auto` against the ranks on this host and the cores we may use;
    /// `park_after` is how long a rank that does not busy-poll waits before parking,
    /// `None` for never.
    pub fn new(mode: WaitMode, local_ranks: usize, park_after: Option<Duration>) -> Waiter {
        let spin_only = match mode {
            WaitMode::Spin => true,
            WaitMode::Yield => false,
            WaitMode::Auto => local_ranks <= available_cores(),
        };
        Waiter {
            spin_only,
            park_after: park_after.filter(|_| !spin_only),
        }
    }

    /// How long a wait spins before it may park (`None`: never).
    pub fn park_after(&self) -> Option<Duration> {
        self.park_after
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
