//! The shared-memory layout of one receiver's segment, and every raw access to it.
//!
//! Each rank owns one segment: the frames other ranks write into and the rings that
//! tell it where to look (lock-free queues, after HPVM's shared-memory transport).
//! Everything in it is an array indexed by integers — no pointers live in shared
//! memory, because every process maps the segment at a different address.
//!
//! ```text
//!  offset 0      +-----------------------------+
//!                | SegmentHeader   (1 line)    |  magic (published last), version, geometry, owner pid, sleeps
//!  64            +-----------------------------+
//!                | DoorbellLine    (1 line)    |  the owner's futex word: armed while it may sleep
//!  128           +-----------------------------+
//!                | CreditLine[nsenders]        |  one line per sender: frames the receiver gave back
//!                +-----------------------------+
//!                | FastSlot[nsenders][FAST]    |  per sender a single-producer box of 8-line slots
//!                +-----------------------------+
//!  ring r        | RingControl     (2 lines)   |  free_head (senders F&I) | tail (senders F&I)
//!                | Slot[frames]    (16 B each) |  seq (ready flag, = ticket + 1) and frame index
//!                | Frame[frames]               |  FrameHeader (1 line: in-use flag, src, lengths, meta)
//!                |                             |  + payload (frame_size - 64 bytes)
//!                +-----------------------------+  … repeated for each of `nrings` rings
//! ```
//!
//! Access rules (who writes what):
//! 1. `SegmentHeader` is written only by the owner before `magic` is stored (Release);
//!    readers load `magic` (Acquire) first and never write the header.
//! 2. `CreditLine[s]` is written only by the owner (the receiver), read by sender `s`
//!    only when its cached copy says it is out of frames or fast slots.
//! 3. `free_head` and `tail` are fetch-and-incremented by senders only; the receiver
//!    keeps its ring head in private memory (it is the only consumer).
//! 4. A frame belongs to whoever flipped its `in_use` flag 0 → 1 (a sender), until the
//!    slot naming it is published; then to the receiver until it stores `in_use = 0`.
//!    Only the current owner reads or writes the frame's header fields and payload.
//! 5. A slot is written by the sender holding its ticket; `seq` is stored last (Release)
//!    and is what the receiver polls: an empty poll reads exactly this one cache line.
//! 6. Fast box `[s]` is written only by sender `s`: ticket `t` goes to slot
//!    `t mod FAST_SLOTS`, allowed once `CreditLine[s].fast_released > t - FAST_SLOTS`;
//!    `seq = t + 1` is stored last. The receiver reads slot `t` once `seq == t + 1`
//!    and never writes the box: it publishes `fast_released` (tickets freed, in
//!    order) on its credit line. A small packet moves one cache line, one way.
//! 11. `DoorbellLine.armed` is set to 1 only by the owner, about to sleep on it
//!     (`doorbell.rs`), and cleared by the owner when it wakes or by a sender that
//!     rings it; senders touch it only when the header's `sleeps` says the owner may
//!     sleep, so a busy-polling job never reads the line (it has a line of its own
//!     so that arming never invalidates a line senders read for anything else).
//!
//! Credits (frames per sender per ring, summed ≤ frames) guarantee that a sender with
//! credit always finds a free frame, and that the ring never holds more tickets than
//! slots, so the slot of ticket `t` is free again once ticket `t - frames` was read.

use super::copy::copy_small;
use super::sync::{AtomicU32, AtomicU64, Ordering};

/// Identifies a ninefold shm segment ("nf-shm", then format byte 1).
pub const MAGIC: u64 = u64::from_le_bytes(*b"nf-shm\0\x01");
/// Layout version; bump on any change to the structures below.
pub const VERSION: u32 = 2;
/// Cache line size assumed for padding (x86-64 and most arm64 parts).
pub const CACHE_LINE: usize = 64;
/// Bytes of protocol metadata a frame carries besides its payload.
pub const META_MAX: usize = 48;
/// Size of the header at the start of each frame (one cache line; loom's atomics
/// make it larger in model-checking builds, hence the size of the type).
pub const FRAME_HEADER: usize = std::mem::size_of::<FrameHeader>();
/// Slots per fast box (per sender, per receiver); a power of two.
pub const FAST_SLOTS: usize = 16;
/// Bytes of metadata plus payload a fast-box slot carries.
pub const FAST_DATA: usize = FAST_SLOT_LINES * CACHE_LINE - 16;
/// Cache lines per fast-box slot. The ready word and the first 48 data bytes share
/// line 0, so an 8 B message touches one line; up to ~490 B avoid the rings.
pub const FAST_SLOT_LINES: usize = 8;

