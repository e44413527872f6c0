//! Where the progress thread leaves arrivals for the poll loop (unified polling: the
//! network side deposits into memory the poll loop reads).
//!
//! Rules:
//! 1. Only the progress thread pushes (and the sending thread, for a connection it
//!    found broken); only the transport's owner takes.
//! 2. `count` and `bytes` change only under the lock, with the queue; `count` is
//!    published with `SeqCst` (rule 5; it includes `Release`), so a taker that loads
//!    it non-zero finds the items under the lock. An empty poll is one atomic load.
//! 3. The taker takes everything at once (one lock per batch, not per packet).
//! 4. Memory is bounded: the progress thread stops reading sockets while `bytes`
//!    exceeds the limit (then TCP's own window stops the sender), after announcing it
//!    in `stalled`; the taker wakes it after taking. Each side puts a `SeqCst` fence
//!    between its store and its load of the other's word, so one of them always sees
//!    the other (a stall is never missed; model-checked in `loom_tests.rs`, which
//!    cannot check `SeqCst` loads and stores alone).
//! 5. A push rings the bell of a parked taker (`park.rs`, step 2), after publishing
//!    `count` and a `SeqCst` fence.

use std::collections::VecDeque;

use super::park::Bell;
use super::rx::Deposit;
use super::sync::{fence, lock, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use super::TcpPacket;
use crate::error::TransportError;

/// One arrival: a packet, or the news that a connection broke.
pub(crate) type Arrival = Result<TcpPacket, TransportError>;

struct Queue<A> {
    items: VecDeque<A>,
    bytes: usize,
}

/// The arrival queue shared by the progress thread and the poll loop (of
/// [`Arrival`]s; of plain numbers in the loom model, `loom_tests.rs`).
pub(crate) struct Inbox<A = Arrival> {
    queue: Mutex<Queue<A>>,
    count: AtomicUsize,
    bytes: AtomicUsize,
    stalled: AtomicBool,
    /// Packets the progress thread read and deposited here, ever (for `stats`).
    pub(crate) relayed: AtomicU64,
    /// Wakes the taker when it is parked (rule 5).
    pub(crate) bell: Bell,
}

impl<A> Inbox<A> {
    /// An empty inbox.
    pub(crate) fn new() -> std::io::Result<Inbox<A>> {
        Ok(Inbox {
            queue: Mutex::new(Queue {
                items: VecDeque::new(),
                bytes: 0,
            }),
            count: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            stalled: AtomicBool::new(false),
            relayed: AtomicU64::new(0),
            bell: Bell::new()?,
        })
    }

    /// Whether arrivals wait to be taken (rule 5's check, `SeqCst`).
    pub(crate) fn waiting(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// Appends `batch` (emptying it); `bytes` is the sum of its packets' sizes.
    pub(crate) fn push(&self, batch: &mut Vec<A>, bytes: usize) {
        if batch.is_empty() {
            return;
        }
        let n = batch.len();
        let mut q = lock(&self.queue);
        q.items.extend(batch.drain(..));
        q.bytes += bytes;
        self.bytes.fetch_add(bytes, Ordering::SeqCst);
        self.count.fetch_add(n, Ordering::SeqCst);
        drop(q);
        self.bell.ring_if_parked();
    }

    /// Moves every queued arrival to the back of `into`. Returns whether the progress
    /// thread waits to be woken (it stalled on a full inbox).
    pub(crate) fn take_all(&self, into: &mut VecDeque<A>) -> bool {
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        {
            let mut q = lock(&self.queue);
            let n = q.items.len();
            if into.is_empty() {
                std::mem::swap(&mut q.items, into);
            } else {
                into.extend(q.items.drain(..));
            }
            self.count.fetch_sub(n, Ordering::Relaxed);
            self.bytes
                .fetch_sub(std::mem::take(&mut q.bytes), Ordering::SeqCst);
        }
        // Rule 4: the stall announced before the fence in `stall` is seen here, or
        // our drain is seen there.
        fence(Ordering::SeqCst);
        self.stalled.load(Ordering::Relaxed) && self.stalled.swap(false, Ordering::SeqCst)
    }

    /// Whether more than `limit` bytes wait to be taken.
    pub(crate) fn over(&self, limit: usize) -> bool {
        self.bytes.load(Ordering::SeqCst) > limit
    }

    /// The progress thread is about to stop reading because the inbox is over `limit`:
    /// announces it, then re-checks. Returns false if the taker drained the inbox in
    /// between (keep reading), true if the thread must wait to be woken.
    pub(crate) fn stall(&self, limit: usize) -> bool {
        self.stalled.store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if self.bytes.load(Ordering::Relaxed) > limit {
            return true;
        }
        self.stalled.store(false, Ordering::SeqCst);
        false
    }
}

impl Deposit for &Inbox {
    fn deposit(&mut self, batch: &mut Vec<Arrival>, bytes: usize) {
        if !batch.is_empty() {
            self.relayed
                .fetch_add(batch.len() as u64, Ordering::Relaxed);
        }
        self.push(batch, bytes);
    }

    fn over(&self, limit: usize) -> bool {
        Inbox::over(self, limit)
    }
}

/// The owner's own queue, for packets it reads directly (it takes them itself, so it
/// is never over a limit: it reads only when the queue is empty, one budget at most).
impl Deposit for VecDeque<Arrival> {
    fn deposit(&mut self, batch: &mut Vec<Arrival>, _bytes: usize) {
        self.extend(batch.drain(..));
    }

    fn over(&self, _limit: usize) -> bool {
        false
    }
}
