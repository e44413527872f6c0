//! Waiting policy: how a rank spends the time between polls that found nothing.
//!
//! Busy polling is right when every rank has a core. With more ranks than cores
//! (8 ranks on a 2-core CI machine) a spinning rank steals the core of the rank it
//! waits for, so [`WaitMode::Yield`] escalates: spin a little, then `sched_yield`,
//! then nap for a few microseconds, resetting whenever progress was made (no naps
//! while an ofi rendezvous is in flight: see `Waiter::last_yield`). When every rank
//! of the host shares one CPU the spin is skipped: no peer can run while we spin, so
//! each pause only delays the yield that lets the peer answer.
//!
//! "Cores" are the CPUs the job may use on this host, not those the host has: two
//! ranks confined to one CPU (`taskset -c 1`, a Slurm or container cpuset, a cgroup
//! CPU quota) that spin take turns by the scheduler's time slice, and an 8 B round
//! trip took milliseconds. `nf run` counts its own CPUs (affinity mask and quota)
//! before it pins any rank and passes the count as `NF_JOB_CPUS`, since a rank pinned
//! to one core (`--bind-to core`) still has that core to itself; a rank started
//! otherwise counts its own mask and quota.
//!
//! Poll-then-block: a rank that does not busy-poll (`Yield`, or `Auto`
//! with more ranks than cores) parks after a wait found nothing for
//! [`Waiter::park_after`] (`NF_PARK_US`) — sleeps in the kernel until something may
//! have arrived, rather than yielding and napping — where something can wake it:
//! 1. Every peer is on this host (shm alone): it sleeps on its *doorbell*, a futex
//!    word in its segment that senders ring after publishing a packet, but only
//!    while it is armed (`nf_transport`'s `shm/doorbell.rs`: arm, re-check every
//!    queue, `FUTEX_WAIT`; senders fence, load the word, `FUTEX_WAKE` if armed). A
//!    woken rank is runnable at once, not at its next yield; beside CPU hogs it may
//!    still wait out a hog's slice, which is the scheduler's call (two hogs on the
//!    2-core VM: 1.4–1.5 → 0.74–0.85 ms per hop of `nf demo`'s ring with the job's
//!    session weighted over others, unchanged at 0.67–0.92 ms in a plain session;
//!    `bench/README.md`). Only waits for what arrives as
//!    a packet sleep there: a send
//!    waiting for credit (frames or fast-box slots the receiver frees, which ring
//!    nothing) and a wait with control packets queued for credit keep yielding.
//! 2. Every peer is reached over tcp and the rank reads no connection itself
//!    (`Net::should_park`): it sleeps in `poll(2)` on its sockets and the tcp
//!    progress thread's bell; arrivals come through that thread, which a spinning
//!    rank only keeps from the CPU.
//! 3. Otherwise (shm and a network, or any ofi peer) it does not park: the tcp
//!    thread cannot ring the shm doorbell of a rank that also reads connections
//!    itself, and ofi has nothing to sleep on; such a wait yields and naps.
//!
//! Whether a rank may sleep on its doorbell is fixed when its segment is created
//! (a rank that busy-polls, or has network peers, never does) and published there,
//! so senders to a busy-polling rank skip the doorbell altogether: the busy-polling
//! path pays nothing for it. A sleep is bounded by [`PARK_MAX`] and
//! `NF_PEER_CHECK_MS`, so a dead peer is still noticed, and a signal (Ctrl-C, the
//! launcher ending the job) ends it like any system call. Past the spin phase the
//! clock is read at every empty poll (a yield is a system call; a clock read costs
//! far less), so the park comes `NF_PARK_US` after the wait began even when each
//! yield hands the CPU to another task for a time slice.
//!
//! A busy-polling rank never parks: measured on a shared 2-core machine, a rank that
//! sleeps between round trips wakes late (the scheduler favours tasks that did not
//! spin), its peer waits that out and parks too, and round trips of 8 B to 1 MiB
//! became 10–100× slower in that regime.
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

/// Longest single park; waits re-check their condition and peers between parks.
pub const PARK_MAX: Duration = Duration::from_millis(10);