/// The first cache line of a segment.
#[repr(C, align(64))]
pub struct SegmentHeader {
    /// [`MAGIC`] once the segment is initialised; zero before.
    pub magic: AtomicU64,
    /// Total length of the segment in bytes.
    pub total_len: u64,
    /// [`VERSION`] of the layout.
    pub version: u32,
    /// Number of receive rings.
    pub nrings: u32,
    /// Frames (and slots) per ring; a power of two.
    pub frames: u32,
    /// Bytes per frame including its header; a multiple of the cache line.
    pub frame_size: u32,
    /// Number of senders (local ranks) that may write to this segment.
    pub nsenders: u32,
    /// Process id of the owner, for stale-segment detection and single-copy reads.
    pub owner_pid: u32,
    /// Local rank of the owner.
    pub owner_rank: u32,
    /// 1 if the owner may sleep on its doorbell (senders must ring it), else 0.
    pub sleeps: u32,
    _reserved: [u32; 4],
}

/// The owner's doorbell, alone on its cache line (rule 11, `doorbell.rs`).
#[repr(C, align(64))]
pub struct DoorbellLine {
    /// 1 while the owner is armed to sleep (the futex word), 0 otherwise.
    pub armed: AtomicU32,
}

/// One sender's credit return counter, alone on its cache line.
#[repr(C, align(64))]
pub struct CreditLine {
    /// Frames from this sender the receiver has consumed and freed, ever.
    pub returned: AtomicU64,
    /// Fast-box tickets of this sender the receiver has freed, in order, ever.
    pub fast_released: AtomicU64,
}

/// One fast-box slot: a whole small packet, its ready word on the first line.
#[repr(C, align(64))]
pub struct FastSlot {
    /// `ticket + 1` of the packet in it; stored last by the sender (Release).
    pub seq: AtomicU64,
    /// Valid metadata bytes at the start of `data`.
    pub meta_len: u8,
    _pad0: u8,
    /// Valid payload bytes after the metadata.
    pub payload_len: u16,
    _pad: [u8; 4],
    /// Metadata, then payload.
    pub data: [u8; FAST_DATA],
}

/// Free-list head and ring tail, on separate lines because all senders hit both.
#[repr(C, align(64))]
pub struct RingControl {
    /// Clock hand over the frames: senders fetch-and-increment it to pick a frame.
    pub free_head: AtomicU64,
    _pad0: [u8; CACHE_LINE - 8],
    /// Next ticket in the receive ring: senders fetch-and-increment it.
    pub tail: AtomicU64,
    _pad1: [u8; CACHE_LINE - 8],
}

/// One entry of a receive ring.
#[repr(C)]
pub struct Slot {
    /// `ticket + 1` once the entry for `ticket` is published; the ready flag.
    pub seq: AtomicU64,
    /// Index of the frame holding the packet.
    pub frame: AtomicU32,
    _pad: u32,
}

/// The first cache line of a frame.
#[repr(C, align(64))]
pub struct FrameHeader {
    /// 1 while a sender or the receiver owns the frame, 0 when free.
    pub in_use: AtomicU32,
    /// Local rank of the sender.
    pub src: u32,
    /// Valid bytes in `meta`.
    pub meta_len: u16,
    _pad: u16,
    /// Valid bytes of payload after the header.
    pub payload_len: u32,
    /// Protocol metadata of the layer above (opaque here).
    pub meta: [u8; META_MAX],
}

const _: () = assert!(std::mem::size_of::<SegmentHeader>() == CACHE_LINE);
const _: () = assert!(std::mem::size_of::<CreditLine>() == CACHE_LINE);
const _: () = assert!(std::mem::size_of::<DoorbellLine>() == CACHE_LINE);
const _: () = assert!(std::mem::size_of::<RingControl>() == 2 * CACHE_LINE);
// loom's atomics are word-sized handles: under `cfg(loom)` a slot and a frame header
// grow, and every offset follows from the types' sizes.
#[cfg(not(all(test, loom)))]
const _: () = assert!(std::mem::size_of::<Slot>() == 16);
const _: () = assert!(std::mem::size_of::<FastSlot>() == FAST_SLOT_LINES * CACHE_LINE);
const _: () = assert!(FAST_SLOTS.is_power_of_two());
const FAST_SLOT_BYTES: usize = FAST_SLOT_LINES * CACHE_LINE;

#[cfg(not(all(test, loom)))]
const _: () = assert!(FRAME_HEADER == CACHE_LINE);

/// The geometry of a segment: everything needed to compute offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Number of receive rings (1 ..= nsenders).
    pub nrings: usize,
    /// Frames per ring, a power of two.
    pub frames: usize,
    /// Bytes per frame including the header, a multiple of [`CACHE_LINE`].
    pub frame_size: usize,
    /// Number of local ranks that may send to the owner.
    pub nsenders: usize,
}

impl Geometry {
    fn doorbell_offset(&self) -> usize {
        CACHE_LINE
    }

