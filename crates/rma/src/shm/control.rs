//! The control segment: one per proc, mapped by its domain and used by its service
//! thread, holding the words that make accumulate, rmw and mutexes atomic whichever
//! path an operation takes, and the proc's slot of its node's collectives.
//!
//! ```text
//!  offset 0     +------------------------------+
//!               | Header          (1 line)     |  magic, version, owner pid, mutexes in use,
//!               |                              |  domain peers that mapped it
//!  64           +------------------------------+
//!               | Stripe[64]      (1 line each)|  holder pid (0 = free)
//!  4160         +------------------------------+
//!               | MutexWord[4096] (16 B each)  |  next ticket, now serving, holder proc + 1
//!  69696        +------------------------------+
//!               | CollSlot                     |  arrive + 2 inline parts (1 line),
//!               |                              |  release (1 line),
//!               |                              |  data[2][COLL_BYTES]
//!  135360       +------------------------------+
//! ```
//!
//! Access rules:
//! 1. The header is written by the owner before its name is published, and read-only
//!    afterwards, except `nmutex`, which the owner sets in `create_mutexes` between two
//!    barriers (nobody uses the mutexes then), and `mapped`, which each other proc of
//!    the domain increments once it has mapped and checked the segment at start-up: the
//!    one that makes it the domain's size less one unlinks the name (the owner does when
//!    it is alone), so no start-up step waits for the others to have mapped it.
//! 2. Stripe `s` guards the owner's memory at pages `p` with `p mod 64 = s` (pages of
//!    the *owner's* addresses, so every proc computes the same stripe). Compare-and-swap
//!    0 → pid takes it (Acquire); storing 0 releases it (Release). Accumulates and rmw
//!    touch memory only under the stripes of their range, taken in ascending order.
//! 3. Mutex `m` is a ticket lock: a taker fetch-and-adds `next`; it holds the mutex once
//!    `serving` equals its ticket, then stores `holder` (proc + 1, for diagnostics).
//!    Releasing stores `holder = 0`, then increments `serving` (Release). `next` and
//!    `serving` are reset by the owner in `create_mutexes`, under rule 1's barriers.
//! 4. The collective slot (`api/coll.rs` runs the steps): every step of a node
//!    collective has a number `seq` (1, 2, ... in call order, the same on every proc of
//!    the node). Only the owner writes its slot: its part into `data[seq % 2]` (a short
//!    one into the arrive line's `inline[seq % 2]`), then
//!    `arrive = seq` (Release); when it ends a step for the others (the leader, a
//!    broadcast's source), `release = seq` (Release) after the result is in its
//!    buffer. Readers load `arrive` / `release` with Acquire before touching a buffer.
//!    An owner rewrites a buffer others read at step `t` only after seeing every other
//!    proc's `arrive >= t + 1`, so readers never see it change under them.
//!    A node team (`api/team.rs`) keeps slots of its own (`TeamSlot`: the same lines,
//!    eight buffers used by `seq % 8`) in an allocation of the team's, one per member,
//!    under the same rule among the team's procs of a node.

use std::cell::UnsafeCell;
use std::mem::{align_of, size_of};
use std::ptr::NonNull;

use super::map::Mapping;
use super::sync::{AtomicU32, AtomicU64, Ordering};

/// Identifies an rma control segment ("nf-rmac", then format byte 1).
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"nf-rmac\x01");
/// Layout version; bump on any change below.
pub(crate) const VERSION: u32 = 3;
/// Stripe locks per proc (one bit each in a `u64` mask).
pub(crate) const NSTRIPES: usize = 64;
/// Bytes of owner memory per stripe step.
pub(crate) const STRIPE_PAGE: u64 = 4096;
/// Most mutexes one proc can host.
pub(crate) const MAX_MUTEXES: usize = 4096;

/// The first cache line.
#[repr(C, align(64))]
pub(crate) struct Header {
    /// [`MAGIC`] once initialised.
    pub magic: AtomicU64,
    /// [`VERSION`].
    pub version: AtomicU32,
    /// The owner's pid.
    pub owner_pid: AtomicU32,
    /// Mutexes created on this proc.
    pub nmutex: AtomicU32,
    /// Other procs of the domain that have mapped this segment (rule 1).
    pub mapped: AtomicU32,
}

