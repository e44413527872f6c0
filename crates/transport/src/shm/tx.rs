//! Send side: one [`Peer`] per destination, holding its mapped segment, our fast
//! box in it, and what we know of its credit.
//!
//! Sending to receiver `d` from local rank `s`:
//! 1. A packet of at most `fast_limit` bytes (metadata + payload; `NF_SHM_FAST_LIMIT`,
//!    at most [`FAST_DATA`](super::layout::FAST_DATA)) goes through our
//!    fast box in `d` when the box has a released slot — fill the slot, store its
//!    `seq` (one cache line for a small packet). Nothing shared is read unless our
//!    cached count says the box is full.
//! 2. Otherwise (ring `s mod M`): check credit (frames held in `d` < our share; if
//!    not, re-read `d`'s credit line for `s`; still none → [`SendStatus::NoCredit`]).
//! 3. Fetch-and-increment `free_head`, test-and-set that frame's `in_use`; retry on a
//!    frame in use (credit guarantees a free one exists).
//! 4. Copy header, metadata and payload into the frame.
//! 5. Fetch-and-increment `tail` for a ticket; store the frame index, then `seq`.
//! 6. If `d` may sleep (its header says so), ring its doorbell (`doorbell.rs`): a
//!    fence and a load of `d`'s doorbell line, and a wake-up only if `d` is armed.
//!
//! Per-pair order across the two paths: a sender switches path only when the other
//! one is drained — to the fast box once the receiver has freed all our frames, to
//! the rings once all our fast slots are released; until then a small packet
//! follows the ring, and a large one waits (`NoCredit`).

use super::doorbell::{self, Kernel};
use super::layout::{FastBox, FAST_SLOTS};
use super::segment::Segment;
use super::sync::Ordering;
use crate::error::TransportError;
use crate::SendStatus;

/// One destination: its segment and our private view of its credit.
pub(crate) struct Peer {
    seg: Segment,
    /// Our fast box in the peer's segment.
    fast: FastBox,
    /// Our local rank (the sender index in the peer's segment).
    me: usize,
    /// The peer's local rank.
    dest: usize,
    /// Packets sent through frames to this peer, ever.
    sent: u64,
    /// Last value read from the peer's credit line for us.
    returned: u64,
    /// Frames we may hold at the peer at once.
    credit: u64,
    /// Largest payload of one of the peer's frames.
    max_payload: usize,
    /// Next fast-box ticket.
    fast_tail: u64,
    /// Last value read from the peer's `fast_released` for us.
    fast_released: u64,
    /// Whether our last packet went through the fast box.
    last_fast: bool,
    /// Largest packet (metadata + payload) we send through the fast box.
    fast_limit: usize,
    /// The peer may sleep on its doorbell: ring it after each packet (step 6).
    rings: bool,
    /// Times we woke the peer, ever.
    pub(crate) rang: u64,
}

impl Peer {
    /// Wraps the mapped segment of local rank `dest` for sender `me`, which sends
    /// packets of up to `fast_limit` bytes (≤ `FAST_DATA`) through its fast box.
    pub(crate) fn new(seg: Segment, me: usize, dest: usize, fast_limit: usize) -> Peer {
        let view = seg.view();
        Peer {
            fast: view.fast_box(me),
            credit: view.geometry().credit_of(me),
            max_payload: view.geometry().max_payload(),
            me,
            dest,
            sent: 0,
            returned: 0,
            fast_tail: 0,
            fast_released: 0,
            last_fast: false,
            fast_limit,
            rings: view.owner_sleeps(),
            rang: 0,
            seg,
        }
    }

    /// The peer's process id, from its segment header.
    pub(crate) fn pid(&self) -> u32 {
        self.seg.view().header().owner_pid
    }

    /// Largest payload one of the peer's frames carries.
    pub(crate) fn max_payload(&self) -> usize {
        self.max_payload
    }

    /// Queues one packet (lengths already checked against the limits).
    #[inline]
    pub(crate) fn try_send(
        &mut self,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        if meta.len() + payload.len() <= self.fast_limit
            && (self.last_fast || self.frames_drained())
            && self.fast_slot_free()
        {
            self.fast.write(self.fast_tail, meta, payload);
            self.fast_tail += 1;
            self.last_fast = true;
            if self.rings {
                self.ring();
            }
            return Ok(SendStatus::Sent);
        }
        self.send_frame(meta, payload)
    }

    /// Steps 2–5: the packet goes through a frame of the peer's ring.
    #[inline(never)]
    fn send_frame(&mut self, meta: &[u8], payload: &[u8]) -> Result<SendStatus, TransportError> {
        if self.last_fast && !self.fast_drained() {
            return Ok(SendStatus::NoCredit);
        }
        self.last_fast = false;
        if !self.has_credit() {
            return Ok(SendStatus::NoCredit);
        }
        let view = self.seg.view();
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
                    src: Some(self.me as u32),
                    ring: Some(ring),
                    why: format!("no free frame at local rank {} despite credit", self.dest),
                });
            }
            std::hint::spin_loop();
        };
        view.write_frame(ring, frame, self.me as u32, meta, payload);
        let ticket = ctl.tail.fetch_add(1, Ordering::Relaxed);
        let slots = view.ring_slots(ring);
        let slot = slots.slot(ticket);
        slot.frame.store(frame as u32, Ordering::Relaxed);
        slot.seq.store(ticket + 1, Ordering::Release);
        self.sent += 1;
        if self.rings {
            self.ring();
        }
        Ok(SendStatus::Sent)
    }

    /// Step 6: wakes the peer if it sleeps on its doorbell. Out of line: a job whose
    /// ranks busy-poll never calls it.
    #[inline(never)]
    fn ring(&mut self) {
        if doorbell::ring(self.seg.view().doorbell(), &Kernel) {
            self.rang += 1;
        }
    }

    /// Whether one more packet fits in our share of the peer's frames; re-reads the
    /// peer's credit line only when the cached count says no (it is a shared line).
    fn has_credit(&mut self) -> bool {
        if self.sent - self.returned < self.credit {
            return true;
        }
        self.returned = self.credit_line_returned();
        self.sent - self.returned < self.credit
    }

    /// Whether the receiver has freed every frame we sent it.
    fn frames_drained(&mut self) -> bool {
        if self.sent != self.returned {
            self.returned = self.credit_line_returned();
        }
        self.sent == self.returned
    }

    /// Whether fast-box ticket `fast_tail` may be written now.
    #[inline]
    fn fast_slot_free(&mut self) -> bool {
        if self.fast_tail - self.fast_released < FAST_SLOTS as u64 {
            return true;
        }
        self.fast_released = self.credit_line_fast_released();
        self.fast_tail - self.fast_released < FAST_SLOTS as u64
    }

    /// Whether the receiver has released every fast-box packet we sent it.
    fn fast_drained(&mut self) -> bool {
        if self.fast_tail != self.fast_released {
            self.fast_released = self.credit_line_fast_released();
        }
        self.fast_tail == self.fast_released
    }

    fn credit_line_returned(&self) -> u64 {
        let line = self.seg.view().credit(self.me);
        line.returned.load(Ordering::Acquire)
    }

    fn credit_line_fast_released(&self) -> u64 {
        let line = self.seg.view().credit(self.me);
        line.fast_released.load(Ordering::Acquire)
    }
}
