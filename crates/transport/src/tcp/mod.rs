//! `tcp`: the transport between hosts when nothing faster is there.
//!
//! Wire-up (the core drives it, with the launcher's key-value store and fences):
//! 1. [`TcpTransport::listen`] binds a listener on `(bind, any port)` and starts the
//!    transport's one progress thread; [`TcpTransport::local_addr`] is what the core
//!    publishes for the peers.
//! 2. After a job-wide fence, [`TcpTransport::connect`] gets every peer's address
//!    (`None` for peers reached another way, and for ourselves). Each pair gets one
//!    connection: the lower rank dials the higher one and they exchange hellos
//!    (`conn.rs`); the call returns once every expected connection is up, or
//!    fails after `connect_timeout` naming the missing rank.
//!
//! Sending a packet to a peer (the caller's thread, never blocking; see `tx.rs`):
//! 1. Nothing queued for that peer → header, metadata and payload go out in one
//!    vectored write; what the socket did not take is queued.
//! 2. Bytes queued → the packet joins the queue while the queue stays within
//!    `queue_limit`, otherwise [`SendStatus::NoCredit`]: the caller polls (making
//!    progress on its own receives) and retries: credit-based flow control.
//! 3. The progress thread, the next send, or the owner's poll while it holds the
//!    connection (below) drains the queue when the socket is writable. Per-pair order
//!    holds because each pair has one stream and one queue.
//! 4. A packet up to `max_payload` (16 MiB by default) is one frame: the receiver
//!    reads it into one recycled buffer and the core uses it in place.
//!
//! Receiving (unified polling: the progress thread deposits into memory the poll loop
//! reads; see `progress.rs`, `rx.rs` and `handoff.rs`):
//! 1. The progress thread sleeps in epoll; on arrival it reads whole frames (lengths
//!    checked before anything is allocated; large bodies straight into recycled
//!    buffers) and deposits them in the inbox.
//! 2. [`Messaging::poll`] takes from the inbox: when it is empty that is one atomic
//!    load, about what polling shared memory costs.
//! 3. A connection the owner sent on or received from is *held* by the owner for
//!    `hot_for` after its last traffic (`handoff.rs`; at most four at once): a poll
//!    that finds the inbox empty reads it directly with a non-blocking `recv` (one
//!    `recv` per held connection when nothing came), and epoll stops waking the
//!    progress thread for it. That saves the thread's wake-up and the hop through the
//!    inbox on every arrival, the difference between twice a raw socket's latency and
//!    less than it. The handoff and its rules (one reader at a time, order kept,
//!    nothing stranded; the thread takes connections back from an owner that stopped
//!    polling) are in `handoff.rs`.
//! 4. The inbox is bounded (`recv_limit`): past it, the progress thread stops reading
//!    and TCP's window stops the sender, whose queue fills, whose sends get `NoCredit`.
//! 5. [`TcpTransport::park`] lets a waiting owner sleep in `poll(2)` until something
//!    may have arrived (`park.rs`); the core decides when (`NF_PARK_US`).
//!
//! Faults (`faults.rs`):
//! 1. A connection that closes without a goodbye, is reset, times out (`dead_after`)
//!    or carries a malformed frame is closed; `poll` returns one
//!    [`TransportError::PeerLost`] for it after the packets that arrived before, and
//!    every later send to that rank fails with the same reason. Nothing hangs.
//! 2. A connection to the listener that does not complete a valid hello within
//!    `hello_timeout` is closed with a warning naming the remote address and the
//!    reason; the listener keeps serving.
//!
//! Shutdown (dropping the transport):
//! 1. A goodbye frame is queued behind each peer's traffic; the queues are flushed for
//!    at most `linger`, then each connection is shut for writing. A peer that reads
//!    the goodbye marks us [`PeerState::Left`]: no error, since leaving is normal
//!    (a caller waiting for something from a peer checks [`TcpTransport::peer_state`]).
//! 2. The progress thread is told to stop, woken, and joined (bounded wait).
//! 3. The sockets close. [`TcpTransport::abort`] skips step 1, as a crash would.
//!
//! Files (the same names as `shm/` and `ofi/` for the same jobs):
//!
//! | file | job |
//! |---|---|
//! | `mod.rs` | [`TcpTransport`], [`TcpConfig`], the [`Messaging`] impl, shutdown |
//! | `conn.rs` | wire-up: [`TcpTransport::connect`], dialling, the hello exchange, socket options |
//! | `tx.rs` | sending side: vectored writes, the bounded per-peer queue |
//! | `rx.rs` | receiving side: cutting frames out of the stream, the packet, recycled buffers |
//! | `wire.rs` | wire format: hello and frame header, their checks |
//! | `faults.rs` | peer loss, goodbyes and malformed frames |
//! | `progress.rs` | the progress thread (epoll): accepting, reading, draining queues |
//! | `handoff.rs` | who reads a connection: the progress thread or the polling owner |
//! | `inbox.rs` | where the progress thread leaves arrivals for `poll` |
//! | `park.rs` | sleeping in `poll(2)` until something may have arrived |
//! | `sync.rs` | the locks and the handoff's atomics: std's, or loom's when model-checking (`loom_tests.rs`) |

