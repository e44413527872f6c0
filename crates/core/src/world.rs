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
//! Sending picks one of three protocols by payload size (eager, fragmented, rendezvous):
//! one packet when it fits a frame; a single-copy read by the receiver (rendezvous)
//! from `NF_RNDV_THRESHOLD` up to same-host peers (CMA), or from `NF_OFI_RNDV` up to
//! peers on ofi routes (the provider's RMA read of our memory, registered in place:
//! no copy at either end); fragments through frames in between, or when single-copy
//! is unavailable or the receiver refused it once. With `NF_TCP_LANES` above 1, a
//! message of at least `NF_TCP_STRIPE` bytes whose route is tcp is cut across the
//! pair's tcp connections instead (`stripe.rs`).

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use nf_transport::rma::{NativeRma, RegionId, RemoteSpan};
use nf_transport::shm::cma;
use nf_transport::{Packet, SendStatus};

use crate::am::{Am, HandlerId, OwnedAm, Registry, Reserved, COLL_HANDLER, RESERVED_BASE};
use crate::bootstrap::{self, Bootstrap};
use crate::buf::RecvBuf;
use crate::calibrate::RndvSource;
use crate::config::Config;
use crate::error::CoreError;
use crate::net::Net;

use crate::peers::Route;
use crate::protocol::{Meta, MAX_AM_HEADER};
use crate::stripe;
use crate::wait::{Backoff, Waiter};

/// State of one rendezvous send, keyed by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rndv {
    /// Waiting for the receiver.
    Waiting,
    /// The receiver asks us to write bytes `split..` to `addr` in its process.
    Cts { addr: u64, split: u64 },
    /// The receiver has everything; our buffer is free.
    Done,
    /// The receiver could not read it; send another way.
    Refused,
}

/// A cooperative rendezvous receive: we read the first part while the sender
/// writes the rest into `msg`'s buffer; it completes when the sender's DONE arrives.
pub(crate) struct CoopRecv {
    pub msg: OwnedAm,
    pub total: usize,
    pub split: usize,
    pub sender_addr: u64,
    pub read_ok: bool,
}

/// A message being reassembled from fragments.
pub(crate) struct Partial {
    pub msg: OwnedAm,
    pub total: usize,
}

/// A rendezvous receive over ofi: the provider reads the sender's region into
/// `msg`'s buffer, which is registered as `region`; completes with the read's
/// completion (tagged by [`net_tag`]).
pub(crate) struct NetRead {
    pub id: u32,
    pub msg: OwnedAm,
    pub total: usize,
    pub region: RegionId,
    pub from: RemoteSpan,
    /// The read was handed to the provider (else it waits for a free slot).
    pub issued: bool,
}

/// The RMA tag of the read of rendezvous `id` from `src`.
pub(crate) fn net_tag(src: usize, id: u32) -> u64 {
    (src as u64) << 32 | u64::from(id)
}

/// A message packet that arrived while a rendezvous read from its sender was in
/// flight, copied so that its receive buffer goes back to the transport.
#[derive(Clone)]
pub(crate) struct HeldPacket {
    pub src: usize,
    pub meta: Vec<u8>,
    pub payload: Vec<u8>,
}

impl Packet for HeldPacket {
    fn src(&self) -> usize {
        self.src
    }
    fn meta(&self) -> &[u8] {
        &self.meta
    }
    fn payload(&self) -> &[u8] {
        &self.payload
    }
}

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

