//! Receive side: polling our segment, and the packets it hands out.
//!
//! A poll, in order:
//! 1. Each peer's fast box, round-robin from the one after the last hit: load the
//!    `seq` of the slot at the box's private head — one cache line per peer.
//! 2. Each ring, round-robin likewise: the `seq` of the slot at its private head.
//! 3. Nothing found: publish the fast-box releases senders cannot see yet
//!    (`fastbox.rs`, rule 2).
//!
//! Every address a poll needs is computed once at start-up ([`FastBox`],
//! [`RingSlots`]), so an empty poll is a few loads and compares per peer and ring.
//! A packet records where its bytes are when it is polled, and keeps the segment
//! mapped (an `Rc`) until it is dropped, which releases its slot or frame.

use std::rc::Rc;

use super::fastbox::FastReleases;
use super::layout::{FastBox, Geometry, RingSlots, META_MAX};
use super::segment::Segment;
use super::sync::Ordering;
use crate::error::TransportError;
use crate::Packet;

/// What packets share with the receiver: the mapping and the release bookkeeping.
struct Shared {
    seg: Segment,
    releases: FastReleases,
}

/// One peer's fast box in our segment.
struct InBox {
    src: usize,
    head: u64,
    fast: FastBox,
}

impl InBox {
    /// Whether the packet at our head is published (one cache line read).
    #[inline]
    fn ready(&self) -> bool {
        self.fast.seq(self.head).load(Ordering::Acquire) == self.head + 1
    }
}

/// One receive ring of our segment.
struct InRing {
    head: u64,
    slots: RingSlots,
}

impl InRing {
    /// Whether the slot at our head is published (one cache line read).
    #[inline]
    fn ready(&self) -> bool {
        self.slots.slot(self.head).seq.load(Ordering::Acquire) == self.head + 1
    }
}

/// The receiving half of an endpoint: our segment and where each queue's head is.
pub(crate) struct Receiver {
    shared: Rc<Shared>,
    me: usize,
    boxes: Vec<InBox>,
    next_box: usize,
    rings: Vec<InRing>,
    next_ring: usize,
}

impl Receiver {
    /// Polls `seg`, the receive segment of local rank `me`.
    pub(crate) fn new(seg: Segment, me: usize) -> Receiver {
        let view = *seg.view();
        let geo = *view.geometry();
        Receiver {
            boxes: (0..geo.nsenders)
                .filter(|&src| src != me)
                .map(|src| InBox {
                    src,
                    head: 0,
                    fast: view.fast_box(src),
                })
                .collect(),
            rings: (0..geo.nrings)
                .map(|r| InRing {
                    head: 0,
                    slots: view.ring_slots(r),
                })
                .collect(),
            shared: Rc::new(Shared {
                releases: FastReleases::new(geo.nsenders),
                seg,
            }),
            me,
            next_box: 0,
            next_ring: 0,
        }
    }

    /// Our segment.
    pub(crate) fn segment(&self) -> &Segment {
        &self.shared.seg
    }

    /// The geometry of our segment.
    pub(crate) fn geometry(&self) -> &Geometry {
        self.shared.seg.view().geometry()
    }

    /// Steps 1–3 above: the next arrived packet, if any.
    #[inline(always)]
    pub(crate) fn poll(&mut self) -> Result<Option<ShmPacket>, TransportError> {
        match self.ready() {
            Some(at) => self.take(at).map(Some),
            None => Ok(None),
        }
    }

    /// Whether any queue has a packet at its head (the doorbell's re-check: changes
    /// nothing, publishes nothing).
    pub(crate) fn pending(&self) -> bool {
        self.boxes.iter().any(InBox::ready) || self.rings.iter().any(InRing::ready)
    }

    /// Steps 1–3 without taking anything: which queue has a packet at its head.
    /// Small enough to return in registers, so an empty poll moves no packet.
    #[inline(always)]
    fn ready(&mut self) -> Option<Head> {
        if let Some(k) = first_ready(&self.boxes, self.next_box, InBox::ready) {
            self.next_box = after(k, self.boxes.len());
            return Some(Head::Fast(k));
        }
        if let Some(r) = first_ready(&self.rings, self.next_ring, InRing::ready) {
            self.next_ring = after(r, self.rings.len());
            return Some(Head::Ring(r));
        }
        // Idle: let senders see the fast-box slots we freed.
        self.shared.releases.publish(self.shared.seg.view());
        None
    }