    fn credits_offset(&self) -> usize {
        self.doorbell_offset() + CACHE_LINE
    }

    fn fast_offset(&self) -> usize {
        self.credits_offset() + self.nsenders * CACHE_LINE
    }

    fn ring_offset(&self, ring: usize) -> usize {
        self.fast_offset() + self.nsenders * FAST_SLOTS * FAST_SLOT_BYTES + ring * self.ring_len()
    }

    fn slots_len(&self) -> usize {
        (self.frames * std::mem::size_of::<Slot>()).next_multiple_of(CACHE_LINE)
    }

    fn ring_len(&self) -> usize {
        std::mem::size_of::<RingControl>() + self.slots_len() + self.frames * self.frame_size
    }

    /// Total bytes of a segment with this geometry.
    pub fn total_len(&self) -> usize {
        self.ring_offset(self.nrings)
    }

    /// Largest payload one frame carries.
    pub fn max_payload(&self) -> usize {
        self.frame_size - FRAME_HEADER
    }

    /// The ring that sender `src` writes to: `src mod rings`, so `rings` receive rings
    /// trade polling cost (one ring per sender) against contention (one for all).
    pub fn ring_of(&self, src: usize) -> usize {
        src % self.nrings
    }

    /// Frames sender `src` may hold at once in its ring: the ring's frames split evenly.
    pub fn credit_of(&self, src: usize) -> u64 {
        let ring = self.ring_of(src);
        let senders_on_ring = (self.nsenders - ring).div_ceil(self.nrings);
        (self.frames / senders_on_ring.max(1)) as u64
    }

    /// Checks the invariants the access code relies on.
    pub fn validate(&self) -> Result<(), String> {
        if self.nsenders == 0 {
            return Err("nsenders must be at least 1".into());
        }
        if self.nrings == 0 || self.nrings > self.nsenders {
            return Err(format!(
                "rings per receiver must be 1..={} (one per sender at most), got {}",
                self.nsenders, self.nrings
            ));
        }
        check_frames(self.frames)?;
        let senders_on_ring0 = self.nsenders.div_ceil(self.nrings);
        if self.frames < senders_on_ring0 {
            return Err(format!(
                "{} frames per ring cannot give each of {} senders a credit",
                self.frames, senders_on_ring0
            ));
        }
        check_frame_size(self.frame_size)
    }
}

/// That `frames` can be the frames per ring: a power of two ≤ 2^20 (what
/// [`Geometry::validate`] requires, for settings checked before any segment exists).
pub fn check_frames(frames: usize) -> Result<(), String> {
    if !frames.is_power_of_two() || frames > (1 << 20) {
        return Err(format!(
            "frames per ring must be a power of two ≤ 2^20, got {frames}"
        ));
    }
    Ok(())
}

/// That `frame_size` can be the bytes per frame: a multiple of [`CACHE_LINE`] with room
/// for the header and one line of payload, below 4 GiB (what [`Geometry::validate`]
/// requires).
pub fn check_frame_size(frame_size: usize) -> Result<(), String> {
    if !frame_size.is_multiple_of(CACHE_LINE)
        || frame_size < FRAME_HEADER + CACHE_LINE
        || frame_size > u32::MAX as usize
    {
        return Err(format!(
            "frame size must be a multiple of {CACHE_LINE} B of at least {} B, got {frame_size}",
            FRAME_HEADER + CACHE_LINE,
        ));
    }
    Ok(())
}

/// Typed access to a mapped segment. Holds a raw base pointer; the owner of the
/// mapping (see `segment.rs`) guarantees it outlives every `View`.
#[derive(Clone, Copy)]
pub struct View {
    base: *mut u8,
    geo: Geometry,
}

impl View {
    /// Wraps a mapping of at least `geo.total_len()` bytes, aligned to a page.
    ///
    /// # Safety
    /// `base` must point to a live, page-aligned, shared mapping of at least
    /// `geo.total_len()` bytes that stays mapped while this view (or a copy) is used.
    pub unsafe fn new(base: *mut u8, geo: Geometry) -> View {
        View { base, geo }
    }

    /// The geometry this view was built with.
    pub fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// The segment header.
    pub fn header(&self) -> &SegmentHeader {
        // SAFETY: offset 0 of a page-aligned mapping is aligned for SegmentHeader, the
        // mapping is live (View::new contract), and all fields written after
        // publication are atomics (access rule 1).
        unsafe { &*(self.base as *const SegmentHeader) }
    }

