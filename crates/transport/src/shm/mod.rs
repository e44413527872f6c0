//! `shm`: the same-host transport (seed 002's SMT, lock-free shared-memory queues).
//!
//! Wire-up is three steps, with a job-wide fence between each (the core drives it):
//! 1. [`ShmTransport::create`]: every rank creates and initialises its receive segment.
//! 2. [`ShmTransport::connect`]: every rank maps every peer's segment.
//! 3. [`ShmTransport::unlink_own`]: every rank removes its segment's name; the memory
//!    stays mapped, so a job killed with SIGKILL from here on leaves nothing behind.
//!
//! Sending (to receiver `d`, from local rank `s`, ring `s mod M`):
//! 1. Check credit: frames held in `d` < our share; if not, re-read `d`'s credit line
//!    for `s`; still none → [`SendStatus::NoCredit`] (the caller polls and retries).
//! 2. Fetch-and-increment `free_head`, test-and-set that frame's `in_use`; retry on a
//!    frame in use (credit guarantees a free one exists).
//! 3. Copy header, metadata and payload into the frame.
//! 4. Fetch-and-increment `tail` for a ticket; store the frame index, then `seq`.
//!
//! Receiving polls the slot at each ring's private head: one cache line when empty.
//!
//! Small packets (metadata + payload ≤ 496 B) go through the pair's *fast box*
//! instead: a single-producer ring of 8-line slots whose ready word shares the first
//! line with the first 48 bytes, so an 8 B message moves one cache line.
//! To keep per-pair order across the two paths, a sender switches path
//! only when the other one is drained: to the fast box once the receiver has freed
//! all our frames, to the rings once all our fast slots are empty; until then a small
//! packet follows the ring, and a large one waits (`NoCredit`).

pub mod channel;
pub mod cma;
mod fastbox;
pub mod layout;
pub mod segment;

use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::atomic::Ordering;

use crate::error::TransportError;
use crate::{Messaging, Packet, SendStatus};
use fastbox::FastReleases;
use layout::{Geometry, FAST_DATA, FAST_SLOTS, META_MAX};
use segment::Segment;

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

/// Per-destination sender state, private to this process.
#[derive(Clone, Copy, Default)]
struct TxState {
    /// Packets sent to this peer, ever.
    sent: u64,
    /// Last value read from the peer's credit line for us.
    returned: u64,
    /// Packets we may have outstanding at the peer.
    credit: u64,
    /// Next fast-box ticket.
    fast_tail: u64,
    /// Last value read from the peer's `fast_released` for us.
    fast_released: u64,
    /// Whether our last packet went through the fast box.
    last_fast: bool,
}

impl TxState {
    /// Whether one more packet fits in our share of the peer's frames; re-reads the
    /// peer's credit line only when the cached count says no (it is a shared line).
    fn has_credit(&mut self, seg: &Segment, me: usize) -> bool {
        if self.sent - self.returned < self.credit {
            return true;
        }
        self.returned = seg.view().credit(me).returned.load(Ordering::Acquire);
        self.sent - self.returned < self.credit
    }

    /// Whether the receiver has freed every frame we sent it.
    fn frames_drained(&mut self, seg: &Segment, me: usize) -> bool {
        if self.sent != self.returned {
            self.returned = seg.view().credit(me).returned.load(Ordering::Acquire);
        }
        self.sent == self.returned
    }

    /// Whether fast-box ticket `fast_tail` may be written now.
    fn fast_slot_free(&mut self, seg: &Segment, me: usize) -> bool {
        let free = |t: &Self| t.fast_tail - t.fast_released < FAST_SLOTS as u64;
        if free(self) {
            return true;
        }
        self.fast_released = seg.view().credit(me).fast_released.load(Ordering::Acquire);
        free(self)
    }

    /// Whether the receiver has freed every fast-box packet we sent it.
    fn fast_drained(&mut self, seg: &Segment, me: usize) -> bool {
        if self.fast_tail != self.fast_released {
            self.fast_released = seg.view().credit(me).fast_released.load(Ordering::Acquire);
        }
        self.fast_tail == self.fast_released
    }
}