mod conn;
mod faults;
mod handoff;
mod inbox;
mod park;
mod progress;
mod rx;
mod sync;
mod tx;
pub mod wire;

#[cfg(all(test, loom))]
mod loom_tests;

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::TransportError;
use crate::{Messaging, SendStatus};
pub use conn::tune;
use handoff::Held;
use inbox::{Arrival, Inbox};
use rx::Pool;
pub use rx::TcpPacket;
use sync::{lock, Mutex};
use tx::{Link, Peer};
use wire::Hello;

/// Settings of the tcp transport (the core fills them from `NF_TCP_*`).
#[derive(Debug, Clone)]
pub struct TcpConfig {
    /// Address to listen on: an interface of this host that the peers can reach (not
    /// a wildcard such as 0.0.0.0: the listener's address is what peers dial).
    pub bind: IpAddr,
    /// The job cookie: connections presenting another one are refused.
    pub cookie: u64,
    /// Largest payload of one packet; every rank must use the same value. A message
    /// up to this size crosses as one frame, read into one recycled buffer and used
    /// by the core in place, without the copy that reassembling fragments costs.
    pub max_payload: usize,
    /// Bytes queued per peer before sends to it get `NoCredit`.
    pub queue_limit: usize,
    /// Bytes of arrived packets held for `poll` before the progress thread stops
    /// reading (the receiver-side bound).
    pub recv_limit: usize,
    /// How long wire-up may take: dialling, hellos and waiting for lower ranks.
    pub connect_timeout: Duration,
    /// How long an accepted connection may take to send its hello.
    pub hello_timeout: Duration,
    /// A peer that stops acknowledging (host down, link cut) is lost after about this.
    pub dead_after: Duration,
    /// How long dropping the transport waits to flush queued packets and goodbyes.
    pub linger: Duration,
    /// How long after its last traffic a connection stays read directly by the
    /// owner's polls (`handoff.rs`); zero leaves every arrival to the progress thread.
    pub hot_for: Duration,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            cookie: 0,
            max_payload: 16 << 20,
            queue_limit: 4 << 20,
            recv_limit: 64 << 20,
            connect_timeout: Duration::from_secs(30),
            hello_timeout: Duration::from_secs(2),
            dead_after: Duration::from_secs(20),
            linger: Duration::from_secs(5),
            hot_for: Duration::from_micros(500),
        }
    }
}

/// What is known about the connection to a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    /// No connection: not yet wired up, or not reached over tcp.
    Unconnected,
    /// Connected.
    Up,
    /// The peer said goodbye: it left the job normally.
    Left,
    /// The connection broke.
    Lost,
}

/// How the packets received so far were read (for tests and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Packets the owner's polls read from their sockets themselves.
    pub direct: u64,
    /// Packets the progress thread read and left in the inbox.
    pub relayed: u64,
    /// Times the owner's poll slept for the rest of a large body (`rx.rs` step 6).
    pub body_waits: u64,
}

