//! Native RMA: put and get to other domains with a transport's native one-sided
//! operations ([`NativeRma`]: the ofi transport's `fi_write` / `fi_read`), where every
//! end has them; otherwise the target's service thread applies the request
//! (`service/`), so either way the target makes progress without calling the library.
//!
//! **Start-up** (`setup.rs`, step 6 of `rma.rs`): each proc with remote peers opens
//! one ofi endpoint of its own for RMA (`FI_RMA`, a completion queue with a wait fd),
//! and publishes its address — or why it has none — in an allgather. Put and get to
//! proc `p` go native when `p` is in another domain and both ends have an endpoint;
//! `NF_RMA_OFI` chooses (`auto`, `on`, `off`).
//!
//! **Target side.** Every segment is registered with our endpoint when it is allocated
//! (`fi_mr_reg` on the shared mapping; `api/alloc.rs`), its key travels in the
//! allocation's allgather, and it is deregistered before it is unmapped. The provider
//! then writes and reads it — but with manual progress (the tcp provider) only while
//! someone reads our completion queue. That is the progress thread's job
//! (`progress.rs`): it sleeps on the queue's wait fd and reads the queue whenever the fd
//! says something happened, so the target's own thread never has to call the library
//! (asynchronous progress).
//!
//! **Origin side** ([`Native::issue`]): the chunks of a shape, cut at `NF_RMA_CHUNK`,
//! are grouped into operations of at most `rma_iov_limit` remote pieces (and, for a
//! get, as many local pieces, up to `iov_limit`); neighbouring pieces merge.
//! - A put copies its bytes into the operation (the transport keeps them until the
//!   completion), so it is locally complete on return, as on the service path. The
//!   write is issued with `FI_DELIVERY_COMPLETE`: its completion means the bytes are
//!   in the target's memory, so a fence waits until no write to that proc is in
//!   flight. Copied bytes in flight are bounded ([`STAGED_HIGH`]).
//! - A get reads straight into the caller's memory; each operation is a piece of its
//!   handle and completes it when done.
//! - Completions are read by whichever thread gets the endpoint's lock first; the
//!   progress thread signals an eventfd when it has read some, so a waiting origin
//!   sleeps on that (`wake_fd`) instead of on the provider.
//!
//! **Order per target.** Native operations to one proc keep issue order where the
//! provider promises it (`FI_ORDER_RAW`, `FI_ORDER_WAW`, `FI_ORDER_WAR`); where it does
//! not, an operation waits for the earlier ones it could overtake. Between the two
//! paths (`origin/native.rs`): a native operation to `p` first fences the service
//! requests to `p`, and a service request to `p` first waits for every native
//! operation to `p`.
//!
//! **What stays on the service path:** accumulate, rmw and mutexes. They must be
//! atomic with respect to each other whether they run in a same-domain origin or in
//! the target's service thread, which they are because both take the same stripe
//! locks and atomic words in the target's control segment (`shm/control.rs`); the
//! provider's atomics could not take those locks.
//!
//! **Faults.** A failed operation (the provider saw the peer go) completes with the
//! peer's loss, which the origin turns into [`RmaError::PeerLost`] for everything to
//! that proc; operations that stay in flight for `NF_DEAD_AFTER_MS` count as failed.

mod progress;
mod setup;

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use nf_transport::ofi::OfiTransport;
use nf_transport::rma::{NativeRma, RegionId, RemoteRegion, RemoteSpan, RmaCaps};
use nf_transport::{SendStatus, TransportError};

pub(crate) use setup::{setup, worth_opening};

use crate::error::RmaError;
use crate::shape::{for_each_chunk, Chunk};
use crate::table::Seg;
use crate::xfer::Shape;
use progress::Progress;

/// Copied put bytes in flight before the origin waits for completions.
pub(crate) const STAGED_HIGH: usize = 8 << 20;
/// Spare put buffers kept for reuse (a fresh one costs an allocation and, when large,
/// a page fault per page).
const POOL_MAX: usize = 8;
/// How long an origin that cannot issue (no free slot, or the provider's `EAGAIN`)
/// sleeps before trying again, at most.
const RETRY_SLEEP: Duration = Duration::from_millis(1);