    /// Takes the packet `ready` found (out of line: only when there is one).
    #[inline(never)]
    fn take(&mut self, at: Head) -> Result<ShmPacket, TransportError> {
        match at {
            Head::Fast(k) => self.take_fast(k),
            Head::Ring(r) => self.take_frame(r),
        }
    }

    /// Takes the packet at the head of fast box `k` (its `seq` was acquired).
    fn take_fast(&mut self, k: usize) -> Result<ShmPacket, TransportError> {
        let b = &mut self.boxes[k];
        let ticket = b.head;
        b.head += 1;
        // SAFETY: we acquired seq == ticket + 1 (layout rule 6); the slices become
        // raw parts of a packet that keeps the mapping alive (Rc) and holds the slot
        // until it is dropped.
        let Some((meta, payload)) = (unsafe { b.fast.read(ticket) }) else {
            self.shared
                .releases
                .release(self.shared.seg.view(), b.src, ticket);
            return Err(TransportError::Corrupt {
                src: Some(b.src as u32),
                ring: None,
                why: "fast-box slot lengths exceed the slot".into(),
            });
        };
        Ok(ShmPacket {
            shared: Rc::clone(&self.shared),
            at: At::Fast { ticket },
            src: b.src,
            meta: RawBytes::of(meta),
            payload: RawBytes::of(payload),
        })
    }

    /// Takes the packet at the head of ring `r` (its slot's `seq` was acquired).
    fn take_frame(&mut self, r: usize) -> Result<ShmPacket, TransportError> {
        let view = *self.shared.seg.view();
        let ring = &mut self.rings[r];
        let frame = ring.slots.slot(ring.head).frame.load(Ordering::Relaxed) as usize;
        ring.head += 1;
        let geo = *view.geometry();
        if frame >= geo.frames {
            let why = format!("frame index {frame} beyond {} frames", geo.frames);
            return Err(TransportError::Corrupt {
                src: None,
                ring: Some(r),
                why,
            });
        }
        let (src, meta_len, payload_len) = view.read_frame_header(r, frame);
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
            view.in_use(r, frame).store(0, Ordering::Release);
            return Err(TransportError::Corrupt {
                src: Some(src),
                ring: Some(r),
                why,
            });
        }
        // SAFETY: we own the frame (layout rule 4: we acquired its slot's seq) until
        // the packet is dropped, the packet keeps the mapping alive, and both
        // lengths were checked above.
        let (meta, payload) = unsafe {
            (
                view.frame_meta(r, frame, meta_len),
                view.frame_payload(r, frame, payload_len),
            )
        };
        Ok(ShmPacket {
            shared: Rc::clone(&self.shared),
            at: At::Frame { ring: r, frame },
            src: src as usize,
            meta: RawBytes::of(meta),
            payload: RawBytes::of(payload),
        })
    }
}

/// The first ready item, looking from `start` round to `start - 1` (round-robin
/// fairness without a division on the poll path).
#[inline]
fn first_ready<T>(items: &[T], start: usize, ready: impl Fn(&T) -> bool) -> Option<usize> {
    let (before, from) = items.split_at(start);
    match from.iter().position(&ready) {
        Some(i) => Some(start + i),
        None => before.iter().position(ready),
    }
}

/// The index after `k` in a round of `n` (no division on the poll path).
fn after(k: usize, n: usize) -> usize {
    if k + 1 == n {
        0
    } else {
        k + 1
    }
}

/// A queue whose head holds a packet: fast box `k` or ring `r`.
#[derive(Clone, Copy)]
enum Head {
    Fast(usize),
    Ring(usize),
}

/// Where a received packet sits in our segment.
#[derive(Clone, Copy)]
enum At {
    Frame { ring: usize, frame: usize },
    Fast { ticket: u64 },
}

/// A slice of a packet in the mapping, kept as raw parts so the packet can own it.
#[derive(Clone, Copy)]
struct RawBytes {
    ptr: *const u8,
    len: usize,
}

impl RawBytes {
    fn of(s: &[u8]) -> RawBytes {
        RawBytes {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }
}

/// A received packet; its frame or fast-box slot is ours until this is dropped,
/// which frees it (and, for a frame, returns the sender's credit).
pub struct ShmPacket {
    shared: Rc<Shared>,
    at: At,
    src: usize,
    meta: RawBytes,
    payload: RawBytes,
}

impl ShmPacket {
    #[inline]
    fn bytes(&self, b: RawBytes) -> &[u8] {
        // SAFETY: `b` was a slice of the frame or slot this packet owns until drop
        // (layout rules 4 and 6), and `shared` keeps the mapping alive meanwhile.
        unsafe { std::slice::from_raw_parts(b.ptr, b.len) }
    }
}

impl Packet for ShmPacket {
    #[inline]
    fn src(&self) -> usize {
        self.src
    }