/// One stripe lock on its own cache line.
#[repr(C, align(64))]
pub(crate) struct Stripe {
    /// Pid of the holder; 0 when free.
    pub holder: AtomicU32,
}

/// One ticket mutex.
#[repr(C)]
pub(crate) struct MutexWord {
    /// Next ticket to hand out.
    pub next: AtomicU32,
    /// Ticket that holds the mutex.
    pub serving: AtomicU32,
    /// Proc + 1 of the holder; 0 when free.
    pub holder: AtomicU32,
    _pad: u32,
}

/// Bytes of one collective buffer: a step moves at most this much per proc (longer
/// messages take several steps).
pub(crate) const COLL_BYTES: usize = 32 * 1024;

/// Bytes of a part short enough to travel inline, in the line of its `arrive` word, so
/// a reader's one miss on that line brings word and data together.
pub(crate) const COLL_INLINE: usize = 24;

/// A sequence word and two inline parts (by step parity) on a cache line of their
/// own, so the owner's writes never invalidate the line its neighbours poll.
#[repr(C, align(64))]
pub(crate) struct SeqLine {
    /// The last step number written (rule 4).
    pub seq: AtomicU64,
    /// Short parts, by step parity (used in `arrive` lines only).
    inline: UnsafeCell<[[u8; COLL_INLINE]; 2]>,
}

/// One proc's words and buffers of a run of collective steps (rule 4): `DEPTH`
/// buffers of `BYTES`, used in turn by step number. The control segment's
/// ([`CollSlot`]) and a node team's ([`TeamSlot`]) differ only in those.
#[repr(C, align(64))]
pub(crate) struct Slot<const DEPTH: usize, const BYTES: usize> {
    /// The last step this proc arrived at (its part written), and short parts.
    arrive: SeqLine,
    /// The last step this proc ended for the others (its result written).
    release: SeqLine,
    /// Contributions and results, by `seq % DEPTH`; written by one proc while others
    /// may map it, hence behind an `UnsafeCell` and reached through raw pointers.
    data: UnsafeCell<[[u8; BYTES]; DEPTH]>,
}

/// One proc's part of its node's collectives (rule 4): two 32 KiB buffers, by step
/// parity, and short parts inline.
pub(crate) type CollSlot = Slot<2, COLL_BYTES>;

/// Most buffers of a slot ([`StepSlot::DEPTH`]).
pub(crate) const MAX_DEPTH: usize = 8;

/// Bytes of one buffer of a [`TeamSlot`].
pub(crate) const TEAM_BYTES: usize = 8 * 1024;

/// One member's slot of a node team's collectives (`api/team.rs`), in an allocation
/// of the team's, under rule 4 among the team's procs of a node. Eight buffers where
/// the control segment has two: a broadcast's root may then run seven steps ahead of
/// its slowest reader before it waits (back-to-back 8-byte broadcasts of a group of 2
/// on 2 oversubscribed CPUs went lockstep with two, 1-9 µs a call against 0.1-0.3
/// with eight). No inline parts: the `inline` bytes of its lines stay unused.
pub(crate) type TeamSlot = Slot<MAX_DEPTH, TEAM_BYTES>;

/// A [`Slot`] as `api/coll.rs` steps through it, its sizes as constants (the steps
/// are generic over the layout).
pub(crate) trait StepSlot {
    /// Buffers, used in turn by step number (`seq % DEPTH`); at most [`MAX_DEPTH`].
    const DEPTH: usize;
    /// Bytes of one buffer: a step moves at most this much per proc.
    const BYTES: usize;
    /// The last step this proc arrived at (its part written).
    fn arrive(&self) -> &AtomicU64;
    /// The last step this proc ended for the others (its result written).
    fn release(&self) -> &AtomicU64;
    /// Buffer `k % DEPTH`: bytes that other procs of the node read and the owner
    /// writes concurrently only as rule 4 allows, so it is handed out as a raw
    /// pointer, not a slice.
    fn data(&self, k: usize) -> *mut u8;
    /// Where the owner's part of `len` bytes at buffer `k` lives; rule 4 orders its
    /// use as for the buffers.
    fn part(&self, k: usize, len: usize) -> *mut u8;
}

