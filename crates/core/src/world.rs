//! The world: this rank's view of the job, and sending active messages.
//!
//! Start-up, in order:
//! 1. Read settings ([`Config`]) and find the wire-up source ([`Bootstrap`]: `nf run`,
//!    PMIx, PMI-2 or a singleton), or take the one the caller hands over.
//! 2. Connect the transports (the steps are in `wireup.rs`): shm to the ranks of this
//!    host, ofi or tcp to the others.
//! 3. Enable single-copy reads if the kernel allows them.
//! 4. Measure the single-copy threshold where it is neither given nor known for this
//!    host (`calibrate.rs`).
//!
//! Sending: [`World::send`] checks its arguments and sends a message that fits the
//! eager sizes of its destination inline; every other message goes to the
//! protocol its destination's plan gives its size (`proto/`: one file per protocol,
//! the choice by capability in `proto/plan.rs`). The world keeps identity, handlers
//! and the public API; the protocols' state is `proto::State`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use nf_transport::shm::{cma, DoorbellStats};

use crate::am::{Am, HandlerId, Registry, Reserved, COLL_HANDLER, RESERVED_BASE};
use crate::bootstrap::{self, Bootstrap};
use crate::calibrate::RndvSource;
use crate::config::Config;
use crate::error::CoreError;
use crate::net::Net;
use crate::peers::Route;
use crate::proto::plan::{Plans, Thresholds};
use crate::proto::State;
use crate::protocol::{Meta, MAX_AM_HEADER};
use crate::wait::{Backoff, Waiter};

/// How many large messages went by rendezvous, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RndvStats {
    /// Messages this rank sent by a single-copy read to a same-host peer.
    pub shm_sent: u64,
    /// Messages this rank sent by an RMA read over ofi (the receiver read them).
    pub ofi_sent: u64,
    /// Messages this rank received by reading them over ofi.
    pub ofi_received: u64,
    /// Rendezvous sends the receiver refused (NACK), sent again in fragments.
    pub refused: u64,
}

/// How many messages were striped across tcp lanes (`stripe.rs`), for tests and
/// benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StripeStats {
    /// Messages this rank sent striped.
    pub sent: u64,
    /// Striped messages this rank put together and delivered.
    pub received: u64,
}

/// This rank's handle on the job: identity, handlers, transports, protocol state.
///
/// A `World` belongs to one thread; handlers receive `&World` and may send.
pub struct World {
    pub(crate) rank: usize,
    pub(crate) size: usize,
    pub(crate) cfg: Config,
    pub(crate) waiter: Waiter,
    pub(crate) net: RefCell<Net>,
    pub(crate) single_copy: bool,
    pub(crate) boot: RefCell<Box<dyn Bootstrap>>,
    pub(crate) handlers: RefCell<Registry>,
    pub(crate) state: RefCell<State>,
    /// >0 while a handler runs or a send waits: packets are then queued, not handled.
    pub(crate) depth: Cell<u32>,
    /// Messages delivered to handlers other than the collectives' and start-up's own,
    /// ever (outside `state`: counted on every message); `leave` drains until it stays.
    pub(crate) delivered: Cell<u64>,
    pub(crate) coll_seq: Cell<u32>,
    /// Per rank, payloads below this size go eager (its plan's first class,
    /// fixed at start-up: `proto` rule 3), checked inline on every send.
    eager_below: Vec<usize>,
    /// Per rank, the protocol for each size (`proto/plan.rs`).
    pub(crate) plans: RefCell<Plans>,
    /// How each rank is reached (a copy of the peer table's routes).
    routes: Vec<Route>,
    /// Where the single-copy threshold came from (`calibrate.rs` may measure it in
    /// `init`).
    rndv_source: Cell<RndvSource>,
    /// Some `net_read` is in flight or some `held` queue is not empty: packets are
    /// checked against them (outside `state`: read for every packet).
    pub(crate) gated: Cell<bool>,
    /// Network rendezvous in flight, sent or received (waits then do not nap).
    pub(crate) ofi_rndv_active: Cell<u32>,
    job: String,
}

impl World {
    /// Joins the job described by the environment (or runs as a singleton).
    pub fn init() -> Result<World, CoreError> {
        Self::init_with(Config::from_env()?)
    }

