//! `shm`: the same-host transport (lock-free shared-memory queues, after HPVM's).
//!
//! Wire-up is three steps, with a job-wide fence between each (the core drives it):
//! 1. [`ShmTransport::create`]: every rank creates and initialises its receive segment.
//! 2. [`ShmTransport::connect`]: every rank maps every peer's segment.
//! 3. [`ShmTransport::unlink_own`]: every rank removes its segment's name; the memory
//!    stays mapped, so a job killed with SIGKILL from here on leaves nothing behind.
//!
//! Each rank owns one receive segment (`layout.rs`): per sender a *fast box* of
//! 8-line slots for packets up to 496 B, whose ready word shares the first line with
//! the first 48 bytes (an 8 B message moves one cache line), and `M` rings of frame
//! indices with their frames for everything larger. The send steps are listed in
//! `tx.rs`, the poll steps in `rx.rs`, the in-order release of fast-box slots in
//! `fastbox.rs`. A receiver that does not busy-poll sleeps on its *doorbell*, a
//! futex word on its own line of its segment, and its senders wake it
//! (`doorbell.rs`).
//!
//! Files (the same names as `tcp/` and `ofi/` for the same jobs; shm has no
//! `wire.rs`, its wire format is the segment layout, and no `faults.rs`: a forged
//! entry is refused where `rx.rs` reads it, a dead job's segment reclaimed by
//! `segment.rs`):
//!
//! | file | job |
//! |---|---|
//! | `mod.rs` | [`ShmTransport`], [`ShmConfig`], the [`Messaging`] impl |
//! | `conn.rs` | wire-up: create, connect (map the peers' segments), unlink |
//! | `tx.rs` | sending side: fast box or ring frame, credit |
//! | `rx.rs` | receiving side: polling, the packet, releasing on drop |
//! | `layout.rs` | the segment's layout and every raw access to it (access rules 1–10) |
//! | `segment.rs` | segment files: create, open, unlink, reclaim stale ones |
//! | `fastbox.rs` | in-order release of fast-box slots |
//! | `doorbell.rs` | sleeping until a sender publishes, and waking the sleeper |
//! | `copy.rs` | small copies without `memcpy` |
//! | `sync.rs` | the protocol's atomics: std's, or loom's when model-checking (`loom_tests.rs`, `loom_channel.rs`, `loom_doorbell.rs`) |
//! | `cma.rs` | single-copy transfers (`process_vm_readv`) |
//! | `channel.rs` | [`channel::ByteChannel`], a byte stream over shared memory (9P): set-up, eventfds |
//! | `channel_ring.rs` | the byte channel's ring protocol: sending, receiving, sleeping and waking |

pub mod channel;
mod channel_ring;
pub mod cma;
mod conn;
mod copy;
mod doorbell;
mod fastbox;
pub mod layout;
mod rx;
pub mod segment;
mod sync;
mod tx;

#[cfg(all(test, loom))]
mod loom_channel;
#[cfg(all(test, loom))]
mod loom_doorbell;
#[cfg(all(test, loom))]
mod loom_tests;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::TransportError;
use crate::{Messaging, SendStatus};
use doorbell::{Kernel, Slept};
use layout::{Geometry, META_MAX};
use rx::Receiver;
pub use rx::ShmPacket;
use tx::Peer;

/// Settings of the shm transport (the core fills them from `NF_SHM_*`).
#[derive(Debug, Clone)]
pub struct ShmConfig {
    /// Directory of the segments (a tmpfs).
    pub dir: PathBuf,
    /// Receive rings per receiver, 1 ..= local ranks; sender `s` writes to ring
    /// `s mod rings`.
    pub rings: usize,
    /// Frames per ring, a power of two.
    pub frames: usize,
    /// Bytes per frame including its 64 B header; equal on every rank of a host.
    pub frame_size: usize,
    /// Largest packet (metadata + payload) this rank sends through a fast box,
    /// 0 ..= [`layout::FAST_DATA`]; larger ones go through the rings. 0 turns the fast
    /// boxes off. Sender-side only, so ranks need not agree.
    pub fast_limit: usize,
    /// This rank may sleep on its doorbell ([`ShmTransport::sleep`]), so its senders
    /// must ring it; false for a rank that busy-polls (its senders then skip the
    /// doorbell). Receiver-side, published in the segment, so ranks need not agree.
    pub sleeps: bool,
}

