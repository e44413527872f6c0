//! Waiting policy: how a rank spends the time between polls that found nothing.
//!
//! Busy polling is right when every rank has a core. With more ranks than cores
//! (8 ranks on a 2-core CI machine) a spinning rank steals the core of the rank it
//! waits for, so [`WaitMode::Yield`] escalates: spin a little, then `sched_yield`,
//! then nap for a few microseconds, resetting whenever progress was made.
//!
//! A busy-polling wait does nothing between polls — no `pause`, no clock read, no
//! liveness check — because whatever runs there delays noticing a message that
//! arrived meanwhile, which is the whole small-message latency. Only every
//! `CHECK_EVERY`-th empty poll reads the clock, and only every `NF_PEER_CHECK_MS`
//! checks that the peers are alive.

use std::time::{Duration, Instant};

use crate::config::WaitMode;
use crate::error::CoreError;
use crate::world::World;

const SPINS: u32 = 256;
/// Empty polls between clock reads (for the liveness check) in a wait.
const CHECK_EVERY: u32 = 64;
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
        if self.spin_only {
            // Poll again at once (see the module doc).
        } else if idle < SPINS {
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

/// One wait's idle policy plus a rate-limited check that peers are alive.
///
/// The clock is read only once a wait has been idle for a while: a wait that ends
/// at the first poll (the common case for small messages) costs no clock read.
pub(crate) struct Backoff<'a> {
    world: &'a World,
    idle: u32,
    last_check: Option<Instant>,
}

impl<'a> Backoff<'a> {
    pub(crate) fn new(world: &'a World) -> Self {
        Backoff {
            world,
            idle: 0,
            last_check: None,
        }
    }

    /// Call after each progress attempt; returns a dead peer's error if one is found.
    #[inline]
    pub(crate) fn after(&mut self, progressed: usize) -> Option<CoreError> {
        if progressed > 0 {
            self.idle = 0;
            return None;
        }
        if self.idle_once() {
            return self.check_peers();
        }
        None
    }

    /// An empty poll: wait as the policy says; true when the clock is due. Out of
    /// line, so that it costs the message path nothing (and profiles count it).
    #[inline(never)]
    fn idle_once(&mut self) -> bool {
        self.idle = self.idle.saturating_add(1);
        self.world.waiter.idle(self.idle);
        self.idle.is_multiple_of(CHECK_EVERY)
    }

    /// Every `NF_PEER_CHECK_MS`: the first peer found dead, as an error.
    #[cold]
    fn check_peers(&mut self) -> Option<CoreError> {
        let now = Instant::now();
        let since = *self.last_check.get_or_insert(now);
        if now - since >= self.world.cfg.peer_check {
            self.last_check = Some(now);
            return self.world.dead_peer();
        }
        None
    }
}
