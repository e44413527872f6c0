//! The ring protocol of a byte channel (access rules 8–10 in [`super::layout`]):
//! moving bytes through one ring each way, and sleeping and waking around it.
//!
//! It is written over [`Doorbells`], what a side sleeps on and rings: the channel's
//! eventfds and unix stream in [`super::channel`], a loom condvar in the model
//! (`loom_channel.rs`), so the model checks this code, not a copy of it.
//!
//! Receiving (ring `rx`, we are its consumer):
//! 1. Read `tail` (Acquire). Bytes in `[head, tail)` → copy out as many as fit, store
//!    `head` (Release), and, past a SeqCst fence, ring the producer's room bell if its
//!    `space_waiting` flag is up.
//! 2. None → rule 10: raise `data_waiting`, SeqCst fence, read `tail` again; still
//!    none → sleep on the data bell; then lower the flag and start over. A hang-up
//!    with nothing left to read is end of file.
//!
//! Sending (ring `tx`, we are its producer) is the mirror image: room is
//! `head + capacity - tail`; copy in, store `tail` (Release), fence, ring the data bell
//! if `data_waiting`; no room → raise `space_waiting`, fence, read `head` again, sleep.
//! A send of several parts (a 9P frame's head and its data) copies as much of them as
//! fits, across parts, before that one store and bell: one publication per ring-full,
//! not per part.
//!
//! The fences make rule 10's "one of the two always sees the other": each side stores
//! (its counter, or its flag), then a SeqCst fence, then loads the other's word. Of two
//! SeqCst fences one comes first in their single total order, so the load after the
//! later one sees the store before the earlier one: no wake-up is lost. (SeqCst
//! stores and loads alone would say the same in C++'s model, but loom checks fences
//! and treats SeqCst accesses as acquire/release, so the fences are what it can prove.)

use std::io;
// Each of these is touched by one thread only (the receiving or the sending one),
// so std's suffice and the model does not explore them.
use std::sync::atomic::{AtomicU64 as PrivateU64, Ordering as PrivateOrdering};

use super::layout::ChannelView;
use super::sync::{fence, AtomicBool, Ordering};

/// Index of the bell a ring's consumer sleeps on (waiting for data).
pub(crate) const DATA: usize = 0;
/// Index of the bell a ring's producer sleeps on (waiting for room).
pub(crate) const SPACE: usize = 1;

/// What the two sides of a channel sleep on and ring: one bell per (ring, reason),
/// and a hang-up that wakes every sleeper on both sides for good.
pub(crate) trait Doorbells {
    /// Sleeps until bell `[ring][reason]` rings (true; the ring is consumed) or the
    /// channel is hung up (false). May return true spuriously.
    fn sleep(&self, ring: usize, reason: usize) -> io::Result<bool>;
    /// Rings bell `[ring][reason]`; rings while nobody sleeps are kept (one suffices).
    fn ring(&self, ring: usize, reason: usize);
    /// Hangs up: sleepers on both sides return false, now and from then on.
    fn hang_up(&self);
}

/// The error for a peer that broke the ring protocol (it wrote our counters' partner
/// with nonsense).
fn broken(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("byte channel: the peer broke the ring protocol: its counter {what}"),
    )
}

/// One side's half of the ring protocol: it consumes ring `rx` and produces ring `tx`.
pub(crate) struct Rings<D> {
    pub(crate) view: ChannelView,
    /// The ring we read, the ring we write.
    pub(crate) rx: usize,
    tx: usize,
    /// Our own counters, kept here and only published in shared memory (the peer
    /// could overwrite the shared copies): the head of ring `rx`, the tail of `tx`.
    rx_head: PrivateU64,
    tx_tail: PrivateU64,
    closed: AtomicBool,
    pub(crate) bells: D,
}

impl<D: Doorbells> Rings<D> {
    /// The side that reads ring `rx` and writes the other, over `view`.
    pub(crate) fn new(view: ChannelView, rx: usize, bells: D) -> Rings<D> {
        Rings {
            view,
            rx,
            tx: 1 - rx,
            rx_head: PrivateU64::new(0),
            tx_tail: PrivateU64::new(0),
            closed: AtomicBool::new(false),
            bells,
        }
    }

    /// Bytes per ring.
    pub(crate) fn capacity(&self) -> usize {
        self.view.geometry().capacity
    }

    /// Sleeps on bell `[ring][reason]` unless we closed the channel: true when rung,
    /// false once closed or hung up.
    fn sleep(&self, ring: usize, reason: usize) -> io::Result<bool> {
        if self.closed.load(Ordering::SeqCst) {
            return Ok(false);
        }
        self.bells.sleep(ring, reason)
    }