/// What an operation in flight is for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum NativeOp {
    /// A get's piece of handle `handle`.
    Read { proc: usize, handle: u64 },
    /// A put of `bytes` copied bytes.
    Write { proc: usize, bytes: usize },
}

impl NativeOp {
    /// The proc it goes to.
    pub(crate) fn proc(&self) -> usize {
        match *self {
            NativeOp::Read { proc, .. } | NativeOp::Write { proc, .. } => proc,
        }
    }
}

/// A finished operation, for the origin to account (`origin/native.rs`).
pub(crate) struct Done {
    pub op: NativeOp,
    pub result: Result<(), TransportError>,
}

/// Locks the endpoint, whatever a panicking holder left (the transport's state is
/// consistent between calls).
fn lock<E>(ep: &Mutex<E>) -> MutexGuard<'_, E> {
    ep.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This proc's native RMA: its endpoint (shared with the progress thread), the routes,
/// and what is in flight. Written against [`NativeRma`]; the endpoint `setup` opens is
/// the ofi transport's.
pub(crate) struct Native<E = OfiTransport> {
    ep: Arc<Mutex<E>>,
    /// Stopped and joined when dropped, before the endpoint goes.
    progress: Progress,
    /// Procs reached natively.
    route: Vec<bool>,
    caps: RmaCaps,
    chunk: usize,
    next_tag: u64,
    ops: HashMap<u64, NativeOp>,
    /// Reads and writes in flight per proc.
    reads: Vec<usize>,
    writes: Vec<usize>,
    /// Copied put bytes in flight.
    staged: usize,
    /// Spare put buffers, handed back by completed writes.
    pool: Vec<Vec<u8>>,
    /// Finished operations not yet taken by the origin.
    done: Vec<Done>,
}

/// One operation under construction.
#[derive(Default)]
struct Op {
    remote: Vec<RemoteSpan>,
    local: Vec<(*mut u8, usize)>,
    data: Vec<u8>,
    bytes: usize,
}

impl<E: NativeRma> Native<E> {
    /// Whether put and get to `proc` go native.
    pub(crate) fn routes(&self, proc: usize) -> bool {
        self.route.get(proc).copied().unwrap_or(false)
    }

    /// Operations in flight (to `proc`, or to anyone).
    pub(crate) fn in_flight(&self, proc: Option<usize>) -> usize {
        match proc {
            Some(p) => self.reads[p] + self.writes[p],
            None => self.ops.len(),
        }
    }

    /// Writes in flight to `proc`: not yet remotely complete.
    pub(crate) fn writes_to(&self, proc: usize) -> usize {
        self.writes[proc]
    }

    /// The fd a waiting origin sleeps on (readable once completions were read).
    pub(crate) fn wake_fd(&self) -> RawFd {
        self.progress.handoff().wake_fd()
    }

    /// This proc's thread starts driving the endpoint itself (spinning in a wait;
    /// see `progress.rs`).
    pub(crate) fn begin_drive(&self) {
        self.progress.handoff().begin_drive();
    }

    /// This proc's thread stops driving, to sleep or to return to its work.
    pub(crate) fn end_drive(&self, sleeping: bool) {
        self.progress.handoff().end_drive(sleeping);
    }

    /// Registers our segment at `ptr` (`len` bytes) with the endpoint; returns the
    /// region and how peers name it.
    ///
    /// # Safety
    /// The segment must stay mapped until [`Native::deregister`] of the region.
    pub(crate) unsafe fn register(
        &self,
        ptr: *mut u8,
        len: usize,
    ) -> Result<(RegionId, RemoteRegion), RmaError> {
        let mut ep = lock(&self.ep);
        // SAFETY: forwarded from the caller.
        let id = unsafe { ep.register_memory(ptr, len) }.map_err(|e| RmaError::Core(e.into()))?;
        let remote = ep.remote(id).map_err(|e| RmaError::Core(e.into()))?;
        Ok((id, remote))
    }