    /// Writes the header fields; only the owner, before publishing `magic`. `sleeps`:
    /// the owner may sleep on its doorbell, so senders must ring it (rule 11).
    pub fn init_header(&self, owner_pid: u32, owner_rank: u32, sleeps: bool) {
        let g = self.geo;
        // SAFETY: the owner has exclusive use of the header until `magic` is stored
        // (rule 1); the pointer is in bounds and aligned as in `header()`.
        unsafe {
            let h = self.base as *mut SegmentHeader;
            std::ptr::addr_of_mut!((*h).total_len).write(g.total_len() as u64);
            std::ptr::addr_of_mut!((*h).version).write(VERSION);
            std::ptr::addr_of_mut!((*h).nrings).write(g.nrings as u32);
            std::ptr::addr_of_mut!((*h).frames).write(g.frames as u32);
            std::ptr::addr_of_mut!((*h).frame_size).write(g.frame_size as u32);
            std::ptr::addr_of_mut!((*h).nsenders).write(g.nsenders as u32);
            std::ptr::addr_of_mut!((*h).owner_pid).write(owner_pid);
            std::ptr::addr_of_mut!((*h).owner_rank).write(owner_rank);
            std::ptr::addr_of_mut!((*h).sleeps).write(u32::from(sleeps));
        }
    }

    /// Whether the owner may sleep on its doorbell (read once, at connect).
    pub fn owner_sleeps(&self) -> bool {
        self.header().sleeps != 0
    }

    /// The owner's doorbell word (rule 11).
    pub fn doorbell(&self) -> &AtomicU32 {
        // SAFETY: in bounds (the line after the header) and 64-byte aligned; the field
        // is an atomic.
        unsafe { &(*(self.base.add(self.geo.doorbell_offset()) as *const DoorbellLine)).armed }
    }

    /// The credit line of sender `src` (`src < nsenders`).
    pub fn credit(&self, src: usize) -> &CreditLine {
        assert!(src < self.geo.nsenders, "credit line {src} out of range");
        // SAFETY: in bounds by the assert and the geometry; 64-byte aligned because
        // every offset is a multiple of CACHE_LINE; the field is atomic.
        unsafe {
            &*(self.base.add(self.geo.credits_offset() + src * CACHE_LINE) as *const CreditLine)
        }
    }

    /// Sender `src`'s fast box, as a handle that needs no geometry to find a slot.
    pub fn fast_box(&self, src: usize) -> FastBox {
        assert!(src < self.geo.nsenders, "fast box {src} out of range");
        let off = self.geo.fast_offset() + src * FAST_SLOTS * FAST_SLOT_BYTES;
        // SAFETY: in bounds by the assert and the geometry; the handle inherits this
        // view's contract (the mapping outlives it).
        let base = unsafe { self.base.add(off) };
        FastBox { base }
    }

    /// The control lines of ring `ring`.
    pub fn control(&self, ring: usize) -> &RingControl {
        assert!(ring < self.geo.nrings, "ring {ring} out of range");
        // SAFETY: in bounds and line-aligned (ring offsets are multiples of
        // CACHE_LINE); all fields are atomics.
        unsafe { &*(self.base.add(self.geo.ring_offset(ring)) as *const RingControl) }
    }

    /// The slots of ring `ring`, as a handle that needs no geometry to find one.
    pub fn ring_slots(&self, ring: usize) -> RingSlots {
        assert!(ring < self.geo.nrings, "ring {ring} out of range");
        let off = self.geo.ring_offset(ring) + std::mem::size_of::<RingControl>();
        // SAFETY: in bounds by the assert and the geometry (frames slots follow the
        // control lines); the handle inherits this view's contract.
        let base = unsafe { self.base.add(off) } as *const Slot;
        RingSlots {
            base,
            mask: self.geo.frames as u64 - 1,
        }
    }

    fn frame_ptr(&self, ring: usize, frame: usize) -> *mut u8 {
        assert!(ring < self.geo.nrings && frame < self.geo.frames);
        let off = self.geo.ring_offset(ring)
            + std::mem::size_of::<RingControl>()
            + self.geo.slots_len()
            + frame * self.geo.frame_size;
        // SAFETY: in bounds by the assert and the geometry.
        unsafe { self.base.add(off) }
    }

    /// The in-use flag of a frame.
    pub fn in_use(&self, ring: usize, frame: usize) -> &AtomicU32 {
        // SAFETY: frame_ptr is line-aligned and in bounds; in_use is an atomic.
        unsafe { &(*(self.frame_ptr(ring, frame) as *const FrameHeader)).in_use }
    }

