//! `shm`: the same-host transport (seed 002's SMT, lock-free shared-memory queues).
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
//! `fastbox.rs`.

pub mod channel;
pub mod cma;
mod copy;
mod fastbox;
pub mod layout;
mod rx;
pub mod segment;
mod tx;

use std::path::{Path, PathBuf};

use crate::error::TransportError;
use crate::{Messaging, SendStatus};
use layout::{Geometry, META_MAX};
use rx::Receiver;
pub use rx::ShmPacket;
use segment::Segment;
use tx::Peer;

/// Settings of the shm transport (the core fills them from `NF_SHM_*`).
#[derive(Debug, Clone)]
pub struct ShmConfig {
    /// Directory of the segments (a tmpfs).
    pub dir: PathBuf,
    /// Receive rings per receiver, 1 ..= local ranks (seed 002's M).
    pub rings: usize,
    /// Frames per ring, a power of two.
    pub frames: usize,
    /// Bytes per frame including its 64 B header.
    pub frame_size: usize,
}

impl Default for ShmConfig {
    fn default() -> Self {
        ShmConfig {
            dir: PathBuf::from("/dev/shm"),
            rings: 1,
            frames: 128,
            frame_size: 16 * 1024,
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
}

impl ShmTransport {
    /// Step 1 of wire-up: creates this rank's receive segment.
    pub fn create(
        cfg: &ShmConfig,
        job: &str,
        me: usize,
        size: usize,
    ) -> Result<Self, TransportError> {
        if me >= size {
            return Err(TransportError::NoPeer { dest: me, size });
        }
        let geo = Geometry {
            nrings: cfg.rings.min(size).max(1),
            frames: cfg.frames,
            frame_size: cfg.frame_size,
            nsenders: size,
        };
        let own = Segment::create(&segment::segment_path(&cfg.dir, job, me), geo, me)?;
        Ok(ShmTransport {
            me,
            size,
            rx: Receiver::new(own, me),
            peers: (0..size).map(|_| None).collect(),
            peer_pids: vec![std::process::id(); size],
            dir: cfg.dir.clone(),
            job: job.to_owned(),
        })
    }

    /// Step 2 of wire-up: maps every peer's segment (all must exist: fence first).
    pub fn connect(&mut self) -> Result<(), TransportError> {
        for peer in (0..self.size).filter(|&p| p != self.me) {
            let seg = Segment::open(
                &segment::segment_path(&self.dir, &self.job, peer),
                self.size,
            )?;
            let p = Peer::new(seg, self.me, peer);
            self.peer_pids[peer] = p.pid();
            self.peers[peer] = Some(p);
        }
        Ok(())
    }

    /// Step 3 of wire-up: removes our segment's name (all peers have mapped it).
    pub fn unlink_own(&self) -> Result<(), TransportError> {
        self.rx.segment().unlink()
    }

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