/// Mutable protocol state; borrowed briefly, never across a handler call.
#[derive(Default)]
pub(crate) struct State {
    /// Messages to deliver at the next top-level poll, in arrival order.
    pub deferred: VecDeque<OwnedAm>,
    /// Per source rank, the message whose fragments are arriving.
    pub partial: Vec<Option<Partial>>,
    /// Control packets (CTS / DONE / FIN / NACK) waiting for credit.
    pub ctrl: VecDeque<(usize, Meta<'static>)>,
    /// Our rendezvous sends in flight.
    pub rndv: HashMap<u32, Rndv>,
    /// Cooperative rendezvous receives waiting for the sender's DONE, by (source, id).
    pub coop: HashMap<(usize, u32), CoopRecv>,
    pub next_rndv: u32,
    /// Peers that could not read our memory: no rendezvous to them.
    pub no_single_copy: Vec<bool>,
    /// Collective messages by (sequence, round, source).
    pub mailbox: HashMap<(u32, u16, usize), Vec<u8>>,
    /// Errors caused by peers' bad messages, for `poll` to report.
    pub peer_errors: VecDeque<CoreError>,
    /// Spare receive buffers, so large receives do not fault fresh pages every time.
    pub spare: Vec<Vec<u8>>,
    /// Per source rank, the rendezvous over ofi we are reading from it.
    pub net_read: Vec<Option<NetRead>>,
    /// Per source rank, message packets held until its `net_read` completes.
    pub held: Vec<VecDeque<HeldPacket>>,
    /// Rendezvous counters.
    pub stats: RndvStats,
}

impl State {
    /// A receive buffer with room for `total` bytes, reusing the largest spare.
    pub(crate) fn take_buffer(&mut self, total: usize) -> RecvBuf {
        RecvBuf::with_room(self.spare.pop().unwrap_or_default(), total)
    }

    pub(crate) fn give_buffer(&mut self, b: RecvBuf) {
        let bytes = b.into_inner();
        if self.spare.len() < 4 && !bytes.is_empty() {
            self.spare.push(bytes);
            self.spare.sort_by_key(Vec::len);
        }
    }
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
    /// Messages delivered to handlers, ever (outside `state`: counted on every message).
    pub(crate) delivered: Cell<u64>,
    pub(crate) coll_seq: Cell<u32>,
    /// Largest payload of one packet to each rank (cached: on every send's path).
    max_packet: Vec<usize>,
    /// How each rank is reached (a copy of the peer table's routes).
    routes: Vec<Route>,
    /// Payload size from which messages over tcp are striped across lanes;
    /// `usize::MAX` without lanes (then `max_packet` keeps such sends off the
    /// general path, and this is the only check on it).
    stripe_from: usize,

    /// Payload size from which sends go single-copy; starts at the configured value.
    rndv_threshold: Cell<usize>,
    /// Where `rndv_threshold` came from (`calibrate.rs` may measure it in `init`).
    rndv_source: Cell<RndvSource>,
    /// The ofi transport exists and its provider granted RMA.
    ofi_rma: bool,
    /// Some `net_read` is in flight or some `held` queue is not empty: packets are
    /// checked against them (outside `state`: read for every packet).
    pub(crate) gated: Cell<bool>,
    /// Ofi rendezvous in flight, sent or received (waits then do not nap).
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
        let ofi_rma = net.ofi.as_ref().is_some_and(|o| o.ofi.rma_supported());
        let stripe_from = match &net.lanes {
            Some(_) => cfg.tcp_stripe,
            None => usize::MAX,
        };
        // A message that may be striped must reach the general send path.
        let striped_to = |r: usize| net.lanes.as_ref().is_some_and(|l| l.reaches(r));
        let max_packet = (0..size)
            .map(|r| {
                let max = net.max_payload(r);
                if striped_to(r) {
                    max.min(stripe_from - 1)
                } else {
                    max
                }
            })
            .collect();
        let world = World {
            rank: boot.rank(),
            size,
            waiter: Waiter::new(
                cfg.wait,
                net.peers.local.len(),
                cfg.job_cpus,
                cfg.park_after,
            ),
            rndv_threshold: Cell::new(cfg.rndv_threshold),
            rndv_source: Cell::new(RndvSource::Default),
            max_packet,
            routes: net.peers.routes.clone(),
            stripe_from,
            ofi_rma,
            gated: Cell::new(false),
            ofi_rndv_active: Cell::new(0),
            cfg,
            net: RefCell::new(net),
            single_copy,
            job,
            boot: RefCell::new(boot),
            handlers: RefCell::new(Registry::default()),
            state: RefCell::new(State {
                partial: (0..size).map(|_| None).collect(),
                no_single_copy: vec![false; size],
                net_read: (0..size).map(|_| None).collect(),
                held: (0..size).map(|_| VecDeque::new()).collect(),
                ..State::default()
            }),
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
        self.rndv_threshold.set(bytes);
    }