    /// Fills a frame the caller owns (rule 4): header fields, metadata and payload.
    pub fn write_frame(&self, ring: usize, frame: usize, src: u32, meta: &[u8], payload: &[u8]) {
        assert!(meta.len() <= META_MAX && payload.len() <= self.geo.max_payload());
        let p = self.frame_ptr(ring, frame);
        // SAFETY: the caller owns the frame (it flipped in_use 0 → 1 and has not yet
        // published it), so no other process touches these bytes; lengths are checked.
        unsafe {
            let h = p as *mut FrameHeader;
            std::ptr::addr_of_mut!((*h).src).write(src);
            std::ptr::addr_of_mut!((*h).meta_len).write(meta.len() as u16);
            std::ptr::addr_of_mut!((*h).payload_len).write(payload.len() as u32);
            let m = std::ptr::addr_of_mut!((*h).meta) as *mut u8;
            std::ptr::copy_nonoverlapping(meta.as_ptr(), m, meta.len());
            std::ptr::copy_nonoverlapping(payload.as_ptr(), p.add(FRAME_HEADER), payload.len());
        }
    }

    /// Reads the header fields of a frame the receiver owns: (src, meta_len, payload_len).
    pub fn read_frame_header(&self, ring: usize, frame: usize) -> (u32, usize, usize) {
        let h = self.frame_ptr(ring, frame) as *const FrameHeader;
        // SAFETY: the receiver owns the frame (rule 4: it acquired the slot's seq), so
        // the sender's writes are visible and no one writes concurrently.
        unsafe {
            (
                std::ptr::addr_of!((*h).src).read(),
                std::ptr::addr_of!((*h).meta_len).read() as usize,
                std::ptr::addr_of!((*h).payload_len).read() as usize,
            )
        }
    }

    /// Metadata bytes of an owned frame; `len` must have been checked ≤ META_MAX.
    ///
    /// # Safety
    /// The caller owns the frame (rule 4) for as long as the returned slice lives,
    /// and the mapping outlives it.
    pub unsafe fn frame_meta<'a>(&self, ring: usize, frame: usize, len: usize) -> &'a [u8] {
        assert!(len <= META_MAX);
        let h = self.frame_ptr(ring, frame) as *const FrameHeader;
        std::slice::from_raw_parts(std::ptr::addr_of!((*h).meta) as *const u8, len)
    }

    /// Payload bytes of an owned frame; `len` must have been checked ≤ max_payload.
    ///
    /// # Safety
    /// As for [`View::frame_meta`].
    pub unsafe fn frame_payload<'a>(&self, ring: usize, frame: usize, len: usize) -> &'a [u8] {
        assert!(len <= self.geo.max_payload());
        std::slice::from_raw_parts(self.frame_ptr(ring, frame).add(FRAME_HEADER), len)
    }
}

/// Model-checking builds: loom's atomics are handles that must be constructed, so a
/// model's memory has each atomic of the layout written in place before use (a
/// mapped file's zeros stand for "0" only with std's atomics).
#[cfg(all(test, loom))]
impl View {
    /// Constructs every atomic of the segment as 0.
    pub(crate) fn init_atomics(&self) {
        let g = self.geo;
        // SAFETY: each pointer is to an atomic field of a structure inside the
        // mapping (View::new contract), aligned by the layout; nobody uses the memory
        // before the model starts, and writing does not read the old bytes.
        unsafe {
            let at = |p: *const AtomicU64| (p as *mut AtomicU64).write(AtomicU64::new(0));
            at(&self.header().magic);
            (self.doorbell() as *const AtomicU32 as *mut AtomicU32).write(AtomicU32::new(0));
            for s in 0..g.nsenders {
                let line = self.credit(s);
                at(&line.returned);
                at(&line.fast_released);
                let fast = self.fast_box(s);
                for t in 0..FAST_SLOTS as u64 {
                    at(fast.seq(t));
                }
            }
            for r in 0..g.nrings {
                at(&self.control(r).free_head);
                at(&self.control(r).tail);
                let slots = self.ring_slots(r);
                for f in 0..g.frames {
                    let slot = slots.slot(f as u64);
                    at(&slot.seq);
                    (&slot.frame as *const AtomicU32 as *mut AtomicU32).write(AtomicU32::new(0));
                    (self.in_use(r, f) as *const AtomicU32 as *mut AtomicU32)
                        .write(AtomicU32::new(0));
                }
            }
        }
    }
}

/// One sender's fast box in a mapped segment (from [`View::fast_box`]). Like a
/// [`View`], it is a raw address: valid while the mapping it came from is mapped.
#[derive(Clone, Copy)]
pub struct FastBox {
    base: *mut u8,
}

impl FastBox {
    fn slot(&self, ticket: u64) -> *mut FastSlot {
        let i = ticket as usize & (FAST_SLOTS - 1);
        // SAFETY: the masked index is < FAST_SLOTS, so the slot lies inside the box.
        unsafe { self.base.add(i * FAST_SLOT_BYTES) as *mut FastSlot }
    }

    /// The `seq` word of the slot of `ticket` (rule 6: the ready flag).
    pub fn seq(&self, ticket: u64) -> &AtomicU64 {
        // SAFETY: line-aligned and in bounds (slot); `seq` is an atomic.
        unsafe { &(*self.slot(ticket)).seq }
    }