/// The default frame: 16 KiB of payload behind its one-line header, so that a 16 KiB
/// message, a size programs send often, fits one frame (with 16 KiB frames it took
/// two, and twice the time: 2.9 against 1.5 µs half round trip on the 2-core VM,
/// every other size within 2 %).
pub const DEFAULT_FRAME_SIZE: usize = 16 * 1024 + layout::CACHE_LINE;

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            dir: PathBuf::from("/dev/shm"),
            rings: 1,
            frames: 128,
            frame_size: DEFAULT_FRAME_SIZE,
            fast_limit: layout::FAST_DATA,
            sleeps: false,
        }
    }
}

/// One rank's endpoint of the shm transport.
pub struct ShmTransport {
    me: usize,
    size: usize,
    rx: Receiver,
    peers: Vec<Option<Peer>>,
    peer_pids: Vec<u32>,
    dir: PathBuf,
    job: String,
    fast_limit: usize,
    sleeps: bool,
    doorbell: DoorbellStats,
}

/// What the doorbell did at one endpoint, ever (for tests and benchmarks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DoorbellStats {
    /// Sleeps in the kernel (the re-check after arming found nothing).
    pub sleeps: u64,
    /// Sleeps a sender ended by ringing (the rest ended by timeout or signal).
    pub rung: u64,
    /// Times this endpoint woke a sleeping peer.
    pub rang: u64,
}

impl ShmTransport {
    /// This endpoint's local rank.
    pub fn local_rank(&self) -> usize {
        self.me
    }

    /// Number of local ranks.
    pub fn local_size(&self) -> usize {
        self.size
    }

    /// Process id of a peer (for single-copy reads and liveness checks).
    pub fn peer_pid(&self, dest: usize) -> Option<u32> {
        self.peer_pids.get(dest).copied()
    }

    /// Whether a peer's process still exists.
    pub fn peer_alive(&self, dest: usize) -> bool {
        self.peer_pid(dest).is_some_and(segment::pid_alive)
    }

    /// The geometry of our receive segment.
    pub fn geometry(&self) -> &Geometry {
        self.rx.geometry()
    }

    /// Directory where segments are created.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Whether this endpoint may sleep on its doorbell (`ShmConfig::sleeps`).
    pub fn sleeps(&self) -> bool {
        self.sleeps
    }

    /// Sleeps until a peer publishes a packet for us, at most `timeout` (see
    /// `doorbell.rs`); returns at once if one is waiting, or if this endpoint was not
    /// created to sleep (its senders would not ring). A signal also ends the sleep.
    pub fn sleep(&mut self, timeout: Duration) {
        if !self.sleeps {
            return;
        }
        let rx = &self.rx;
        let word = rx.segment().view().doorbell();
        match doorbell::sleep(word, || rx.pending(), timeout, &Kernel) {
            Slept::Pending => {}
            Slept::Slept { rung } => {
                self.doorbell.sleeps += 1;
                self.doorbell.rung += u64::from(rung);
            }
        }
    }

    /// What the doorbell did so far.
    pub fn doorbell_stats(&self) -> DoorbellStats {
        DoorbellStats {
            rang: self.peers.iter().flatten().map(|p| p.rang).sum(),
            ..self.doorbell
        }
    }
}

impl Messaging for ShmTransport {
    type Packet = ShmPacket;

    fn max_payload(&self) -> usize {
        self.rx.geometry().max_payload()
    }

    #[inline]
    fn try_send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        let Some(Some(peer)) = self.peers.get_mut(dest) else {
            return Err(TransportError::NoPeer {
                dest,
                size: self.size,
            });
        };
        if meta.len() > META_MAX {
            return Err(TransportError::TooLarge {
                len: meta.len(),
                max: META_MAX,
            });
        }
        if payload.len() > peer.max_payload() {
            return Err(TransportError::TooLarge {
                len: payload.len(),
                max: peer.max_payload(),
            });
        }
        peer.try_send(meta, payload)
    }

    #[inline(always)]
    fn poll(&mut self) -> Result<Option<ShmPacket>, TransportError> {
        self.rx.poll()
    }
}

/// Removes every segment of `job` (for launchers, after the job ended).
pub fn remove_job_segments(dir: &Path, job: &str) -> usize {
    segment::remove_job(dir, job)
}
