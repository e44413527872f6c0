//! Receiver-side bookkeeping of the fast boxes: in-order release, lazy publication.
//!
//! Packets may be freed out of order (the core copies a later packet and frees it
//! while an earlier one is still in a handler), but a sender may only reuse slots
//! below the first ticket still held. So per sender we keep `upto` (every ticket
//! below it is free) and a bitmap of freed tickets above it, and publish `upto` on
//! the sender's credit line:
//! 1. at once when half a box has been freed since the last publication (a flooding
//!    sender never waits long), and
//! 2. whenever a poll finds nothing (so an idle receiver never leaves a sender
//!    believing the box is full).
//!
//! Publishing lazily is what keeps the receiver from writing to the sender's lines

//! on every message.

use std::cell::Cell;

use super::layout::{View, FAST_SLOTS};
use super::sync::Ordering;

#[derive(Clone, Copy, Default)]
struct Release {
    /// Every ticket below this is free.
    upto: u64,
    /// Bit k: ticket `upto + k` is free (k < FAST_SLOTS).
    above: u32,
    /// Last `upto` stored on the credit line.
    published: u64,
}

const _: () = assert!(
    FAST_SLOTS < 32,
    "the release bitmap is a u32 shifted by its run"
);

/// Release state of every sender's fast box in our segment.
pub(crate) struct FastReleases {
    per_src: Vec<Cell<Release>>,
    dirty: Cell<bool>,
}

impl FastReleases {
    pub(crate) fn new(senders: usize) -> Self {
        FastReleases {
            per_src: (0..senders)
                .map(|_| Cell::new(Release::default()))
                .collect(),
            dirty: Cell::new(false),
        }
    }

    /// Frees `ticket` of sender `src`; publishes if half a box became free.
    pub(crate) fn release(&self, view: &View, src: usize, ticket: u64) {
        let cell = &self.per_src[src];
        let mut r = cell.get();
        let k = ticket.wrapping_sub(r.upto);
        if k >= FAST_SLOTS as u64 {
            // Not a ticket we handed out (a corrupt slot we skipped); nothing to free.
            return;
        }
        r.above |= 1 << k;
        // The run of freed tickets from `upto` up (at most FAST_SLOTS < 32 of them).
        let run = r.above.trailing_ones();
        r.above >>= run;
        r.upto += u64::from(run);
        if r.upto - r.published >= (FAST_SLOTS / 2) as u64 {
            view.credit(src)
                .fast_released
                .store(r.upto, Ordering::Release);
            r.published = r.upto;
        } else if r.upto != r.published {
            self.dirty.set(true);
        }
        cell.set(r);
    }

    /// Publishes every sender's progress not yet visible (call when idle).
    #[inline]
    pub(crate) fn publish(&self, view: &View) {
        if self.dirty.get() {
            self.publish_all(view);
        }
    }

    fn publish_all(&self, view: &View) {
        self.dirty.set(false);
        for (src, cell) in self.per_src.iter().enumerate() {
            let mut r = cell.get();
            if r.upto != r.published {
                view.credit(src)
                    .fast_released
                    .store(r.upto, Ordering::Release);
                r.published = r.upto;
                cell.set(r);
            }
        }
    }
}