    /// Fills the slot of `ticket` and publishes it; only the box's sender, once the
    /// receiver has released `ticket - FAST_SLOTS` (rule 6).
    #[inline]
    pub fn write(&self, ticket: u64, meta: &[u8], payload: &[u8]) {
        assert!(meta.len() <= META_MAX && meta.len() + payload.len() <= FAST_DATA);
        let p = self.slot(ticket);
        // SAFETY: the receiver released this slot's previous ticket (rule 6), so
        // nobody else accesses these bytes until we store seq; lengths checked above.
        unsafe {
            std::ptr::addr_of_mut!((*p).meta_len).write(meta.len() as u8);
            std::ptr::addr_of_mut!((*p).payload_len).write(payload.len() as u16);
            let d = std::ptr::addr_of_mut!((*p).data) as *mut u8;
            copy_small(meta, d);
            copy_small(payload, d.add(meta.len()));
        }
        self.seq(ticket).store(ticket + 1, Ordering::Release);
    }

    /// The (meta, payload) of a full slot, or None if its lengths are corrupt.
    ///
    /// # Safety
    /// The caller (the receiver) acquired `seq == ticket + 1` and has not released the
    /// slot, for as long as the returned slices live; the mapping outlives them.
    pub unsafe fn read<'a>(&self, ticket: u64) -> Option<(&'a [u8], &'a [u8])> {
        let p = self.slot(ticket);
        let m = std::ptr::addr_of!((*p).meta_len).read() as usize;
        let n = std::ptr::addr_of!((*p).payload_len).read() as usize;
        if m > META_MAX || m + n > FAST_DATA {
            return None;
        }
        let d = std::ptr::addr_of!((*p).data) as *const u8;
        Some((
            std::slice::from_raw_parts(d, m),
            std::slice::from_raw_parts(d.add(m), n),
        ))
    }
}

#[cfg(test)]
impl FastBox {
    /// Publishes `ticket` with arbitrary lengths, as a broken or hostile sender might.
    pub(crate) fn forge(&self, ticket: u64, meta_len: u8, payload_len: u16) {
        let p = self.slot(ticket);
        // SAFETY: tests own the whole segment; plain stores to in-bounds fields.
        unsafe {
            std::ptr::addr_of_mut!((*p).meta_len).write(meta_len);
            std::ptr::addr_of_mut!((*p).payload_len).write(payload_len);
        }
        self.seq(ticket).store(ticket + 1, Ordering::Release);
    }
}

/// The slots of one receive ring (from [`View::ring_slots`]); a raw address like
/// [`FastBox`], valid while the mapping it came from is mapped.
#[derive(Clone, Copy)]
pub struct RingSlots {
    base: *const Slot,
    mask: u64,
}

impl RingSlots {
    /// Slot `index & (frames - 1)`.
    pub fn slot(&self, index: u64) -> &Slot {
        // SAFETY: the masked index is < frames, so in bounds; 16-byte aligned;
        // atomics only.
        unsafe { &*self.base.add((index & self.mask) as usize) }
    }
}

// ---------------------------------------------------------------------------------------
// Byte channel: a pair of single-producer single-consumer byte rings (see `channel.rs`)
// ---------------------------------------------------------------------------------------
//
// ```text
//  offset 0          +------------------------------+
//                    | ChannelHeader   (1 line)     |  magic, version, capacity (written before sharing)
//  64                +------------------------------+
//  ring d (d = 0, 1) | RingIndex       (2 lines)    |  line 0: head, data_waiting (consumer's)
//                    |                              |  line 1: tail, space_waiting (producer's)
//                    | data[capacity]               |  bytes, at offset (counter mod capacity)
//                    +------------------------------+
// ```
//
// Ring 0 carries client → server bytes, ring 1 server → client. Access rules:
// 7. `ChannelHeader` is written by the creator before the memory is shared (the file
//    descriptor is sent after), and only read afterwards.
// 8. `head` and `data_waiting` are written only by the ring's consumer, `tail` and
//    `space_waiting` only by its producer; `head` and `tail` count bytes ever and only
//    grow, so `tail - head` is what is buffered (≤ capacity).
// 9. Bytes in `[head, tail)` belong to the consumer, the rest to the producer; the
//    producer publishes bytes by storing `tail` (Release) after copying them, the
//    consumer releases them by storing `head` (Release) after copying them out.
//    The steps are in `channel_ring.rs`, model-checked by `loom_channel.rs`.
// 10. A side about to sleep sets its waiting flag, then re-reads the other counter;
//    the other side stores its counter, then reads the flag and, if set, wakes the
//    sleeper through its eventfd. A SeqCst fence separates each store from the load
//    after it, so one of the two always sees the other and no wake-up is lost.