    /// Forgets a segment's registration (before it is unmapped).
    pub(crate) fn deregister(&self, id: RegionId) {
        if let Err(e) = lock(&self.ep).deregister(id) {
            tracing::warn!("rma: deregistering a segment: {e}");
        }
    }

    /// Reads completions into `done` (never blocks); clears the wake-up signal first,
    /// so a signal after this is for completions this call did not see.
    pub(crate) fn pump(&mut self) {
        self.progress.handoff().clear_wake();
        let mut ep = lock(&self.ep);
        if let Err(e) = ep.progress() {
            tracing::warn!("rma: reading the ofi completion queue: {e}");
        }
        while let Some(d) = ep.pop_rma_done() {
            let Some(op) = self.ops.remove(&d.tag) else {
                tracing::warn!(tag = d.tag, "rma: completion of no native operation");
                continue;
            };
            match op {
                NativeOp::Read { proc, .. } => self.reads[proc] -= 1,
                NativeOp::Write { proc, bytes } => {
                    self.writes[proc] -= 1;
                    self.staged -= bytes;
                }
            }
            if let Some(mut b) = d.bytes.filter(|_| self.pool.len() < POOL_MAX) {
                b.clear();
                self.pool.push(b);
            }
            self.done.push(Done {
                op,
                result: d.result,
            });
        }
    }

    /// Finished operations since the last call.
    pub(crate) fn take_done(&mut self) -> Vec<Done> {
        std::mem::take(&mut self.done)
    }

    /// Loses the procs whose operations have been stuck for `dead_after`.
    pub(crate) fn expire_stuck(&self) {
        lock(&self.ep).expire_stuck();
    }

    /// Sleeps until completions may have been read, at most `at_most` (the progress
    /// thread drives meanwhile).
    fn nap(&self, at_most: Duration) {
        self.end_drive(true);
        progress::sleep_on(&[self.wake_fd()], at_most);
    }

    /// Pumps until `ready` holds or `proc` is lost (its operations then fail).
    fn settle(&mut self, proc: usize, ready: impl Fn(&Self) -> bool) {
        while !ready(self) && self.in_flight(Some(proc)) > 0 {
            self.pump();
            if !ready(self) {
                self.expire_stuck();
                self.nap(RETRY_SLEEP);
            }
        }
    }

    /// Issues the chunks of a checked put (`write`) or get to `proc`, its remote side
    /// resolved by `find`; each get operation issued is reported to `on_piece` (a piece
    /// of handle `h`).
    ///
    /// # Safety
    /// The local memory of `shape` must be valid: for a put during this call, for a
    /// get until its pieces complete.
    pub(crate) unsafe fn issue(
        &mut self,
        proc: usize,
        write: bool,
        shape: &Shape<'_>,
        h: u64,
        find: impl Fn(u64, u64) -> Option<Seg>,
        mut on_piece: impl FnMut(),
    ) -> Result<(), RmaError> {
        let caps = self.caps;
        if write {
            let waw = !caps.write_after_write;
            let war = !caps.write_after_read;
            self.settle(proc, |n| {
                (!waw || n.writes[proc] == 0) && (!war || n.reads[proc] == 0)
            });
        } else if !caps.read_after_write {
            self.settle(proc, |n| n.writes[proc] == 0);
        }
        let max_pieces = if write {
            caps.rma_iov_limit
        } else {
            caps.rma_iov_limit.min(caps.iov_limit)
        };
        let chunk = self.chunk;
        let mut op = self.fresh_op(write);
        for_each_chunk(shape, |c: Chunk| {
            let mut off = 0;
            while off < c.len {
                let len = (c.len - off).min(chunk - op.bytes);
                let addr = c.remote + off as u64;
                let seg = find(addr, len as u64).ok_or_else(|| RmaError::Protocol {
                    proc,
                    why: format!("no segment holds {addr:#x}+{len} (checked before)"),
                })?;
                let region = seg.ofi.ok_or_else(|| RmaError::Protocol {
                    proc,
                    why: "its segment has no ofi registration".into(),
                })?;
                let local = c.local.wrapping_add(off);
                op.add(region, addr - seg.base, local, len, write);
                off += len;
                if op.bytes == chunk || op.remote.len() == max_pieces {
                    let full = std::mem::replace(&mut op, self.fresh_op(write));
                    // SAFETY: forwarded from the caller.
                    unsafe { self.issue_op(proc, write, full, h) }?;
                    if !write {
                        on_piece();
                    }
                }
            }
            Ok::<(), RmaError>(())
        })?;
        if op.bytes > 0 {
            // SAFETY: forwarded from the caller.
            unsafe { self.issue_op(proc, write, op, h) }?;
            if !write {
                on_piece();
            }
        }
        Ok(())
    }