    #[inline]
    fn meta(&self) -> &[u8] {
        self.bytes(self.meta)
    }

    #[inline]
    fn payload(&self) -> &[u8] {
        self.bytes(self.payload)
    }
}

impl Drop for ShmPacket {
    fn drop(&mut self) {
        let view = self.shared.seg.view();
        match self.at {
            At::Frame { ring, frame } => {
                view.in_use(ring, frame).store(0, Ordering::Release);
                view.credit(self.src)
                    .returned
                    .fetch_add(1, Ordering::Release);
            }
            At::Fast { ticket } => self.shared.releases.release(view, self.src, ticket),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::layout::{View, FAST_DATA};
    use crate::shm::segment::segment_path;
    use crate::shm::tx::Peer;
    use crate::SendStatus;

    /// Local rank 1's receiver and local rank 0's sender to it, over one real segment.
    fn pair(dir: &std::path::Path) -> (Receiver, Peer, View) {
        let geo = Geometry {
            nrings: 1,
            frames: 8,
            frame_size: 1024,
            nsenders: 2,
        };
        let path = segment_path(dir, "forged", 1);
        let own = Segment::create(&path, geo, 1, false).unwrap();
        let theirs = Segment::open(&path, 2).unwrap();
        let view = *theirs.view();
        (
            Receiver::new(own, 1),
            Peer::new(theirs, 0, 1, FAST_DATA),
            view,
        )
    }

    fn corrupt_why(r: Result<Option<ShmPacket>, TransportError>) -> String {
        match r {
            Err(TransportError::Corrupt { why, .. }) => why,
            Err(e) => panic!("wrong error: {e}"),
            Ok(p) => panic!("accepted a forged packet (got one: {})", p.is_some()),
        }
    }

    #[test]
    fn a_fast_slot_with_impossible_lengths_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let (mut rx, mut tx, view) = pair(dir.path());
        assert_eq!(tx.try_send(&[1], &[2; 8]).unwrap(), SendStatus::Sent);
        let p = rx.poll().unwrap().expect("the real packet");
        assert_eq!((p.meta(), p.payload()), (&[1u8][..], &[2u8; 8][..]));
        drop(p);
        // Ticket 1, as a broken sender might publish it: metadata longer than allowed,
        // then lengths that run past the slot.
        view.fast_box(0).forge(1, META_MAX as u8 + 1, 0);
        assert!(corrupt_why(rx.poll()).contains("lengths exceed"));
        view.fast_box(0).forge(2, 0, u16::MAX);
        assert!(corrupt_why(rx.poll()).contains("lengths exceed"));
        assert!(rx.poll().unwrap().is_none(), "nothing else arrived");
    }

    #[test]
    fn forged_ring_entries_are_refused_and_the_fast_box_still_works() {
        let dir = tempfile::tempdir().unwrap();
        let (mut rx, mut tx, view) = pair(dir.path());
        let slots = view.ring_slots(0);
        // A ring entry naming a frame that does not exist.
        slots.slot(0).frame.store(999, Ordering::Relaxed);
        slots.slot(0).seq.store(1, Ordering::Release);
        assert!(corrupt_why(rx.poll()).contains("frame index 999"));
        // A frame claiming to come from the receiver itself.
        assert_eq!(view.in_use(0, 3).swap(1, Ordering::Acquire), 0);
        view.write_frame(0, 3, 1, &[9], &[9; 100]);
        slots.slot(1).frame.store(3, Ordering::Relaxed);
        slots.slot(1).seq.store(2, Ordering::Release);
        assert!(corrupt_why(rx.poll()).contains("sender 1 is not a peer"));
        assert_eq!(
            view.in_use(0, 3).load(Ordering::Acquire),
            0,
            "the refused frame is free again"
        );
        assert!(rx.poll().unwrap().is_none());
        assert_eq!(tx.try_send(&[7], b"still here").unwrap(), SendStatus::Sent);
        let p = rx.poll().unwrap().expect("the fast box is unaffected");
        assert_eq!(
            (p.src(), p.meta(), p.payload()),
            (0, &[7u8][..], &b"still here"[..])
        );
    }
}