impl<const DEPTH: usize, const BYTES: usize> StepSlot for Slot<DEPTH, BYTES> {
    const DEPTH: usize = DEPTH;
    const BYTES: usize = BYTES;

    fn arrive(&self) -> &AtomicU64 {
        &self.arrive.seq
    }

    fn release(&self) -> &AtomicU64 {
        &self.release.seq
    }

    fn data(&self, k: usize) -> *mut u8 {
        let first = self.data.get().cast::<u8>();
        // SAFETY: `k % DEPTH` picks a buffer inside the one array.
        unsafe { first.add((k % DEPTH) * BYTES) }
    }

    /// With two buffers, a part that fits ([`COLL_INLINE`]) travels inline in the
    /// `arrive` line (one inline part per parity), so a reader's one miss on that line
    /// brings word and part together; otherwise it is in its buffer.
    fn part(&self, k: usize, len: usize) -> *mut u8 {
        if DEPTH != 2 || len > COLL_INLINE {
            return self.data(k);
        }
        let first = self.arrive.inline.get().cast::<u8>();
        // SAFETY: both inline parts lie inside the one array, so the offset stays in it.
        unsafe { first.add((k & 1) * COLL_INLINE) }
    }
}

/// The whole control segment.
#[repr(C)]
struct Layout {
    header: Header,
    stripes: [Stripe; NSTRIPES],
    mutexes: [MutexWord; MAX_MUTEXES],
    coll: CollSlot,
}

/// Bytes of a control segment.
pub(crate) const SIZE: usize = size_of::<Layout>();

// loom's atomics are larger handles: under `cfg(loom)` the words grow, and every
// offset follows from the types' sizes.
#[cfg(not(all(test, loom)))]
const _: () = assert!(size_of::<Header>() == 64);
const _: () = assert!(size_of::<Stripe>() == 64);
#[cfg(not(all(test, loom)))]
const _: () = assert!(size_of::<MutexWord>() == 16);
#[cfg(not(all(test, loom)))]
const _: () = assert!(size_of::<SeqLine>() == 64);
#[cfg(not(all(test, loom)))]
const _: () = assert!(size_of::<CollSlot>() == 128 + 2 * COLL_BYTES);
#[cfg(not(all(test, loom)))]
const _: () = assert!(size_of::<TeamSlot>() == 128 + MAX_DEPTH * TEAM_BYTES);
#[cfg(not(all(test, loom)))]
const _: () = assert!(SIZE == 64 + 64 * NSTRIPES + 16 * MAX_MUTEXES + size_of::<CollSlot>());
const _: () = assert!(align_of::<Layout>() <= 4096);

/// A mapped control segment (ours or a domain peer's).
pub(crate) struct Control {
    map: Mapping,
    layout: NonNull<Layout>,
}

// SAFETY: the mapping is only ever accessed through atomics (rules above), which are
// safe to share between threads, or through the collective buffers' raw pointers,
// whose use rule 4 orders; the Mapping itself is just an address range.
unsafe impl Send for Control {}
// SAFETY: as above: every access through `&Control` is an atomic operation, or a raw
// pointer into an `UnsafeCell` used under rule 4.
unsafe impl Sync for Control {}

impl Control {
    /// Wraps a mapping of at least [`SIZE`] bytes (page-aligned, so aligned for
    /// `Layout`).
    pub(crate) fn new(map: Mapping) -> Control {
        let layout = NonNull::new(map.ptr().cast::<Layout>()).expect("mmap never returns null");
        Control { map, layout }
    }

    fn layout(&self) -> &Layout {
        // SAFETY: `layout` points at SIZE mapped bytes owned by `self.map`, aligned (page
        // alignment ≥ 64); every field is an atomic, padding or bytes in an
        // `UnsafeCell`, valid for any bytes and for writes by others.
        unsafe { self.layout.as_ref() }
    }