    /// Joins the job described by the environment with explicit settings.
    pub fn init_with(cfg: Config) -> Result<World, CoreError> {
        Self::init_from(bootstrap::from_env()?, cfg)
    }

    /// Joins the job through `boot`, a wire-up source the caller provides (e.g. a
    /// library started under MPI that exchanges through `MPI_COMM_WORLD`).
    pub fn init_from(mut boot: Box<dyn Bootstrap>, cfg: Config) -> Result<World, CoreError> {
        let job = boot.job_id().to_owned();
        if !nf_pmi::env::is_valid_job_id(&job) || boot.rank() >= boot.size() {
            return Err(CoreError::Unsupported(format!(
                "wire-up source {} gives rank {} of {} and job id {job:?}; a job id must be \
                 1 to 64 of A-Z a-z 0-9 . _ - and the rank below the size",
                boot.source(),
                boot.rank(),
                boot.size()
            )));
        }
        let net = crate::wireup::connect(boot.as_mut(), &cfg)?;
        cma::allow_peer_reads();
        let single_copy = net.peers.uses_shm() && cma::available();
        if net.peers.uses_shm() && !single_copy {
            tracing::info!("process_vm_readv unavailable: large messages go through frames");
        }
        let size = boot.size();
        let thresholds = Thresholds {
            rndv_copy: cfg.rndv_threshold,
            rndv_net: cfg.ofi_rndv,
            stripe: cfg.tcp_stripe,
        };
        let caps = (0..size)
            .map(|r| net.capabilities(r, single_copy))
            .collect();
        let plans = Plans::new(caps, thresholds);
        let eager_below = (0..size).map(|r| plans.plan(r).eager_below()).collect();
        let world = World {
            rank: boot.rank(),
            size,
            waiter: Waiter::new(
                cfg.wait,
                net.peers.local.len(),
                cfg.job_cpus,
                cfg.park_after,
            ),
            eager_below,
            plans: RefCell::new(plans),
            rndv_source: Cell::new(RndvSource::Default),
            routes: net.peers.routes.clone(),
            gated: Cell::new(false),
            ofi_rndv_active: Cell::new(0),
            cfg,
            net: RefCell::new(net),
            single_copy,
            job,
            boot: RefCell::new(boot),
            handlers: RefCell::new(Registry::default()),
            state: RefCell::new(State::new(size)),
            depth: Cell::new(0),
            delivered: Cell::new(0),
            coll_seq: Cell::new(0),
        };
        world
            .handlers
            .borrow_mut()
            .insert(COLL_HANDLER, Rc::new(crate::collectives::mailbox_handler))?;
        let local = world.net.borrow().peers.local.clone();
        let source = crate::calibrate::at_start(&world, &local)?;
        world.rndv_source.set(source);
        Ok(world)
    }

    /// This rank's number, 0 ..< size.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The job's id (unique per run).
    pub fn job_id(&self) -> &str {
        &self.job
    }

    /// Where this rank's wire-up came from ("nf run", "PMIx", "PMI-2", "singleton", …).
    pub fn bootstrap_source(&self) -> String {
        self.boot.borrow().source().to_owned()
    }

    /// The settings in force.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Whether large messages can move with a single copy on this host.
    pub fn single_copy(&self) -> bool {
        self.single_copy
    }

    /// Changes the single-copy threshold of this rank's sends (the receiver accepts
    /// either protocol, so ranks may differ). Used by `nf tune` to measure it.
    pub fn set_rndv_threshold(&self, bytes: usize) {
        self.plans.borrow_mut().set_rndv_copy(bytes);
    }

    /// Payload size from which this rank's sends go single-copy.
    pub fn rndv_threshold(&self) -> usize {
        self.plans.borrow().thresholds().rndv_copy
    }

    /// Where the single-copy threshold this rank started with came from: given,
    /// measured at start-up, cached from an earlier job's measurement, or the default.
    pub fn rndv_source(&self) -> RndvSource {
        self.rndv_source.get()
    }

    /// How many large messages went by rendezvous so far (shm or ofi).
    pub fn rndv_stats(&self) -> RndvStats {
        self.state.borrow().stats
    }