    /// An empty operation; a put's with a spare buffer.
    fn fresh_op(&mut self, write: bool) -> Op {
        let data = if write {
            self.pool.pop().unwrap_or_default()
        } else {
            Vec::new()
        };
        Op {
            data,
            ..Op::default()
        }
    }

    /// Issues one operation, waiting (pumping) while the transport has no room.
    ///
    /// # Safety
    /// As for [`Native::issue`].
    unsafe fn issue_op(
        &mut self,
        proc: usize,
        write: bool,
        mut op: Op,
        h: u64,
    ) -> Result<(), RmaError> {
        if write && self.staged > STAGED_HIGH {
            while self.staged > STAGED_HIGH / 2 {
                self.pump();
                self.expire_stuck();
                self.nap(RETRY_SLEEP);
            }
        }
        let tag = self.next_tag;
        self.next_tag += 1;
        let bytes = op.bytes;
        loop {
            let status = {
                let mut ep = lock(&self.ep);
                if write {
                    ep.write(proc, &mut op.data, &op.remote, tag)
                } else {
                    // SAFETY: the caller keeps the get's local memory valid until its
                    // pieces complete.
                    unsafe { ep.read(proc, &op.local, &op.remote, tag) }
                }
            };
            match status.map_err(|e| lost_or(proc, e))? {
                SendStatus::Sent => break,
                SendStatus::NoCredit => {
                    self.pump();
                    self.nap(RETRY_SLEEP);
                }
            }
        }
        let native = if write {
            self.writes[proc] += 1;
            self.staged += bytes;
            NativeOp::Write { proc, bytes }
        } else {
            self.reads[proc] += 1;
            NativeOp::Read { proc, handle: h }
        };
        self.ops.insert(tag, native);
        Ok(())
    }
}

impl Op {
    /// Appends `len` bytes at offset `off` of `region` (and, for a put, copies them
    /// from `local`), merging with the previous piece where both sides continue it.
    fn add(&mut self, region: RemoteRegion, off: u64, local: *mut u8, len: usize, write: bool) {
        if write {
            // SAFETY: the caller of `issue` vouches for the put's local memory.
            let src = unsafe { std::slice::from_raw_parts(local as *const u8, len) };
            self.data.extend_from_slice(src);
        }
        self.bytes += len;
        let joins_remote = self
            .remote
            .last()
            .is_some_and(|r| r.region == region && r.off + r.len == off);
        let joins_local = write
            || self
                .local
                .last()
                .is_some_and(|&(p, l)| p.wrapping_add(l) == local);
        if joins_remote && joins_local {
            self.remote.last_mut().expect("checked").len += len as u64;
            if let Some(l) = self.local.last_mut().filter(|_| !write) {
                l.1 += len;
            }
            return;
        }
        self.remote.push(RemoteSpan {
            region,
            off,
            len: len as u64,
        });
        if !write {
            self.local.push((local, len));
        }
    }
}

/// A transport error of an operation to `proc`: its loss, or what else failed.
pub(crate) fn lost_or(proc: usize, e: TransportError) -> RmaError {
    match e {
        TransportError::PeerLost { why, .. } => RmaError::PeerLost { proc, why },
        other => RmaError::Core(other.into()),
    }
}