/// Empty polls that spin (`pause`) before the first yield, where a peer may be
/// running on another CPU.
const SPINS: u32 = 256;
/// Empty polls between clock reads (for the liveness check) in a wait.
const CHECK_EVERY: u32 = 64;
const YIELDS: u32 = 2048;
const NAP: Duration = Duration::from_micros(20);
/// The resolved policy of this rank.
#[derive(Debug, Clone, Copy)]
pub struct Waiter {
    spin_only: bool,
    /// Empty polls spent spinning before yielding: `SPINS`, or 0 on one CPU.
    spins: u32,
    /// Spin before parking; `None`: never.
    park_after: Option<Duration>,
}

impl Waiter {
    /// Resolves `Auto` against the ranks on this host and the CPUs they share there
    /// (`job_cpus`; the CPUs this process may run on, [`nf_sys::cpus::usable`], when `None`); `park_after` is how long a rank that does
    /// not busy-poll waits before parking, `None` for never.
    pub fn new(
        mode: WaitMode,
        local_ranks: usize,
        job_cpus: Option<usize>,
        park_after: Option<Duration>,
    ) -> Waiter {
        let cpus = job_cpus.unwrap_or_else(nf_sys::cpus::usable);
        let spin_only = match mode {
            WaitMode::Spin => true,
            WaitMode::Yield => false,
            WaitMode::Auto => local_ranks <= cpus,
        };
        Waiter {
            spin_only,
            spins: if cpus <= 1 && local_ranks > 1 {
                0
            } else {
                SPINS
            },
            park_after: park_after.filter(|_| !spin_only),
        }
    }

    /// How long a wait spins before it may park (`None`: never).
    pub fn park_after(&self) -> Option<Duration> {
        self.park_after
    }

    /// The last idle count that yields rather than naps: a wait with an ofi
    /// rendezvous in flight stays there, since under manual progress the read moves
    /// only while both ends poll (a nap of the memory's owner stalls the reader).
    pub(crate) fn last_yield(&self) -> u32 {
        self.spins + YIELDS - 1
    }

    /// Whether this rank busy-polls.
    pub fn spins(&self) -> bool {
        self.spin_only
    }

    /// Whether this rank may park at all, and so sleep on its shm doorbell (its
    /// segment says so, and senders ring it).
    pub fn may_park(&self) -> bool {
        self.park_after.is_some()
    }

    /// Whether the `idle`-th consecutive empty poll reads the clock: every
    /// `CHECK_EVERY`-th while spinning, every one once yielding (see the module doc).
    #[inline]
    fn clock_due(&self, idle: u32) -> bool {
        idle.is_multiple_of(CHECK_EVERY) || (!self.spin_only && idle > self.spins)
    }

    /// The idle count of the first clock read of an idle stretch.
    fn first_clock(&self) -> u32 {
        if self.spin_only {
            CHECK_EVERY
        } else {
            CHECK_EVERY.min(self.spins + 1)
        }
    }

    /// Called after the `idle`-th consecutive empty poll.
    pub fn idle(&self, idle: u32) {
        if self.spin_only {
            // Poll again at once (see the module doc).
        } else if idle < self.spins {
            std::hint::spin_loop();
        } else if idle < self.spins + YIELDS {
            std::thread::yield_now();
        } else {
            std::thread::sleep(NAP);
        }
    }
}

/// One wait's idle policy plus a rate-limited check that peers are alive.
///
/// The clock is read only once a wait has been idle for a while: a wait that ends
/// at the first poll (the common case for small messages) costs no clock read.
pub(crate) struct Backoff<'a> {
    world: &'a World,
    idle: u32,
    /// When the first clock read of the current idle stretch (its `CHECK_EVERY`-th
    /// empty poll) happened; set there, so progress need not reset it.
    idle_since: Option<Instant>,
    last_check: Option<Instant>,
    /// What this wait waits for arrives as a packet, so it may sleep on the shm
    /// doorbell (false for a send waiting for credit: freeing frames rings nothing).
    arrivals: bool,
}