/// What the owner and the progress thread share.
pub(crate) struct Shared {
    pub(crate) cfg: TcpConfig,
    /// Our hello (rank, job size, cookie, max payload).
    pub(crate) hello: Hello,
    /// Every rank of the job, indexed by rank.
    pub(crate) peers: Vec<Peer>,
    pub(crate) inbox: Inbox,
    /// Buffers of large packets, recycled.
    pub(crate) pool: Arc<Pool>,
    /// Connections the owner dialled, for the progress thread to watch.
    pub(crate) dialled: Mutex<Vec<(usize, Arc<TcpStream>)>>,
    pub(crate) stop: AtomicBool,
    /// The progress thread's epoll, for either side to change what it watches.
    pub(crate) registry: mio::Registry,
    /// Set by the owner's polls while it holds connections; cleared by the progress
    /// thread at each tick (`handoff.rs`, rule 4).
    pub(crate) polled: AtomicBool,
    /// We said goodbye: a peer closing now is leaving too (`faults::settle`).
    pub(crate) leaving: AtomicBool,
}

/// One rank's endpoint of the tcp transport.
pub struct TcpTransport {
    sh: Arc<Shared>,
    waker: mio::Waker,
    thread: Option<JoinHandle<()>>,
    /// Arrivals taken from the inbox or read directly, not yet returned by `poll`.
    taken: VecDeque<Arrival>,
    /// Connections this owner holds and reads itself.
    held: Vec<Held>,
    /// Packets read by `read_held`.
    direct: u64,
    /// How long a poll may sleep for the rest of a large body (`rx.rs` step 6).
    body_wait: Option<Duration>,
    /// Sleeps it took.
    body_waits: u64,
    addr: SocketAddr,
    graceful: bool,
}

impl TcpTransport {
    /// Lets a poll that reads a large body sleep up to `wait` for the rest of it,
    /// instead of returning (`rx.rs` step 6); for a rank with nothing else to poll.
    pub fn set_body_wait(&mut self, wait: Option<Duration>) {
        self.body_wait = wait;
    }