    /// What this rank's shm doorbell did so far: sleeps, sleeps a sender ended, and
    /// peers this rank woke (all zero without shm peers; see `wait.rs`).
    pub fn doorbell_stats(&self) -> DoorbellStats {
        self.net
            .borrow()
            .shm
            .as_ref()
            .map_or(DoorbellStats::default(), |s| s.doorbell_stats())
    }

    /// How many messages were striped across tcp lanes so far, each way.
    pub fn stripe_stats(&self) -> StripeStats {
        self.net
            .borrow()
            .lanes
            .as_ref()
            .map_or(StripeStats::default(), |l| StripeStats {
                sent: l.sent,
                received: l.received,
            })
    }

    /// How this rank reaches `rank` (self, shm, tcp or ofi; for a peer on another
    /// host, the transport of its small messages).
    pub fn route(&self, rank: usize) -> Option<Route> {
        self.routes.get(rank).copied()
    }

    /// The host identity of `rank` (`NF_HOST`, or host name and boot id): what
    /// wire-up compared to find the ranks that share memory.
    pub fn host_of(&self, rank: usize) -> Option<String> {
        self.net.borrow().peers.hosts.get(rank).cloned()
    }

    /// How this rank reaches `rank` as `nf run --show-transports` prints it: `shm`,
    /// `tcp`, `tcp/ofi@65536` (a route that splits by size), …
    pub fn route_description(&self, rank: usize) -> Option<String> {
        (rank < self.size).then(|| self.net.borrow().peers.describe(rank))
    }

    /// Where this rank's network transports can be reached: (transport, address), tcp
    /// as `ip:port`, ofi as its endpoint name in hex; empty without network routes.
    pub fn network_addresses(&self) -> Vec<(&'static str, String)> {
        self.net.borrow().addresses()
    }

    /// Whether this rank busy-polls (it has a core to itself) or yields.
    pub fn busy_polls(&self) -> bool {
        self.waiter.spins()
    }