    /// Rule 1: the owner fills the header of its fresh (zeroed) segment.
    pub(crate) fn init(&self, owner_pid: u32) {
        let h = &self.layout().header;
        h.version.store(VERSION, Ordering::Relaxed);
        h.owner_pid.store(owner_pid, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
    }

    /// Checks a peer's header; `Err` says what is wrong.
    pub(crate) fn check(&self) -> Result<(), String> {
        let h = &self.layout().header;
        if h.magic.load(Ordering::Acquire) != MAGIC {
            return Err("not an rma control segment, or not initialised".into());
        }
        let v = h.version.load(Ordering::Relaxed);
        if v != VERSION {
            return Err(format!(
                "layout version {v}, this build speaks {VERSION}; run one ninefold build per job"
            ));
        }
        Ok(())
    }

    /// The header.
    pub(crate) fn header(&self) -> &Header {
        &self.layout().header
    }

    /// Stripe lock `s` (< [`NSTRIPES`]).
    pub(crate) fn stripe(&self, s: usize) -> &AtomicU32 {
        &self.layout().stripes[s].holder
    }

    /// Mutex `m` (< [`MAX_MUTEXES`]).
    pub(crate) fn mutex(&self, m: usize) -> &MutexWord {
        &self.layout().mutexes[m]
    }

    /// The collective slot (rule 4).
    pub(crate) fn coll(&self) -> &CollSlot {
        &self.layout().coll
    }

    /// The mapping, to unlink its name.
    pub(crate) fn mapping(&self) -> &Mapping {
        &self.map
    }
}

/// Model-checking builds: loom's atomics are handles that must be constructed, so a
/// model's control segment has its atomics written in place before use (a mapped
/// file's zeros stand for "0" only with std's atomics).
#[cfg(all(test, loom))]
impl Control {
    /// A control segment in private memory whose header, stripes and first `mutexes`
    /// mutex words are constructed as 0 (a model must use no other mutex: building
    /// all [`MAX_MUTEXES`] would cost every explored execution thousands of objects).
    pub(crate) fn model(mutexes: usize) -> Control {
        assert!(mutexes <= MAX_MUTEXES);
        let ctl = Control::new(Mapping::model(SIZE));
        let l = ctl.layout.as_ptr();
        // SAFETY: `l` points at SIZE bytes of fresh private memory owned by `ctl` that
        // nobody uses yet; each place is an atomic field inside it, aligned by the
        // layout, written without reading (or dropping) the old bytes.
        unsafe {
            let h = std::ptr::addr_of_mut!((*l).header);
            std::ptr::addr_of_mut!((*h).magic).write(AtomicU64::new(0));
            std::ptr::addr_of_mut!((*h).version).write(AtomicU32::new(0));
            std::ptr::addr_of_mut!((*h).owner_pid).write(AtomicU32::new(0));
            std::ptr::addr_of_mut!((*h).nmutex).write(AtomicU32::new(0));
            std::ptr::addr_of_mut!((*h).mapped).write(AtomicU32::new(0));
            for s in 0..NSTRIPES {
                std::ptr::addr_of_mut!((*l).stripes[s].holder).write(AtomicU32::new(0));
            }
            for m in 0..mutexes {
                let w = std::ptr::addr_of_mut!((*l).mutexes[m]);
                std::ptr::addr_of_mut!((*w).next).write(AtomicU32::new(0));
                std::ptr::addr_of_mut!((*w).serving).write(AtomicU32::new(0));
                std::ptr::addr_of_mut!((*w).holder).write(AtomicU32::new(0));
            }
        }
        ctl
    }
}

/// The stripes covering owner addresses `addr .. addr + len`, as a bit mask.
pub(crate) fn stripes_of(addr: u64, len: u64) -> u64 {
    let first = addr / STRIPE_PAGE;
    let last = (addr + len.max(1) - 1) / STRIPE_PAGE;
    if last - first + 1 >= NSTRIPES as u64 {
        return u64::MAX;
    }
    (first..=last).fold(0u64, |m, p| m | 1 << (p % NSTRIPES as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripes_cover_every_page_of_a_range_and_wrap() {
        assert_eq!(stripes_of(0, 1), 1);
        assert_eq!(stripes_of(4095, 2), 0b11);
        assert_eq!(stripes_of(63 * 4096, 4097), 1 << 63 | 1);
        assert_eq!(stripes_of(5, 64 * 4096), u64::MAX);
        assert_eq!(stripes_of(64 * 4096 + 8, 8), 1);
    }
}