/// Identifies a ninefold byte channel ("nf-chan", format byte 1).
pub const CHANNEL_MAGIC: u64 = u64::from_le_bytes(*b"nf-chan\x01");
/// Byte channel layout version; bump on any change to the structures below.
pub const CHANNEL_VERSION: u32 = 1;

/// The first cache line of a byte channel.
#[repr(C, align(64))]
pub struct ChannelHeader {
    /// [`CHANNEL_MAGIC`].
    pub magic: u64,
    /// [`CHANNEL_VERSION`].
    pub version: u32,
    _pad: u32,
    /// Bytes of data per ring; a power of two.
    pub capacity: u64,
    _reserved: [u64; 5],
}

/// The counters of one ring: the consumer's line, then the producer's.
#[repr(C, align(64))]
pub struct RingIndex {
    /// Bytes consumed ever (consumer writes).
    pub head: AtomicU64,
    /// 1 while the consumer sleeps waiting for data (consumer writes).
    pub data_waiting: AtomicU32,
    _pad0: [u8; CACHE_LINE - 12],
    /// Bytes produced ever (producer writes).
    pub tail: AtomicU64,
    /// 1 while the producer sleeps waiting for room (producer writes).
    pub space_waiting: AtomicU32,
    _pad1: [u8; CACHE_LINE - 12],
}

const _: () = assert!(std::mem::size_of::<ChannelHeader>() == CACHE_LINE);
#[cfg(not(all(test, loom)))]
const _: () = assert!(std::mem::size_of::<RingIndex>() == 2 * CACHE_LINE);

/// Offsets within a byte channel of `capacity` bytes per ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChannelGeometry {
    /// Bytes of data per ring, a power of two of at least one cache line.
    pub capacity: usize,
}

impl ChannelGeometry {
    fn ring_offset(&self, ring: usize) -> usize {
        CACHE_LINE + ring * (std::mem::size_of::<RingIndex>() + self.capacity)
    }

    /// Total bytes of the channel's memory.
    pub fn total_len(&self) -> usize {
        self.ring_offset(2)
    }

    /// Checks the invariants the access code relies on.
    pub fn validate(&self) -> Result<(), String> {
        if !self.capacity.is_power_of_two() || self.capacity < CACHE_LINE || self.capacity > 1 << 30
        {
            return Err(format!(
                "byte channel capacity must be a power of two from {CACHE_LINE} B to 1 GiB, got {}",
                self.capacity
            ));
        }
        Ok(())
    }
}

/// Typed access to a mapped byte channel.
#[derive(Clone, Copy)]
pub struct ChannelView {
    base: *mut u8,
    geo: ChannelGeometry,
    /// The model's record of who touched which byte (null outside models).
    #[cfg(all(test, loom))]
    shadow: *const ByteShadow,
}

// SAFETY: a view is a pointer into a shared mapping plus its geometry; everything it
// hands out is either an atomic or accessed under the ownership rules 8–9, which do not
// depend on the thread.
unsafe impl Send for ChannelView {}
// SAFETY: as above; concurrent use from several threads follows the same rules.
unsafe impl Sync for ChannelView {}

impl ChannelView {
    /// Wraps a mapping of at least `geo.total_len()` bytes.
    ///
    /// # Safety
    /// `base` must point to a live, page-aligned, shared mapping of at least
    /// `geo.total_len()` bytes that stays mapped while this view (or a copy) is used,
    /// and `geo` must have passed [`ChannelGeometry::validate`].
    pub unsafe fn new(base: *mut u8, geo: ChannelGeometry) -> ChannelView {
        ChannelView {
            base,
            geo,
            #[cfg(all(test, loom))]
            shadow: std::ptr::null(),
        }
    }

    /// The geometry.
    pub fn geometry(&self) -> ChannelGeometry {
        self.geo
    }

    /// Writes the header (rule 7: before the memory is shared).
    pub fn init_header(&self) {
        // SAFETY: offset 0 is page-aligned and in bounds; nobody else has the memory yet.
        unsafe {
            let h = self.base as *mut ChannelHeader;
            std::ptr::addr_of_mut!((*h).magic).write(CHANNEL_MAGIC);
            std::ptr::addr_of_mut!((*h).version).write(CHANNEL_VERSION);
            std::ptr::addr_of_mut!((*h).capacity).write(self.geo.capacity as u64);
        }
    }

    /// The header's (magic, version, capacity).
    pub fn read_header(&self) -> (u64, u32, u64) {
        // SAFETY: in bounds and aligned; written before sharing and never again (rule 7).
        unsafe {
            let h = self.base as *const ChannelHeader;
            (
                std::ptr::addr_of!((*h).magic).read(),
                std::ptr::addr_of!((*h).version).read(),
                std::ptr::addr_of!((*h).capacity).read(),
            )
        }
    }