    /// Reads some bytes into `buf`, blocking while there are none; `Ok(0)` once the
    /// channel is closed or the peer is gone and everything it sent has been read.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let idx = self.view.counters(self.rx);
        let cap = self.capacity() as u64;
        loop {
            let head = self.rx_head.load(PrivateOrdering::Relaxed);
            let tail = idx.tail.load(Ordering::Acquire);
            let avail = tail.wrapping_sub(head);
            if avail > cap {
                return Err(broken("claims more bytes than its ring holds"));
            }
            if avail != 0 {
                let n = (avail as usize).min(buf.len());
                // SAFETY: we are ring rx's consumer and [head, head + n) ⊆ [head, tail)
                // is published to us (rule 9).
                unsafe { self.view.read_data(self.rx, head, &mut buf[..n]) };
                let head = head.wrapping_add(n as u64);
                self.rx_head.store(head, PrivateOrdering::Relaxed);
                idx.head.store(head, Ordering::Release);
                fence(Ordering::SeqCst);
                if idx.space_waiting.load(Ordering::Relaxed) == 1 {
                    self.bells.ring(self.rx, SPACE);
                }
                return Ok(n);
            }
            // Rule 10: announce the sleep, then look again.
            idx.data_waiting.store(1, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if idx.tail.load(Ordering::Relaxed) != head {
                idx.data_waiting.store(0, Ordering::Relaxed);
                continue;
            }
            let alive = self.sleep(self.rx, DATA)?;
            idx.data_waiting.store(0, Ordering::Relaxed);
            if !alive && idx.tail.load(Ordering::Acquire) == head {
                return Ok(0);
            }
        }
    }

    /// Writes all of `bytes`, blocking while the ring is full; fails once the channel
    /// is closed, or when it must wait for room and the peer is gone (as with a
    /// socket, bytes that fit may still be written after the peer went).
    pub(crate) fn send(&self, bytes: &[u8]) -> io::Result<()> {
        self.send_parts(&[bytes])
    }

    /// Writes `parts` one after another as [`Rings::send`] writes their concatenation:
    /// each time there is room, as many bytes as fit are copied in, across parts, and
    /// published with one store of `tail` and at most one ring of the data bell — a
    /// frame's head and data that fit go as one publication, not one per part.
    pub(crate) fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        let idx = self.view.counters(self.tx);
        let cap = self.capacity() as u64;
        let total: usize = parts.iter().map(|p| p.len()).sum();
        let mut from = PartsCursor::default();
        let mut done = 0;
        while done < total {
            if self.closed.load(Ordering::SeqCst) {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "byte channel closed",
                ));
            }
            let tail = self.tx_tail.load(PrivateOrdering::Relaxed);
            let head = idx.head.load(Ordering::Acquire);
            let used = tail.wrapping_sub(head);
            if used > cap {
                return Err(broken("claims to have read bytes never sent"));
            }
            let free = cap - used;
            if free == 0 {
                idx.space_waiting.store(1, Ordering::Relaxed);
                fence(Ordering::SeqCst);
                if idx.head.load(Ordering::Relaxed) != head {
                    idx.space_waiting.store(0, Ordering::Relaxed);
                    continue;
                }
                let alive = self.sleep(self.tx, SPACE)?;
                idx.space_waiting.store(0, Ordering::Relaxed);
                if !alive {
                    return Err(io::Error::new(
                        io::ErrorKind::BrokenPipe,
                        "the byte channel's peer closed it or exited",
                    ));
                }
                continue;
            }
            let n = (free as usize).min(total - done);
            let mut at = tail;
            from.take(parts, n, |piece| {
                // SAFETY: we are ring tx's producer and own [tail, tail + n) because
                // n ≤ free = head + capacity - tail (rule 9); the pieces are the next
                // n bytes of the parts, written from `tail` on, one after another.
                unsafe { self.view.write_data(self.tx, at, piece) };
                at = at.wrapping_add(piece.len() as u64);
            });
            let tail = tail.wrapping_add(n as u64);
            self.tx_tail.store(tail, PrivateOrdering::Relaxed);
            idx.tail.store(tail, Ordering::Release);
            fence(Ordering::SeqCst);
            if idx.data_waiting.load(Ordering::Relaxed) == 1 {
                self.bells.ring(self.tx, DATA);
            }
            done += n;
        }
        Ok(())
    }

    /// Closes the channel both ways: blocked calls on both sides return. Idempotent.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.bells.hang_up();
    }
}

/// How far a send has come through its parts: the part it is in, and the offset in it.
#[derive(Default)]
struct PartsCursor {
    part: usize,
    offset: usize,
}

impl PartsCursor {
    /// Hands `each` the next `n` bytes of `parts` (which must hold that many more), as
    /// non-empty pieces of the parts in order, and moves past them.
    fn take(&mut self, parts: &[&[u8]], mut n: usize, mut each: impl FnMut(&[u8])) {
        while n > 0 {
            let rest = &parts[self.part][self.offset..];
            let piece = &rest[..rest.len().min(n)];
            n -= piece.len();
            self.offset += piece.len();
            if self.offset == parts[self.part].len() {
                self.part += 1;
                self.offset = 0;
            }
            if !piece.is_empty() {
                each(piece);
            }
        }
    }
}