/// One rank's endpoint of the shm transport.
pub struct ShmTransport {
    me: usize,
    size: usize,
    own: Rc<Segment>,
    peers: Vec<Option<Segment>>,
    peer_pids: Vec<u32>,
    tx: Vec<TxState>,
    heads: Vec<u64>,
    next_ring: usize,
    fast_heads: Vec<u64>,
    fast_releases: Rc<FastReleases>,
    next_fast: usize,
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
            heads: vec![0; geo.nrings],
            own: Rc::new(own),
            peers: (0..size).map(|_| None).collect(),
            peer_pids: vec![std::process::id(); size],
            tx: vec![TxState::default(); size],
            next_ring: 0,
            fast_heads: vec![0; size],
            fast_releases: Rc::new(FastReleases::new(size)),
            next_fast: 0,
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
            let geo = *seg.view().geometry();
            self.peer_pids[peer] = seg.view().header().owner_pid;
            self.tx[peer] = TxState {
                credit: geo.credit_of(self.me),
                ..TxState::default()
            };
            self.peers[peer] = Some(seg);
        }
        Ok(())
    }

    /// Step 3 of wire-up: removes our segment's name (all peers have mapped it).
    pub fn unlink_own(&self) -> Result<(), TransportError> {
        self.own.unlink()
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
        self.own.view().geometry()
    }

    /// Directory where segments are created.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn poll_ring(&mut self, ring: usize) -> Result<Option<ShmPacket>, TransportError> {
        let view = *self.own.view();
        let head = self.heads[ring];
        let slot = view.slot(ring, head);
        if slot.seq.load(Ordering::Acquire) != head + 1 {
            return Ok(None);
        }
        let frame = slot.frame.load(Ordering::Relaxed) as usize;
        self.heads[ring] = head + 1;
        let geo = *view.geometry();
        if frame >= geo.frames {
            let why = format!("frame index {frame} beyond {} frames", geo.frames);
            return Err(TransportError::Corrupt {
                src: u32::MAX,
                ring,
                why,
            });
        }
        let (src, meta_len, payload_len) = view.read_frame_header(ring, frame);
        let why = if src as usize >= geo.nsenders || src as usize == self.me {
            Some(format!("sender {src} is not a peer"))
        } else if meta_len > META_MAX {
            Some(format!("metadata length {meta_len} > {META_MAX}"))
        } else if payload_len > geo.max_payload() {
            Some(format!(
                "payload length {payload_len} > {}",
                geo.max_payload()
            ))
        } else {
            None
        };
        if let Some(why) = why {
            // Give the frame back, but no credit: we cannot tell whose it was.
            view.in_use(ring, frame).store(0, Ordering::Release);
            return Err(TransportError::Corrupt { src, ring, why });
        }
        Ok(Some(ShmPacket {
            seg: Rc::clone(&self.own),
            at: At::Frame { ring, frame },
            src: src as usize,
            meta_len,
            payload_len,
        }))
    }

    fn poll_fast(&mut self, src: usize) -> Result<Option<ShmPacket>, TransportError> {
        let view = self.own.view();
        let ticket = self.fast_heads[src];
        let seq = view.fast_seq(src, ticket);
        if seq.load(Ordering::Acquire) != ticket + 1 {
            return Ok(None);
        }
        self.fast_heads[src] = ticket + 1;
        // SAFETY: we acquired seq == ticket + 1 (layout rule 6); the slices are dropped
        // before this function returns, only their lengths are kept.
        let Some((meta, payload)) = (unsafe { view.read_fast(src, ticket) }) else {
            self.fast_releases.release(view, src, ticket);
            let why = "fast-box slot lengths exceed the slot".to_string();
            return Err(TransportError::Corrupt {
                src: src as u32,
                ring: usize::MAX,
                why,
            });
        };
        let (meta_len, payload_len) = (meta.len(), payload.len());
        Ok(Some(ShmPacket {
            seg: Rc::clone(&self.own),
            at: At::Fast {
                ticket,
                releases: Rc::clone(&self.fast_releases),
            },
            src,
            meta_len,
            payload_len,
        }))
    }
}

impl Messaging for ShmTransport {
    type Packet = ShmPacket;

    fn max_payload(&self) -> usize {
        self.own.view().geometry().max_payload()
    }

