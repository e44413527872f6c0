//! `ofi`: the transport over the system libfabric (one interface over every fabric:
//! verbs, efa, cxi, tcp, …), messaging on reliable-datagram (`FI_EP_RDM`) endpoints
//! and the provider's native RMA where it has one (`rma.rs`).
//!
//! libfabric's API is mostly `static inline` C, so a small C shim (`shim/`, built by
//! `build.rs` into its own shared object) wraps it, and `ffi/` loads that at run time:
//! without libfabric the crate still builds and [`available`] says why ofi cannot run.
//!
//! 1. **Open.** [`OfiTransport::open`] asks `fi_getinfo` for an RDM endpoint with
//!    `FI_MSG` (and `FI_RMA` when [`OfiConfig::rma`]; without it, messaging only) from
//!    the provider named by [`OfiConfig::provider`] (the core reads `NF_OFI_PROVIDER`),
//!    opens fabric, domain, completion queue (with a wait fd when [`OfiConfig::wait`]),
//!    address vector and endpoint, and posts `rx_buffers` receive buffers of
//!    `20 + META_MAX + max_payload` bytes each.
//! 2. **Address exchange.** [`OfiTransport::address`] is the endpoint's name (opaque
//!    bytes) followed by a trailer (`conn.rs`): our `reorder_window` and
//!    `max_payload`; the core publishes it hex-encoded through the launcher's
//!    key-value store. After a fence, [`OfiTransport::connect`] checks each peer's
//!    trailer (a different `max_payload` would truncate packets, so it is refused here),
//!    inserts the name into the address vector and opens our send window to that peer
//!    at its `reorder_window`. Connections, if the provider has any, are made on first
//!    use, when both ends poll.
//! 3. **Send.** [`Messaging::try_send`] copies header (`wire.rs`: sender, per-pair
//!    sequence number, lengths, check word), metadata and payload into a free send slot
//!    and injects it (≤ the provider's inject size: the slot is free at once) or sends
//!    it (the slot is busy until its completion). No free slot (`queue_limit` in
//!    flight) after reading the completion queue, a packet outside the peer's window
//!    (`window.rs`: a posted packet `reorder_window` older still in flight), or
//!    `-FI_EAGAIN` from the provider, is [`SendStatus::NoCredit`]: poll, then retry.
//! 4. **Progress and poll.** [`Messaging::poll`] re-posts the buffers of dropped packets,
//!    then reads the completion queue, which also drives the provider's progress
//!    (`FI_PROGRESS_MANUAL` for tcp: nothing moves between calls). A received packet is
//!    returned in its receive buffer (no copy); the buffer is re-posted once the packet
//!    is dropped. Completions may come out of order (rendezvous of large messages), so
//!    `order.rs` restores per-pair order from the sequence numbers. The send windows
//!    bound what it must hold, so no packet is ever dropped for want of room: a
//!    receiver holds fewer than `reorder_window` packets per sender (the invariant and
//!    its proof are in `window.rs`).
//! 5. **Faults.** A peer is lost when a send or RMA operation to it completes with an
//!    error, when an operation to it stays in flight for `dead_after`, or when the
//!    provider answers every send to it with `-FI_EAGAIN` for `dead_after` (the tcp
//!    provider does that for a peer that is gone: it retries the refused connection
//!    and reports nothing). Then `poll` returns one [`TransportError::PeerLost`] after
//!    the packets that arrived before, and every later send to that rank fails at
//!    once. A malformed packet (bad check word, lengths, sender or sequence) is
//!    dropped with a [`TransportError::BadPacket`]. RDM has no connection to watch: a
//!    peer that dies while we only receive from it is noticed when we next send to it,
//!    or by the core's liveness check. Under manual progress a peer that does not poll
//!    for `dead_after` looks the same as a dead one.
//!    RMA operations fail the same way, each reported with its tag (`rma.rs`);
//!    [`OfiTransport::expire_stuck`] applies the `dead_after` rule for callers that
//!    never `poll`.
//! 6. **Close.** Dropping the transport reads completions until every send to a peer
//!    not lost has completed (at most `linger`), then closes the endpoint; the receive
//!    pool is freed when the last packet that uses it is dropped.
//!
//! Files (the same names as `shm/` and `tcp/` for the same jobs):
//!
//! | file | job |
//! |---|---|
//! | `mod.rs` | [`OfiTransport`], [`OfiConfig`], opening (step 1), the [`Messaging`] impl, progress, close (step 6) |
//! | `conn.rs` | wire-up: the published address and [`OfiTransport::connect`] (step 2) |
//! | `tx.rs` | sending side (step 3) |
//! | `rx.rs` | receiving side, the packet type (step 4) |
//! | `wire.rs` | wire format: the packet header and its check word |
//! | `faults.rs` | peer loss, stuck operations, errors that say what to do (step 5) |
//! | `rma.rs` | native RMA: [`crate::rma::NativeRma`] for this transport |
//! | `window.rs` | per-pair send windows (why a receiver never drops a packet) |
//! | `order.rs` | restoring per-pair order of receives |
//! | `ffi/`, `shim/` | the libfabric shim and its run-time loading |
//!
//! Settings read from the environment here (the core's config owns the rest):
//! `NF_OFI_SHIM` overrides the path of the shim built by `build.rs`; libfabric's own
//! `FI_*` variables (`FI_TCP_IFACE`, `FI_LOG_LEVEL`, …) apply as usual.