impl<'a> Backoff<'a> {
    /// A wait for something that arrives (a message, a reply).
    pub(crate) fn new(world: &'a World) -> Self {
        Backoff {
            world,
            idle: 0,
            idle_since: None,
            last_check: None,
            arrivals: true,
        }
    }

    /// A send's wait for the receiver's credit: never sleeps on the shm doorbell.
    pub(crate) fn for_credit(world: &'a World) -> Self {
        Backoff {
            arrivals: false,
            ..Backoff::new(world)
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
            return self.on_clock();
        }
        None
    }

    /// An empty poll: wait as the policy says; true when the clock is due. Out of
    /// line, so that it costs the message path nothing (and profiles count it).
    #[inline(never)]
    fn idle_once(&mut self) -> bool {
        self.idle = self.idle.saturating_add(1);
        let idle = if self.world.ofi_rndv_active.get() > 0 {
            self.idle.min(self.world.waiter.last_yield())
        } else {
            self.idle
        };
        self.world.waiter.idle(idle);
        self.world.waiter.clock_due(self.idle)
    }

    /// When the clock is due (`Waiter::clock_due`): park if this wait has spun long
    /// enough and something can wake us (see the module doc); every
    /// `NF_PEER_CHECK_MS`, the first peer found dead, as an error.
    #[cold]
    fn on_clock(&mut self) -> Option<CoreError> {
        let now = Instant::now();
        if self.idle == self.world.waiter.first_clock() {
            self.idle_since = Some(now);
        }
        let spun = now - self.idle_since.unwrap_or(now);
        let world = self.world;
        let park = world.waiter.park_after().is_some_and(|after| spun >= after) && {
            // Control packets waiting for credit are what a peer may be waiting for.
            let arrivals = self.arrivals && world.state.borrow().ctrl.is_empty();
            world.net.borrow().should_park(arrivals)
        };
        if park {
            let timeout = world.cfg.peer_check.min(PARK_MAX);
            if let Err(e) = world.net.borrow_mut().park(timeout) {
                return Some(e.into());
            }
        }
        let since = *self.last_check.get_or_insert(now);
        if now - since >= world.cfg.peer_check {
            self.last_check = Some(now);
            return world.dead_peer();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_sharing_one_cpu_yield_without_spinning_first() {
        let one = Waiter::new(WaitMode::Auto, 2, Some(1), None);
        assert!(!one.spins());
        assert_eq!(
            one.spins, 0,
            "no peer can run while a rank on the only CPU spins"
        );
        assert_eq!(one.last_yield(), YIELDS - 1);
        let two = Waiter::new(WaitMode::Auto, 4, Some(2), None);
        assert_eq!(
            two.spins, SPINS,
            "with a second CPU the awaited peer may be running"
        );
        let alone = Waiter::new(WaitMode::Yield, 1, Some(1), None);
        assert_eq!(
            alone.spins, SPINS,
            "a lone rank waits for the network, not a local peer"
        );
    }

    #[test]
    fn a_yielding_wait_reads_the_clock_at_every_poll_once_past_its_spins() {
        let park = Some(Duration::from_micros(50));
        let spin = Waiter::new(WaitMode::Spin, 4, Some(2), park);
        assert!(!spin.may_park(), "a busy-polling rank never parks");
        assert_eq!(spin.first_clock(), CHECK_EVERY);
        assert!(!spin.clock_due(SPINS + 1) && spin.clock_due(CHECK_EVERY * 9));
        let two = Waiter::new(WaitMode::Yield, 4, Some(2), park);
        assert!(two.may_park());
        assert_eq!(two.first_clock(), CHECK_EVERY);
        assert!(!two.clock_due(CHECK_EVERY + 1), "spinning: every 64th poll");
        assert!(two.clock_due(SPINS + 1), "yielding: every poll");
        let one = Waiter::new(WaitMode::Yield, 2, Some(1), park);
        assert_eq!(one.first_clock(), 1, "no spin phase on one CPU");
        assert!(one.clock_due(1) && one.clock_due(2));
    }
}