    fn try_send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        if meta.len() > META_MAX {
            return Err(TransportError::TooLarge {
                len: meta.len(),
                max: META_MAX,
            });
        }
        let max = self.max_payload();
        if payload.len() > max {
            return Err(TransportError::TooLarge {
                len: payload.len(),
                max,
            });
        }
        let Some(Some(seg)) = self.peers.get(dest) else {
            return Err(TransportError::NoPeer {
                dest,
                size: self.size,
            });
        };
        let me = self.me;
        let tx = &mut self.tx[dest];
        if meta.len() + payload.len() <= FAST_DATA
            && (tx.last_fast || tx.frames_drained(seg, me))
            && tx.fast_slot_free(seg, me)
        {
            seg.view().write_fast(me, tx.fast_tail, meta, payload);
            seg.view()
                .fast_seq(me, tx.fast_tail)
                .store(tx.fast_tail + 1, Ordering::Release);
            tx.fast_tail += 1;
            tx.last_fast = true;
            return Ok(SendStatus::Sent);
        }
        if tx.last_fast && !tx.fast_drained(seg, me) {
            return Ok(SendStatus::NoCredit);
        }
        tx.last_fast = false;
        if !tx.has_credit(seg, me) {
            return Ok(SendStatus::NoCredit);
        }
        let view = seg.view();
        let geo = view.geometry();
        let ring = geo.ring_of(self.me);
        let ctl = view.control(ring);
        let mask = (geo.frames - 1) as u64;
        let mut tries = 0usize;
        let frame = loop {
            let f = (ctl.free_head.fetch_add(1, Ordering::Relaxed) & mask) as usize;
            if view.in_use(ring, f).swap(1, Ordering::Acquire) == 0 {
                break f;
            }
            tries += 1;
            if tries > 64 * geo.frames {
                // Credit says a frame is free; if none turns up the peer broke the protocol.
                return Err(TransportError::Corrupt {
                    src: self.me as u32,
                    ring,
                    why: format!("no free frame at local rank {dest} despite credit"),
                });
            }
            std::hint::spin_loop();
        };
        view.write_frame(ring, frame, self.me as u32, meta, payload);
        let ticket = ctl.tail.fetch_add(1, Ordering::Relaxed);
        let slot = view.slot(ring, ticket);
        slot.frame.store(frame as u32, Ordering::Relaxed);
        slot.seq.store(ticket + 1, Ordering::Release);
        self.tx[dest].sent += 1;
        Ok(SendStatus::Sent)
    }

    fn poll(&mut self) -> Result<Option<ShmPacket>, TransportError> {
        let peers = self.size;
        for i in 0..peers {
            let src = (self.next_fast + i) % peers;
            if src == self.me {
                continue;
            }
            if let Some(p) = self.poll_fast(src)? {
                self.next_fast = (src + 1) % peers;
                return Ok(Some(p));
            }
        }
        let n = self.heads.len();
        for i in 0..n {
            let ring = (self.next_ring + i) % n;
            if let Some(p) = self.poll_ring(ring)? {
                self.next_ring = (ring + 1) % n;
                return Ok(Some(p));
            }
        }
        // Idle: let senders see the fast-box slots we freed (fastbox.rs, rule 2).
        self.fast_releases.publish(self.own.view());
        Ok(None)
    }
}

/// Where a received packet sits in our segment.
enum At {
    Frame {
        ring: usize,
        frame: usize,
    },
    Fast {
        ticket: u64,
        releases: Rc<FastReleases>,
    },
}

/// A received packet; its frame or fast-box slot is ours until this is dropped,
/// which frees it (and, for a frame, returns the sender's credit).
pub struct ShmPacket {
    seg: Rc<Segment>,
    at: At,
    src: usize,
    meta_len: usize,
    payload_len: usize,
}

impl Packet for ShmPacket {
    fn src(&self) -> usize {
        self.src
    }

    fn meta(&self) -> &[u8] {
        let view = self.seg.view();
        // SAFETY: we own the frame or slot until drop (layout rules 4 and 6), the Rc
        // keeps the mapping alive for the borrow, and the lengths were checked at poll.
        unsafe {
            match self.at {
                At::Frame { ring, frame } => view.frame_meta(ring, frame, self.meta_len),
                At::Fast { ticket, .. } => {
                    view.read_fast(self.src, ticket).map_or(&[][..], |(m, _)| m)
                }
            }
        }
    }

    fn payload(&self) -> &[u8] {
        let view = self.seg.view();
        // SAFETY: as in `meta`.
        unsafe {
            match self.at {
                At::Frame { ring, frame } => view.frame_payload(ring, frame, self.payload_len),
                At::Fast { ticket, .. } => {
                    view.read_fast(self.src, ticket).map_or(&[][..], |(_, p)| p)
                }
            }
        }
    }
}

impl Drop for ShmPacket {
    fn drop(&mut self) {
        let view = self.seg.view();
        match &self.at {
            At::Frame { ring, frame } => {
                view.in_use(*ring, *frame).store(0, Ordering::Release);
                view.credit(self.src)
                    .returned
                    .fetch_add(1, Ordering::Release);
            }
            At::Fast { ticket, releases } => releases.release(view, self.src, *ticket),
        }
    }
}

/// Removes every segment of `job` (for launchers, after the job ended).
pub fn remove_job_segments(dir: &Path, job: &str) -> usize {
    segment::remove_job(dir, job)
}