mod conn;
mod faults;
mod ffi;
mod order;
mod rma;
mod rx;
mod tx;
mod window;
pub mod wire;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::error::TransportError;
use crate::rma::RmaDone;
use crate::{Messaging, SendStatus, META_MAX};
use faults::{ofi_error, open_error};
use ffi::{Endpoint, Event, OpenParams, RxBuf};
use order::Order;
use rx::recv_error;
pub use rx::OfiPacket;
use window::Windows;

pub(crate) use ffi::SHIM_SETTING;
use wire::HEADER_LEN;

/// Settings of the ofi transport (the core fills them from `NF_OFI_*`).
#[derive(Debug, Clone)]
pub struct OfiConfig {
    /// The libfabric provider (`tcp`, `verbs`, `efa`, …; `fi_info -l` lists them).
    pub provider: String,
    /// Source address to bind (passed to `fi_getinfo` with `FI_SOURCE`), or the
    /// provider's choice when `None`.
    pub node: Option<String>,
    /// The provider's domain (for tcp and verbs: the interface or device name), or
    /// the first one offered when `None`.
    pub domain: Option<String>,
    /// The job cookie: packets carrying another one are dropped.
    pub cookie: u64,
    /// Largest payload of one packet; every rank must use the same value.
    pub max_payload: usize,
    /// Receive buffers kept posted.
    pub rx_buffers: usize,
    /// Sends (and RMA operations) in flight before `try_send` gets `NoCredit`.
    pub queue_limit: usize,
    /// Packets we hold at most per sender to restore order; published with our
    /// address, and senders keep their window to us within it (`window.rs`).
    pub reorder_window: usize,
    /// Ask for the provider's native RMA (`FI_RMA`); messaging works without it.
    pub rma: bool,
    /// Open the completion queue with a wait object (an fd), so a thread can sleep
    /// until something happens (`rma.rs` step 4); without one where the provider has
    /// none.
    pub wait: bool,
    /// A peer whose operations make no progress for this long is lost (see step 5).
    pub dead_after: Duration,
    /// How long dropping the transport waits for sends in flight to complete.
    pub linger: Duration,
}

impl Default for OfiConfig {
    fn default() -> Self {
        OfiConfig {
            provider: "tcp".into(),
            node: None,
            domain: None,
            cookie: 0,
            max_payload: 64 * 1024,
            rx_buffers: 128,
            queue_limit: 64,
            reorder_window: 256,
            rma: true,
            wait: false,
            dead_after: Duration::from_secs(30),
            linger: Duration::from_secs(2),
        }
    }
}

/// Providers whose endpoints bind an IP address (`FI_SOURCE` with a node name).
const IP_PROVIDERS: [&str; 3] = ["tcp", "sockets", "udp"];

/// Whether endpoints of `provider` (e.g. `tcp` or `tcp;ofi_rxm`) bind an IP address,
/// so [`OfiConfig::node`] should name the interface address peers reach.
pub fn binds_ip(provider: &str) -> bool {
    let base = provider.split(';').next().unwrap_or_default();
    IP_PROVIDERS.contains(&base)
}

/// Whether the ofi transport can run in this process: `Ok` with libfabric's version
/// (major, minor), or why not (built without libfabric-dev, or it fails to load).
pub fn available() -> Result<(u32, u32), TransportError> {
    ffi::available().map_err(TransportError::OfiUnavailable)
}