    /// Step 1 of wire-up: listens on `(cfg.bind, any port)` and starts the progress
    /// thread, as rank `me` of `size`.
    pub fn listen(cfg: TcpConfig, me: usize, size: usize) -> Result<Self, TransportError> {
        if me >= size {
            return Err(TransportError::NoPeer { dest: me, size });
        }
        let too_big = |what: &str, v: usize| {
            TransportError::Config(format!("tcp {what} {v} does not fit in 32 bits"))
        };
        let size32 = u32::try_from(size).map_err(|_| too_big("job size", size))?;
        let max32 =
            u32::try_from(cfg.max_payload).map_err(|_| too_big("max_payload", cfg.max_payload))?;
        if cfg.max_payload == 0 {
            return Err(TransportError::Config(
                "tcp max_payload must be at least 1 B".into(),
            ));
        }
        if cfg.bind.is_unspecified() {
            return Err(TransportError::Config(format!(
                "tcp bind address {} is a wildcard; give the address of the interface \
                 peers should use",
                cfg.bind
            )));
        }
        let want = SocketAddr::new(cfg.bind, 0);
        let net = |what, addr, source| TransportError::Net { what, addr, source };
        let listener =
            TcpListener::bind(want).map_err(|e| net("binding a tcp listener on", want, e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| net("reading the address of the listener on", want, e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| net("configuring the listener on", addr, e))?;
        let (poll, waker, registry) = progress::prepare(&listener)
            .map_err(|e| net("creating an epoll instance for", addr, e))?;
        let hello = Hello {
            cookie: cfg.cookie,
            rank: me as u32,
            size: size32,
            max_payload: max32,
        };
        let sh = Arc::new(Shared {
            cfg,
            hello,
            peers: (0..size).map(Peer::new).collect(),
            inbox: Inbox::new().map_err(|e| net("creating the inbox bell of", addr, e))?,
            pool: Arc::default(),
            dialled: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            registry,
            polled: AtomicBool::new(false),
            leaving: AtomicBool::new(false),
        });
        let thread = progress::spawn(Arc::clone(&sh), poll, listener)
            .map_err(|e| net("starting the progress thread of", addr, e))?;
        Ok(TcpTransport {
            sh,
            waker,
            thread: Some(thread),
            taken: VecDeque::new(),
            held: Vec::new(),
            direct: 0,
            body_wait: None,
            body_waits: 0,
            addr,
            graceful: true,
        })
    }

    /// The address peers must connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// This endpoint's rank.
    pub fn rank(&self) -> usize {
        self.sh.hello.rank as usize
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> usize {
        self.sh.peers.len()
    }

    /// The state of the connection to `peer` (`Unconnected` for an unknown rank).
    pub fn peer_state(&self, peer: usize) -> PeerState {
        let Some(p) = self.sh.peers.get(peer) else {
            return PeerState::Unconnected;
        };
        match lock(&p.tx).link {
            Link::Down => PeerState::Unconnected,
            Link::Up(_) => PeerState::Up,
            Link::Left(_) => PeerState::Left,
            Link::Lost(_) => PeerState::Lost,
        }
    }

    /// How the packets received so far were read: by this owner's polls or by the
    /// progress thread.
    pub fn stats(&self) -> TcpStats {
        TcpStats {
            direct: self.direct,
            relayed: self.sh.inbox.relayed.load(Ordering::Relaxed),
            body_waits: self.body_waits,
        }
    }

    /// Closes every connection without the goodbye, as a crashed process would (the
    /// peers see their connection lost); for fault tests and emergency exits.
    pub fn abort(mut self) {
        self.graceful = false;
    }

    /// Moves the inbox's arrivals to `taken`, waking the progress thread if it
    /// stalled on a full inbox.
    fn take_inbox(&mut self) -> Result<(), TransportError> {
        if self.sh.inbox.take_all(&mut self.taken) {
            self.wake()?;
        }
        Ok(())
    }

    fn wake(&self) -> Result<(), TransportError> {
        self.waker.wake().map_err(|source| TransportError::Net {
            what: "waking the tcp progress thread of",
            addr: self.addr,
            source,
        })
    }
}

impl Messaging for TcpTransport {
    type Packet = TcpPacket;

    fn max_payload(&self) -> usize {
        self.sh.cfg.max_payload
    }

    fn try_send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        crate::error::check_packet(meta, payload, self.sh.cfg.max_payload)?;
        let Some(peer) = self.sh.peers.get(dest) else {
            return Err(TransportError::NoPeer {
                dest,
                size: self.size(),
            });
        };
        let status = peer.try_send(meta, payload, self.sh.cfg.queue_limit, &self.sh.inbox)?;
        self.expect(dest);
        Ok(status)
    }

    fn poll(&mut self) -> Result<Option<TcpPacket>, TransportError> {
        if self.taken.is_empty() {
            self.take_inbox()?;
            if self.taken.is_empty() && !self.held.is_empty() {
                self.read_held()?;
            }
        }
        let next = self.taken.pop_front().transpose()?;
        if let Some(p) = &next {
            self.expect(p.src);
        }
        Ok(next)
    }
}

impl Drop for TcpTransport {
    fn drop(&mut self) {
        let (peers, inbox) = (&self.sh.peers, &self.sh.inbox);
        if self.graceful {
            self.sh.leaving.store(true, Ordering::Release);
            for p in peers {
                p.say_goodbye(inbox);
            }
            let deadline = Instant::now() + self.sh.cfg.linger;
            loop {
                // Every peer is flushed each round (no short-circuit).
                let unflushed = peers.iter().filter(|p| !p.flush_queue(inbox)).count();
                if unflushed == 0 || Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            for p in peers {
                let left = p.queued();
                if left > 0 {
                    tracing::warn!(
                        peer = p.rank,
                        "tcp: closing with {left} bytes to rank {} unsent after waiting {:?} \
                         (it stopped reading); it will see the connection lost",
                        p.rank,
                        self.sh.cfg.linger
                    );
                }
                p.shutdown(Shutdown::Write);
            }
        }
        self.sh.stop.store(true, Ordering::Release);
        let _ = self.waker.wake();
        if let Some(thread) = self.thread.take() {
            let deadline = Instant::now() + Duration::from_secs(2);
            while !thread.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(1));
            }
            if thread.is_finished() {
                let _ = thread.join();
            } else {
                tracing::warn!(addr = %self.addr, "tcp: progress thread did not stop; leaving it");
            }
        }
        for p in peers {
            p.shutdown(Shutdown::Both);
        }
    }
}