    /// The counters of ring `ring` (0 or 1).
    pub fn counters(&self, ring: usize) -> &RingIndex {
        assert!(ring < 2, "byte channel ring {ring} out of range");
        // SAFETY: ring offsets are multiples of CACHE_LINE within the mapping; all
        // fields written after sharing are atomics.
        unsafe { &*(self.base.add(self.geo.ring_offset(ring)) as *const RingIndex) }
    }

    fn data(&self, ring: usize) -> *mut u8 {
        assert!(ring < 2, "byte channel ring {ring} out of range");
        // SAFETY: in bounds by the geometry.
        unsafe {
            self.base
                .add(self.geo.ring_offset(ring) + std::mem::size_of::<RingIndex>())
        }
    }

    /// Copies `bytes` into ring `ring` at stream position `at` (wrapping).
    ///
    /// # Safety
    /// The caller is the ring's producer and owns `[at, at + bytes.len())` (rule 9:
    /// `at ≥ tail` and `at + len ≤ head + capacity`).
    pub unsafe fn write_data(&self, ring: usize, at: u64, bytes: &[u8]) {
        let cap = self.geo.capacity;
        let start = at as usize & (cap - 1);
        let first = bytes.len().min(cap - start);
        #[cfg(all(test, loom))]
        self.touch(ring, at, bytes.len(), true);
        let d = self.data(ring);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), d.add(start), first);
        std::ptr::copy_nonoverlapping(bytes.as_ptr().add(first), d, bytes.len() - first);
    }

    /// Copies bytes at stream position `at` of ring `ring` into `out` (wrapping).
    ///
    /// # Safety
    /// The caller is the ring's consumer and the bytes are published to it (rule 9:
    /// `at ≥ head` and `at + out.len() ≤ tail`).
    pub unsafe fn read_data(&self, ring: usize, at: u64, out: &mut [u8]) {
        let cap = self.geo.capacity;
        let start = at as usize & (cap - 1);
        let first = out.len().min(cap - start);
        #[cfg(all(test, loom))]
        self.touch(ring, at, out.len(), false);
        let d = self.data(ring);
        std::ptr::copy_nonoverlapping(d.add(start), out.as_mut_ptr(), first);
        std::ptr::copy_nonoverlapping(d, out.as_mut_ptr().add(first), out.len() - first);
    }
}

/// Model-checking builds: loom cannot see plain bytes, so a model's channel keeps one
/// loom `UnsafeCell` per byte of each ring, touched wherever a byte is written or read
/// (`write_data`, `read_data`): a byte read before its publication, or overwritten
/// before it was read, is then two unordered accesses, and loom fails the model.
#[cfg(all(test, loom))]
pub(crate) struct ByteShadow {
    rings: [Vec<loom::cell::UnsafeCell<()>>; 2],
}

#[cfg(all(test, loom))]
impl ByteShadow {
    /// One cell per byte of two rings of `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> ByteShadow {
        let ring = || {
            (0..capacity)
                .map(|_| loom::cell::UnsafeCell::new(()))
                .collect()
        };
        ByteShadow {
            rings: [ring(), ring()],
        }
    }
}

#[cfg(all(test, loom))]
impl ChannelView {
    /// A view of a model's channel memory (see [`ChannelView::new`]) whose byte
    /// accesses are recorded in `shadow`; its atomics are constructed as 0 and its
    /// header written.
    ///
    /// # Safety
    /// As for [`ChannelView::new`], and `shadow` (for `geo.capacity`) outlives the view
    /// and its copies.
    pub(crate) unsafe fn model(
        base: *mut u8,
        geo: ChannelGeometry,
        shadow: &ByteShadow,
    ) -> ChannelView {
        let view = ChannelView { base, geo, shadow };
        for ring in 0..2 {
            let idx = base.add(geo.ring_offset(ring)) as *mut RingIndex;
            std::ptr::addr_of_mut!((*idx).head).write(AtomicU64::new(0));
            std::ptr::addr_of_mut!((*idx).data_waiting).write(AtomicU32::new(0));
            std::ptr::addr_of_mut!((*idx).tail).write(AtomicU64::new(0));
            std::ptr::addr_of_mut!((*idx).space_waiting).write(AtomicU32::new(0));
        }
        view.init_header();
        view
    }

    /// Records a write (or read) of `len` bytes of ring `ring` at stream position `at`.
    fn touch(&self, ring: usize, at: u64, len: usize, write: bool) {
        if self.shadow.is_null() {
            return;
        }
        // SAFETY: a non-null shadow outlives the view (`ChannelView::model`).
        let cells = unsafe { &(*self.shadow).rings[ring] };
        for i in 0..len as u64 {
            let cell = &cells[(at + i) as usize & (self.geo.capacity - 1)];
            if write {
                cell.with_mut(|_| ());
            } else {
                cell.with(|_| ());
            }
        }
    }
}