/// Counters of one endpoint, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OfiStats {
    /// Packets sent with `fi_send`.
    pub sent: u64,
    /// Packets sent with `fi_inject`.
    pub injected: u64,
    /// `try_send` calls answered `NoCredit`.
    pub no_credit: u64,
    /// Of those, the ones held back by the receiver's reorder window.
    pub window_waits: u64,
    /// Packets that completed ahead of an earlier one from the same sender and were
    /// held to restore order.
    pub reordered: u64,
    /// Most packets held at once for one sender.
    pub held_max: usize,
}

/// What a send slot is used for, to name the peer when it fails.
#[derive(Debug, Clone, Copy)]
enum Op {
    /// A posted packet: the peer and its sequence number.
    Send(usize, u32),
    /// An RMA operation: the peer and the caller's tag.
    Rma(usize, u64),
}

/// One rank's endpoint of the ofi transport.
pub struct OfiTransport {
    ep: Endpoint,
    cfg: OfiConfig,
    me: usize,
    size: usize,
    /// The endpoint's name, as the provider gave it.
    name: Vec<u8>,
    connected: Vec<bool>,
    /// Why a peer is lost, once it is.
    lost: Vec<Option<String>>,
    /// Sequence number of the next packet to each peer.
    next_seq: Vec<u32>,
    /// Posted packets in flight per peer, and each peer's reorder window.
    windows: Windows,
    /// The operation in each send slot, and when it was issued (valid while the slot
    /// is in flight).
    slot_op: Vec<Op>,
    slot_since: Vec<Instant>,
    /// Since when the provider has refused every send to each peer (`EAGAIN`).
    stalled_since: Vec<Option<Instant>>,
    /// Empty polls, to look for stuck operations now and then.
    idle_polls: u32,
    /// Completions read, in order, as `ffi` reported them.
    events: VecDeque<Event>,
    /// Received buffers and errors, for `poll`, in arrival order.
    incoming: VecDeque<Result<RxBuf, TransportError>>,
    /// Packets put back in order, for `poll` before anything newer.
    ready: VecDeque<OfiPacket>,
    order: Order<OfiPacket>,
    regions: Vec<Option<std::sync::Arc<ffi::Region>>>,
    rma_in_flight: usize,
    /// Finished RMA operations, for `pop_rma_done`.
    rma_done: VecDeque<RmaDone>,
    stats: OfiStats,
}

impl OfiTransport {
    /// Step 1: opens an endpoint of `cfg.provider` as rank `me` of `size`.
    pub fn open(cfg: OfiConfig, me: usize, size: usize) -> Result<Self, TransportError> {
        if me >= size {
            return Err(TransportError::NoPeer { dest: me, size });
        }
        let bad = |what: String| TransportError::Config(format!("ofi {what}"));
        if cfg.max_payload == 0 || cfg.max_payload > (u32::MAX as usize) - 4096 {
            return Err(bad(format!(
                "max_payload {} must be between 1 B and 4 GiB",
                cfg.max_payload
            )));
        }
        if cfg.rx_buffers == 0 || cfg.queue_limit == 0 {
            return Err(bad(format!(
                "rx_buffers ({}) and queue_limit ({}) must be at least 1",
                cfg.rx_buffers, cfg.queue_limit
            )));
        }
        if u32::try_from(size).is_err() {
            return Err(bad(format!("job size {size} does not fit in 32 bits")));
        }
        if cfg.reorder_window == 0 || cfg.reorder_window > 1 << 20 {
            return Err(bad(format!(
                "reorder_window {} must be between 1 and 1048576 packets",
                cfg.reorder_window
            )));
        }
        let buf_size = HEADER_LEN + META_MAX + cfg.max_payload;
        let mut ep = Endpoint::open(&OpenParams {
            provider: &cfg.provider,
            node: cfg.node.as_deref(),
            domain: cfg.domain.as_deref(),
            rx_count: cfg.rx_buffers,
            tx_count: cfg.queue_limit,
            buf_size,
            npeers: size,
            want_rma: cfg.rma,
            want_wait: cfg.wait,
        })
        .map_err(|f| open_error(&cfg, f))?;
        let name = ep.name().map_err(|f| {
            ofi_error(
                format!("reading the name of our {} endpoint", cfg.provider),
                f,
                "the provider could not say its own address",
            )
        })?;
        Ok(OfiTransport {
            ep,
            me,
            size,
            name,
            connected: vec![false; size],
            lost: vec![None; size],
            next_seq: vec![0; size],
            windows: Windows::new(size),
            slot_op: vec![Op::Rma(0, 0); cfg.queue_limit],
            slot_since: vec![Instant::now(); cfg.queue_limit],
            stalled_since: vec![None; size],
            idle_polls: 0,
            events: VecDeque::new(),
            incoming: VecDeque::new(),
            ready: VecDeque::new(),
            order: Order::new(size, cfg.reorder_window),
            regions: Vec::new(),
            rma_in_flight: 0,
            rma_done: VecDeque::new(),
            stats: OfiStats::default(),
            cfg,
        })
    }