    /// Registers `handler` under `id` (below [`RESERVED_BASE`]); do it on every rank
    /// before anyone sends to `id`, e.g. before a barrier.
    pub fn register(
        &self,
        id: HandlerId,
        handler: impl Fn(&World, &Am<'_>) + 'static,
    ) -> Result<(), CoreError> {
        if id >= RESERVED_BASE {
            return Err(CoreError::ReservedHandler {
                id,
                limit: RESERVED_BASE,
            });
        }
        self.handlers.borrow_mut().insert(id, Rc::new(handler))
    }

    /// Sends an active message: `handler` runs on `dest` with `header` (at most
    /// [`MAX_AM_HEADER`] bytes) and `payload` (any size up to `NF_MAX_PAYLOAD`).
    /// Returns once `payload` may be reused; sending to oneself is allowed.
    #[inline]
    pub fn send(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        if handler >= RESERVED_BASE {
            return Err(CoreError::ReservedHandler {
                id: handler,
                limit: RESERVED_BASE,
            });
        }
        self.send_am(dest, handler, header, payload)
    }

    /// Registers the handler of one of the runtime's own protocols (see [`Reserved`]);
    /// like [`World::register`], on every rank before anyone sends to it. A second
    /// registration of the same protocol is refused ([`CoreError::HandlerExists`]).
    pub fn register_reserved(
        &self,
        which: Reserved,
        handler: impl Fn(&World, &Am<'_>) + 'static,
    ) -> Result<(), CoreError> {
        self.handlers
            .borrow_mut()
            .insert(which.id(), Rc::new(handler))
    }

    /// [`World::send`] to one of the runtime's own protocols (see [`Reserved`]).
    #[inline]
    pub fn send_reserved(
        &self,
        dest: usize,
        which: Reserved,
        header: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        self.send_am(dest, which.id(), header, payload)
    }

    /// [`World::send`] without the reserved-id check, for the runtime's own protocols.
    #[inline]
    pub(crate) fn send_am(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        // The common case, one packet to another rank, stays small and inline.
        let one_packet = dest < self.size
            && dest != self.rank
            && header.len() <= MAX_AM_HEADER
            && payload.len() < self.eager_below[dest]
            && payload.len() <= self.cfg.max_payload;
        if !one_packet {
            return self.send_am_general(dest, handler, header, payload);
        }
        self.send_eager(dest, handler, header, payload)
    }

    /// Every other case of [`World::send_am`]: bad arguments, a send to ourselves,
    /// and payloads that take another protocol than eager.
    #[inline(never)]
    fn send_am_general(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        if dest >= self.size {
            return Err(CoreError::NoSuchRank {
                rank: dest,
                size: self.size,
            });
        }
        if header.len() > MAX_AM_HEADER {
            return Err(CoreError::HeaderTooLarge {
                len: header.len(),
                max: MAX_AM_HEADER,
            });
        }
        if payload.len() > self.cfg.max_payload {
            return Err(CoreError::PayloadTooLarge {
                len: payload.len(),
                max: self.cfg.max_payload,
            });
        }
        if dest == self.rank {
            self.send_to_self(handler, header, payload);
            return Ok(());
        }
        self.send_planned(dest, handler, header, payload)
    }

    /// Polls until `cond` holds, running handlers when called at top level.
    /// Fails if a peer dies while we wait and `cond` still does not hold.
    pub fn wait_until(&self, mut cond: impl FnMut() -> bool) -> Result<(), CoreError> {
        let mut backoff = Backoff::new(self);
        loop {
            if cond() {
                return Ok(());
            }
            let progressed = self.progress_until(&mut cond)?;
            if let Some(dead) = backoff.after(progressed) {
                // What the dead peer sent before dying may still be queued for us.
                self.progress()?;
                return if cond() { Ok(()) } else { Err(dead) };
            }
        }
    }

    /// The first peer that is gone, as an error: its process died, its connection
    /// broke, or (ofi, which has no connection to watch) it stopped answering the
    /// heartbeat probes this check sends.
    pub(crate) fn dead_peer(&self) -> Option<CoreError> {
        let mut net = self.net.borrow_mut();
        if let Some(lost) = net.heartbeat(Meta::Probe.encode().as_bytes()) {
            return Some(lost.into());
        }
        let (rank, pid) = net.dead_peer()?;
        Some(CoreError::PeerDied { rank, pid })
    }

    /// Asks the launcher to end the whole job now with exit `status`, every other rank
    /// stopped, saying `message` (OpenSHMEM's `shmem_global_exit`); the caller exits
    /// next. Nothing is drained: the job ends.
    pub fn end_job(&self, status: i32, message: &str) -> Result<(), CoreError> {
        self.boot.borrow_mut().end_job(status, message)?;
        Ok(())
    }

    /// Drains all traffic in flight, then leaves the job.
    pub fn finalize(self) -> Result<(), CoreError> {
        self.leave()
    }

    /// [`World::finalize`] for an owner that cannot give the world up (a language
    /// binding keeps it for the life of the process): nothing may be sent after it.
    pub fn leave(&self) -> Result<(), CoreError> {
        // Everything sent before a barrier is in its receiver's queue when the barrier
        // ends; drain it, and repeat while draining made handlers send more.
        loop {
            self.barrier()?;
            let before = self.delivered.get();
            self.wait_until(|| {
                let st = self.state.borrow();
                st.deferred.is_empty() && st.ctrl.is_empty()
            })?;
            while self.progress()? > 0 {}
            let mut handled = [self.delivered.get() - before];
            self.allreduce(&mut handled, crate::collectives::ReduceOp::Sum)?;
            if handled[0] == 0 {
                break;
            }
        }
        // The allreduce ends at different times on different ranks (a tree: the root
        // is done while the leaves still wait for its result through others), and a
        // waiting rank counts a peer that has left as dead. So no rank leaves until
        // every rank is done: a fence of the launcher's, which waits without watching
        // peers (a fresh clone's run under load saw rank 7 of 8 fail its finalize with
        // "rank 0 died" after rank 0 had cleanly left).
        let mut boot = self.boot.borrow_mut();
        boot.fence()?;
        boot.finalize()?;
        Ok(())
    }
}

/// Marks a nested section: packets for user handlers are queued, not run.
pub(crate) struct Nested<'a>(&'a World);

impl<'a> Nested<'a> {
    pub(crate) fn enter(w: &'a World) -> Self {
        w.depth.set(w.depth.get() + 1);
        Nested(w)
    }
}

impl Drop for Nested<'_> {
    fn drop(&mut self) {
        self.0.depth.set(self.0.depth.get() - 1);
    }
}
