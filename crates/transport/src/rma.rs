//! Native one-sided operations (RMA), apart from messaging: a transport whose fabric
//! reads and writes a peer's registered memory itself implements [`NativeRma`] (as
//! Lamellar splits a backend into comm, active-message and RDMA traits). The rma
//! layer's native path (`nf-rma`'s `native/`) is written against this trait only; the
//! core's rendezvous to ranks on ofi routes (`RTS_NET`) reads peers' memory with it.
//!
//! The model, one endpoint shared by the caller and a progress thread:
//! 1. **Memory.** [`NativeRma::register_memory`] makes memory of the caller's reachable
//!    by peers until [`NativeRma::deregister`]; [`NativeRma::remote`] is what a peer
//!    needs to reach it ([`RemoteRegion`], 24 bytes to publish).
//! 2. **Operations.** [`NativeRma::write`] and [`NativeRma::read`] move bytes between
//!    local memory and pieces of peers' regions ([`RemoteSpan`]), each with the
//!    caller's tag; a transport out of resources answers [`SendStatus::NoCredit`]:
//!    drive progress, then retry. A write completes once its bytes are in the target's
//!    memory; a read once they are in ours.
//! 3. **Completions.** [`NativeRma::progress`] reads them (and drives the fabric, which
//!    may move a target's memory only then); they wait, in order, for
//!    [`NativeRma::pop_rma_done`] ([`RmaDone`]: tag, peer, outcome). A failed operation
//!    marks its peer lost.
//! 4. **Sleeping.** A thread may sleep on [`NativeRma::wait_fd`] once
//!    [`NativeRma::trywait`] said yes.
//!
//! Implemented by: `ofi` (`ofi/rma.rs`). Neither `shm` (same-host memory is mapped
//! and copied directly) nor `tcp` has native RMA.

use std::os::fd::RawFd;

use crate::error::TransportError;
use crate::SendStatus;

/// A region registered with this transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionId(usize);

impl RegionId {
    /// The id of a transport's region number `index`.
    pub(crate) fn new(index: usize) -> Self {
        RegionId(index)
    }

    /// The transport's region number.
    pub(crate) fn index(self) -> usize {
        self.0
    }
}

/// How a peer names one of our regions: its remote base address, key and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRegion {
    /// Remote address of byte 0 (0 when the provider addresses regions by offset).
    pub base: u64,
    /// The registration key.
    pub key: u64,
    /// Length in bytes.
    pub len: u64,
}

impl RemoteRegion {
    /// Bytes to publish: base, key, len, little-endian.
    pub fn to_bytes(&self) -> [u8; 24] {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&self.base.to_le_bytes());
        b[8..16].copy_from_slice(&self.key.to_le_bytes());
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b
    }

    /// The inverse of [`RemoteRegion::to_bytes`] (`None` unless exactly 24 bytes).
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let b: &[u8; 24] = b.try_into().ok()?;
        let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        Some(RemoteRegion {
            base: word(0),
            key: word(8),
            len: word(16),
        })
    }
}

/// `len` bytes at offset `off` of a peer's region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteSpan {
    /// The region.
    pub region: RemoteRegion,
    /// Offset of the first byte in it.
    pub off: u64,
    /// Bytes.
    pub len: u64,
}

/// What the provider offers for RMA on this endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RmaCaps {
    /// Local pieces one [`NativeRma::read`] may have.
    pub iov_limit: usize,
    /// Remote pieces one operation may have.
    pub rma_iov_limit: usize,
    /// A read to a peer sees the data of every write issued to it before
    /// (`FI_ORDER_RAW`).
    pub read_after_write: bool,
    /// Writes to a peer land in issue order (`FI_ORDER_WAW`).
    pub write_after_write: bool,
    /// A write to a peer lands after every read issued to it before has read
    /// (`FI_ORDER_WAR`).
    pub write_after_read: bool,
}

/// One finished RMA operation.
#[derive(Debug)]
pub struct RmaDone {
    /// The tag it was issued with.
    pub tag: u64,
    /// The peer.
    pub peer: usize,
    /// `Ok`, or why it failed (the peer is then lost).
    pub result: Result<(), TransportError>,
    /// The bytes a [`NativeRma::write`] took, handed back for reuse.
    pub bytes: Option<Vec<u8>>,
}

/// Native RMA of a transport (the module docs list the steps).
pub trait NativeRma {
    /// What the transport offers for RMA (piece limits, ordering).
    fn rma_caps(&self) -> RmaCaps;

    /// Step 1: registers `len` bytes of the caller's memory at `ptr` for local and
    /// remote access.
    ///
    /// # Safety
    /// The memory must stay mapped until [`NativeRma::deregister`] (or the transport
    /// is dropped) and no operation of ours uses it any more; peers may read and write
    /// it meanwhile.
    unsafe fn register_memory(
        &mut self,
        ptr: *mut u8,
        len: usize,
    ) -> Result<RegionId, TransportError>;

    /// Step 1: what a peer needs to reach region `id`.
    fn remote(&self, id: RegionId) -> Result<RemoteRegion, TransportError>;

    /// Step 1: forgets region `id` (deregistered when no operation uses it any more).
    fn deregister(&mut self, id: RegionId) -> Result<(), TransportError>;

    /// Step 2: writes `data` (taken, leaving it empty, once the write is issued) to the
    /// pieces `to` of `dest`'s regions, in order; their lengths must add up to
    /// `data.len()`. `NoCredit` leaves `data` as it was.
    fn write(
        &mut self,
        dest: usize,
        data: &mut Vec<u8>,
        to: &[RemoteSpan],
        tag: u64,
    ) -> Result<SendStatus, TransportError>;

    /// Step 2: reads the pieces `from` of `dest`'s regions, in order, into the local
    /// pieces `into` (at most [`RmaCaps::iov_limit`]), whose lengths add up to the same.
    ///
    /// # Safety
    /// Every local piece must be valid for writes, and touched by no one else, until
    /// this operation's completion is popped or the transport is dropped.
    unsafe fn read(
        &mut self,
        dest: usize,
        into: &[(*mut u8, usize)],
        from: &[RemoteSpan],
        tag: u64,
    ) -> Result<SendStatus, TransportError>;

    /// Step 3: reads completions, driving the fabric's progress; returns how many.
    fn progress(&mut self) -> Result<usize, TransportError>;

    /// Step 3: the next finished operation, in completion order.
    fn pop_rma_done(&mut self) -> Option<RmaDone>;

    /// Step 3: whether finished operations wait to be popped.
    fn rma_done_waiting(&self) -> bool;

    /// Step 3: counts operations stuck in flight past the transport's dead-peer limit
    /// as failed (for callers that only sleep and pop).
    fn expire_stuck(&mut self);

    /// Step 4: the completion queue's wait object, if it has one.
    fn wait_fd(&self) -> Option<RawFd>;

    /// Step 4: whether a thread may sleep on [`NativeRma::wait_fd`] now; `false`
    /// means: read completions ([`NativeRma::progress`]) first.
    fn trywait(&mut self) -> Result<bool, TransportError>;
}