    /// This endpoint's rank.
    pub fn rank(&self) -> usize {
        self.me
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The provider actually used (e.g. `tcp;ofi_rxm`), its fabric and domain.
    pub fn provider(&self) -> (&str, &str, &str) {
        let g = self.ep.granted();
        (&g.provider, &g.fabric, &g.domain)
    }

    /// Largest packet (header, metadata and payload) sent by `fi_inject`.
    pub fn inject_size(&self) -> usize {
        self.ep.granted().inject_size
    }

    /// Why `peer` is lost, if a send or RMA operation to it failed.
    pub fn peer_lost(&self, peer: usize) -> Option<&str> {
        self.lost.get(peer)?.as_deref()
    }

    /// Counters since `open`.
    pub fn stats(&self) -> OfiStats {
        OfiStats {
            reordered: self.order.reordered,
            held_max: self.order.held_max,
            ..self.stats
        }
    }

    /// Reads completions (driving the provider's progress) without returning packets;
    /// arrivals wait for [`Messaging::poll`]. Returns how many completions were read.
    pub fn progress(&mut self) -> Result<usize, TransportError> {
        let n = self.ep.progress(&mut self.events).map_err(|f| {
            ofi_error(
                "reading the completion queue".into(),
                f,
                "the provider failed; the endpoint is unusable",
            )
        })?;
        while let Some(ev) = self.events.pop_front() {
            match ev {
                Event::Recv(buf) => self.incoming.push_back(Ok(buf)),
                Event::RecvFailed(f) => self.incoming.push_back(Err(recv_error(f))),
                Event::RmaDone(slot, bytes) => {
                    if let Op::Rma(peer, tag) = self.slot_op[slot as usize] {
                        self.rma_in_flight -= 1;
                        let result = Ok(());
                        self.rma_done.push_back(RmaDone {
                            tag,
                            peer,
                            result,
                            bytes,
                        });
                    }
                }
                Event::SendDone(slot) => {
                    if let Op::Send(peer, seq) = self.slot_op[slot as usize] {
                        self.windows.completed(peer, seq);
                    }
                }
                Event::OpFailed(slot, f, bytes) => {
                    let (peer, what) = match self.slot_op[slot as usize] {
                        Op::Send(p, seq) => {
                            self.windows.completed(p, seq);
                            (p, "a send")
                        }
                        Op::Rma(p, _) => {
                            self.rma_in_flight -= 1;
                            (p, "an RMA operation")
                        }
                    };
                    let why = format!("{what} to it failed: {}", f.text);
                    self.lose(peer, why.clone());
                    if let Op::Rma(_, tag) = self.slot_op[slot as usize] {
                        let result = Err(TransportError::PeerLost { peer, why });
                        self.rma_done.push_back(RmaDone {
                            tag,
                            peer,
                            result,
                            bytes,
                        });
                    }
                }
                Event::Other(f) => self.incoming.push_back(Err(ofi_error(
                    "an operation".into(),
                    f,
                    "unexpected completion error",
                ))),
            }
        }
        Ok(n)
    }
}

impl Messaging for OfiTransport {
    type Packet = OfiPacket;

    fn max_payload(&self) -> usize {
        self.cfg.max_payload
    }

    #[inline]
    fn try_send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        self.send_packet(dest, meta, payload)
    }

    #[inline]
    fn poll(&mut self) -> Result<Option<OfiPacket>, TransportError> {
        self.next_packet()
    }
}

impl Drop for OfiTransport {
    fn drop(&mut self) {
        let deadline = Instant::now() + self.cfg.linger;
        let pending = |t: &Self| {
            t.ep.in_flight()
                .filter(|&s| t.lost[t.op_peer(s)].is_none())
                .count()
        };
        while pending(self) > 0 && Instant::now() < deadline {
            if self.ep.progress(&mut self.events).is_err() {
                break;
            }
            self.events.clear();
        }
        let left = pending(self);
        if left > 0 {
            tracing::warn!(
                rank = self.me,
                "ofi: closing with {left} operations still in flight after {:?}; their \
                 peers may miss them",
                self.cfg.linger
            );
        }
    }
}
