//! Model checks of the shared-memory protocol (access rules 2–6 of `layout.rs`) under
//! loom: the real sending and receiving code (`tx.rs`, `rx.rs`, `fastbox.rs`) over a
//! small heap-allocated segment whose atomics are loom's (`sync.rs`).
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p nf-transport
//! --release --lib loom` (scripts/test.sh does). loom explores every interleaving of
//! the atomics and every value a weak ordering allows a load to see; plain bytes
//! (payloads, header fields) are not modelled, so what these checks catch is an entry,
//! a frame or a credit seen through an atomic before its publication.
//!
//! Checks:
//! 1. A sender fills the rings while the receiver drains: every packet arrives once,
//!    in order, read only after its publication (a stale frame index would show the
//!    wrong packet), and credits returned never exceed frames taken.
//! 2. A sender fills its fast box while the receiver drains it and goes idle: the
//!    releases the receiver publishes reach the sender, so a sender waiting for a slot
//!    or for the path switch is never stranded (no lost wake-up of a waiting sender).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::Arc;

use loom::thread;

use super::layout::{Geometry, View, FAST_DATA, FAST_SLOTS, MAGIC};
use super::rx::Receiver;
use super::segment::Segment;
use super::sync::Ordering;
use super::tx::Peer;
use crate::{Packet, SendStatus};

/// A segment's memory on the heap, initialised as `Segment::create` does a file.
pub(crate) struct Memory {
    base: *mut u8,
    layout: Layout,
    geo: Geometry,
}

// SAFETY: the memory is only reached through atomics and the ownership rules of
// `layout.rs`, which do not depend on the thread; it is freed once, on drop.
unsafe impl Send for Memory {}
// SAFETY: as above.
unsafe impl Sync for Memory {}

impl Memory {
    /// A zeroed segment of geometry `geo` owned by local rank `owner`, who may sleep
    /// on its doorbell if `sleeps`.
    pub(crate) fn new(geo: Geometry, owner: u32, sleeps: bool) -> Arc<Memory> {
        geo.validate().unwrap();
        let layout = Layout::from_size_align(geo.total_len(), 4096).unwrap();
        // SAFETY: the layout has a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        assert!(!base.is_null());
        let mem = Memory { base, layout, geo };
        let view = mem.view();
        view.init_atomics();
        view.init_header(std::process::id(), owner, sleeps);
        view.header().magic.store(MAGIC, Ordering::Release);
        Arc::new(mem)
    }

    /// Typed access to it.
    pub(crate) fn view(&self) -> View {
        // SAFETY: page-aligned, `total_len` bytes, freed only when the last Arc goes.
        unsafe { View::new(self.base, self.geo) }
    }

    /// Its length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.base, self.layout) }
    }
}

/// Local rank 0 sends to local rank 1: one ring, `frames` frames.
pub(crate) fn geometry(frames: usize) -> Geometry {
    Geometry {
        nrings: 1,
        frames,
        frame_size: 1024,
        nsenders: 2,
    }
}

/// Sends packets of lengths `lens` from rank 0 to rank 1's segment `mem`, retrying on
/// `NoCredit`; packet `i` is `[i]` then `lens[i]` bytes of `i`.
pub(crate) fn send(mem: &Arc<Memory>, lens: &[usize], check_credit: bool) {
    let mut tx = Peer::new(Segment::model(Arc::clone(mem)), 0, 1, FAST_DATA);
    let view = mem.view();
    let credit = view.credit(0);
    for (i, &len) in (0u8..).zip(lens) {
        while tx.try_send(&[i], &vec![i; len]).unwrap() == SendStatus::NoCredit {
            thread::yield_now();
        }
        if check_credit {
            // Rule 2: the receiver returns a frame only after taking it.
            let returned = credit.returned.load(Ordering::Acquire);
            assert!(
                returned <= u64::from(i) + 1,
                "{returned} credits back, {i} sent"
            );
        }
    }
}

/// Rank 1 polls until the packets `send` sends came, checking order and contents,
/// dropping each (which frees its frame or slot and returns the credit).
fn receive(mem: &Arc<Memory>, lens: &[usize]) {
    let mut rx = Receiver::new(Segment::model(Arc::clone(mem)), 1);
    let mut next = 0u8;
    while usize::from(next) < lens.len() {
        match rx.poll().unwrap() {
            Some(p) => {
                let len = lens[usize::from(next)];
                assert_eq!((p.src(), p.meta()), (0, &[next][..]), "packet out of order");
                assert!(p.payload().len() == len && p.payload().iter().all(|&b| b == next));
                next += 1;
            }
            None => thread::yield_now(),
        }
    }
}

#[test]
fn loom_ring_entries_are_read_after_publication_and_credit_balances() {
    // Two frames, one of them rank 0's credit: every send after the first waits for
    // the receiver to free a frame. 600 B do not fit a fast-box slot.
    const LENS: [usize; 3] = [600; 3];
    loom::model(|| {
        let mem = Memory::new(geometry(2), 1, false);
        let sender = {
            let mem = Arc::clone(&mem);
            thread::spawn(move || send(&mem, &LENS, true))
        };
        receive(&mem, &LENS);
        sender.join().unwrap();
        let view = mem.view();
        let returned = view.credit(0).returned.load(Ordering::Acquire);
        assert_eq!(
            returned,
            LENS.len() as u64,
            "every frame's credit came back once"
        );
        for f in 0..2 {
            assert_eq!(
                view.in_use(0, f).load(Ordering::Acquire),
                0,
                "frame {f} free"
            );
        }
    });
}

#[test]
fn loom_a_sender_waiting_for_fast_box_slots_sees_them_released() {
    // More small packets than the box has slots, then one for the rings: the sender
    // must see the receiver's releases, published at half a box (enough to reuse
    // slots) and whenever a poll finds nothing (needed before the path switch: a
    // sender moves to the rings only once every fast slot is released). A release
    // never published strands the sender, and loom fails the model.
    let mut lens = [8usize; FAST_SLOTS + 3];
    lens[FAST_SLOTS + 2] = 600;
    loom::model(move || {
        let mem = Memory::new(geometry(2), 1, false);
        let sender = {
            let mem = Arc::clone(&mem);
            thread::spawn(move || send(&mem, &lens, false))
        };
        receive(&mem, &lens);
        sender.join().unwrap();
        let view = mem.view();
        let released = view.credit(0).fast_released.load(Ordering::Acquire);
        let returned = view.credit(0).returned.load(Ordering::Acquire);
        // A small packet may take a frame when the box was drained just then.
        assert_eq!(
            released + returned,
            lens.len() as u64,
            "every slot and frame freed"
        );
    });
}