    /// Payload size from which this rank's sends go single-copy.
    pub fn rndv_threshold(&self) -> usize {
        self.rndv_threshold.get()
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
            && payload.len() <= self.max_packet[dest]
            && payload.len() <= self.cfg.max_payload;
        if !one_packet {
            return self.send_am_general(dest, handler, header, payload);
        }
        self.send_packet(dest, Meta::eager(handler, header).as_bytes(), payload)
    }

    /// Every other case of [`World::send_am`]: bad arguments, a send to ourselves,
    /// and payloads that take fragments or a single-copy rendezvous.
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
            let mut st = self.state.borrow_mut();
            let payload = RecvBuf::copy_of(st.spare.pop().unwrap_or_default(), payload);
            let msg = OwnedAm {
                src: dest,
                handler,
                header: header.to_vec(),
                payload,
            };
            st.deferred.push_back(msg);
            return Ok(());
        }
        if payload.len() >= self.stripe_from && self.send_striped(dest, handler, header, payload)? {
            return Ok(());
        }
        let frame_payload = self.net.borrow().max_payload_for(dest, payload.len());
        if payload.len() <= frame_payload {
            return self.send_packet(dest, Meta::eager(handler, header).as_bytes(), payload);
        }
        let single_copy = self.single_copy
            && matches!(self.routes[dest], Route::Shm(_))
            && !self.state.borrow().no_single_copy[dest];
        if single_copy
            && payload.len() >= self.rndv_threshold.get()
            && self.send_rendezvous(dest, handler, header, payload)?
        {
            return Ok(());
        }
        let ofi_read = self.ofi_rma
            && payload.len() >= self.cfg.ofi_rndv
            && self.net.borrow().peers.route_for(dest, payload.len()) == Route::Ofi
            && !self.state.borrow().no_single_copy[dest];
        if ofi_read && self.send_rendezvous_net(dest, handler, header, payload)? {
            return Ok(());
        }
        self.send_fragments(dest, handler, header, payload, frame_payload)
    }

    /// Sends one packet, polling (without running user handlers) while out of credit.
    #[inline]
    pub(crate) fn send_packet(
        &self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        self.send_packet_of(dest, payload.len(), meta, payload)
    }

    /// [`World::send_packet`] of one packet of a message of `len` payload bytes (its
    /// size picks the transport where the route to `dest` splits by size).
    #[inline]
    fn send_packet_of(
        &self,
        dest: usize,
        len: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        if self.net.borrow_mut().try_send(dest, len, meta, payload)? == SendStatus::Sent {
            return Ok(());
        }
        self.send_packet_blocked(dest, len, meta, payload)
    }

    /// [`World::send_packet`] once the receiver had no room: poll and retry.
    #[inline(never)]
    fn send_packet_blocked(
        &self,
        dest: usize,
        len: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        self.retry_for_credit(|| Ok(self.net.borrow_mut().try_send(dest, len, meta, payload)?))
    }

    /// Polls (without running user handlers) and calls `try_send` again until it
    /// sends; a dead peer ends the wait with its error.
    fn retry_for_credit(
        &self,
        mut try_send: impl FnMut() -> Result<SendStatus, CoreError>,
    ) -> Result<(), CoreError> {
        let mut backoff = Backoff::new(self);
        loop {
            {
                let _nested = Nested::enter(self);
                let progressed = self.progress()?;
                if let Some(dead) = backoff.after(progressed) {
                    return Err(dead);
                }
            }
            if try_send()? == SendStatus::Sent {
                return Ok(());
            }
        }
    }

    /// Sends `payload` cut across the tcp lanes to `dest` and the lead on the main
    /// connection (`stripe.rs`, steps 1–3). Returns false, having sent nothing, if
    /// the message's route is not tcp, no lanes reach `dest`, or it is too small to cut.
    fn send_striped(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<bool, CoreError> {
        let (cuts, id, lanes) = {
            let mut net = self.net.borrow_mut();
            if net.peers.route_for(dest, payload.len()) != Route::Tcp {
                return Ok(false);
            }
            let frame = net.max_payload_for(dest, payload.len());
            let Some(l) = net.lanes.as_mut().filter(|l| l.reaches(dest)) else {
                return Ok(false);
            };
            let cuts = stripe::cut(payload.len(), l.count() + 1, frame);
            if cuts.len() < 3 || cuts.len() - 2 > usize::from(u16::MAX) {
                return Ok(false);
            }
            (cuts, l.next_id(dest), l.count())
        };
        let parts = cuts.len() - 2;
        for k in 0..parts {
            let meta = Meta::Part {
                id,
                offset: cuts[k] as u64,
            }
            .encode();
            self.send_on_lane(
                k % lanes,
                dest,
                meta.as_bytes(),
                &payload[cuts[k]..cuts[k + 1]],
            )?;
        }
        let lead = Meta::Lead {
            handler,
            id,
            total: payload.len() as u64,
            parts: parts as u16,
            header,
        }
        .encode();
        self.send_packet_of(
            dest,
            payload.len(),
            lead.as_bytes(),
            &payload[cuts[parts]..],
        )?;
        if let Some(l) = self.net.borrow_mut().lanes.as_mut() {
            l.sent += 1;
        }
        Ok(true)
    }

    /// Sends one part on tcp lane `lane`, polling (without running user handlers)
    /// while the lane's queue to `dest` is full.
    fn send_on_lane(
        &self,
        lane: usize,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        let try_send = || match self.net.borrow_mut().lanes.as_mut() {
            Some(l) => Ok(l.try_send(lane, dest, meta, payload)?),
            None => Err(CoreError::Unsupported("tcp lanes vanished".into())),
        };
        if try_send()? == SendStatus::Sent {
            return Ok(());
        }
        self.retry_for_credit(try_send)
    }

    fn send_fragments(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
        chunk: usize,
    ) -> Result<(), CoreError> {
        let (first, rest) = payload.split_at(chunk);
        let meta = Meta::First {
            handler,
            total: payload.len() as u64,
            header,
        }
        .encode();
        let len = payload.len();
        self.send_packet_of(dest, len, meta.as_bytes(), first)?;
        let frag = Meta::Frag.encode();
        for piece in rest.chunks(chunk) {
            self.send_packet_of(dest, len, frag.as_bytes(), piece)?;
        }
        Ok(())
    }

    /// Offers `payload` for a single-copy read by `dest` and waits until it is read.
    /// Returns false if `dest` could not read it (the caller sends it another way).
    fn send_rendezvous(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<bool, CoreError> {
        let id = self.start_rndv();
        let addr = payload.as_ptr() as u64;
        let meta = Meta::Rts {
            handler,
            id,
            total: payload.len() as u64,
            addr,
            header,
        }
        .encode();
        let outcome = self
            .send_packet(dest, meta.as_bytes(), &[])
            .and_then(|()| self.rendezvous_wait(dest, id, payload));
        let read = self.end_rndv_send(dest, id, outcome, "with a single-copy read")?;
        if read {
            self.state.borrow_mut().stats.shm_sent += 1;
        }
        Ok(read)
    }

    /// A fresh rendezvous id, waiting for its receiver.
    fn start_rndv(&self) -> u32 {
        let mut st = self.state.borrow_mut();
        let id = st.next_rndv;
        st.next_rndv = id.wrapping_add(1);
        st.rndv.insert(id, Rndv::Waiting);
        id
    }

    /// Forgets rendezvous `id` once its wait ended with `outcome`; whether the
    /// receiver read it (`how`: how it tried). A refusal stops rendezvous to `dest`:
    /// the caller, and later sends, use fragments.
    fn end_rndv_send(
        &self,
        dest: usize,
        id: u32,
        outcome: Result<Rndv, CoreError>,
        how: &str,
    ) -> Result<bool, CoreError> {
        self.state.borrow_mut().rndv.remove(&id);
        if outcome? != Rndv::Refused {
            return Ok(true);
        }
        tracing::warn!(
            dest,
            "peer could not read our memory {how}; falling back to copies through fragments"
        );
        let mut st = self.state.borrow_mut();
        st.no_single_copy[dest] = true;
        st.stats.refused += 1;
        Ok(false)
    }

    /// Offers `payload` to `dest`, a rank on an ofi route, for a read with the
    /// provider's RMA: registered in place (no copy), announced by `RTS_NET`, and
    /// waited for as [`World::send_rendezvous`] does (our polls drive the provider,
    /// which serves the read only then under manual progress). Returns false if it
    /// could not be registered or `dest` could not read it (the caller sends
    /// fragments, and no more rendezvous go to `dest`).
    fn send_rendezvous_net(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<bool, CoreError> {
        let registered = {
            let mut net = self.net.borrow_mut();
            let Some(ofi) = net.ofi.as_mut() else {
                return Ok(false);
            };
            // SAFETY: `payload` stays borrowed (so mapped and unchanged) until the
            // deregistration below, which every path out of this function passes;
            // RTS_NET offers it to the receiver for reading only, so nothing writes
            // through this shared borrow.
            let region = unsafe {
                ofi.ofi
                    .register_memory(payload.as_ptr().cast_mut(), payload.len())
            };
            region.and_then(|region| match ofi.ofi.remote(region) {
                Ok(remote) => Ok((region, remote)),
                Err(e) => {
                    let _ = ofi.ofi.deregister(region);
                    Err(e)
                }
            })
        };
        let (region, remote) = match registered {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(dest, error = %e, "could not register a message for an ofi read; sending fragments");
                self.state.borrow_mut().no_single_copy[dest] = true;
                return Ok(false);
            }
        };
        let id = self.start_rndv();
        let meta = Meta::RtsNet {
            handler,
            id,
            total: payload.len() as u64,
            base: remote.base,
            key: remote.key,
        }
        .encode();
        self.ofi_rndv_started();
        let outcome = self
            .send_packet(dest, meta.as_bytes(), header)
            .and_then(|()| self.rendezvous_wait(dest, id, payload));
        self.ofi_rndv_ended(region);
        let read = self.end_rndv_send(dest, id, outcome, "with an ofi read")?;
        if read {
            self.state.borrow_mut().stats.ofi_sent += 1;
        }
        Ok(read)
    }

    /// Counts an ofi rendezvous in flight (its ofi queue is then read on every pass).
    pub(crate) fn ofi_rndv_started(&self) {
        self.ofi_rndv_active.set(self.ofi_rndv_active.get() + 1);
        if let Some(o) = self.net.borrow_mut().ofi.as_mut() {
            o.rndv += 1;
        }
    }

    /// Ends what [`World::ofi_rndv_started`] began and forgets `region`.
    pub(crate) fn ofi_rndv_ended(&self, region: RegionId) {
        self.ofi_rndv_active
            .set(self.ofi_rndv_active.get().saturating_sub(1));
        if let Some(o) = self.net.borrow_mut().ofi.as_mut() {
            o.rndv = o.rndv.saturating_sub(1);
            if let Err(e) = o.ofi.deregister(region) {
                tracing::warn!(error = %e, "deregistering a rendezvous buffer");
            }
        }
    }

    /// Waits for the receiver of rendezvous `id`; writes its share when it asks (CTS).
    fn rendezvous_wait(&self, dest: usize, id: u32, payload: &[u8]) -> Result<Rndv, CoreError> {
        let _nested = Nested::enter(self);
        loop {
            self.wait_until(|| self.state.borrow().rndv.get(&id) != Some(&Rndv::Waiting))?;
            let state = self.state.borrow().rndv.get(&id).copied();
            let Some(Rndv::Cts { addr, split }) = state else {
                return Ok(state.unwrap_or(Rndv::Refused));
            };
            self.state.borrow_mut().rndv.insert(id, Rndv::Waiting);
            let pid = self.net.borrow().shm_pid(dest).unwrap_or(0);
            let ok = usize::try_from(split)
                .ok()
                .and_then(|s| payload.get(s..))
                .is_some_and(|part| cma::write(pid, addr, part).is_ok());
            self.send_packet(dest, Meta::Done { id, ok }.encode().as_bytes(), &[])?;
        }
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
        self.boot.borrow_mut().finalize()?;
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
