//! Memory the provider reads and writes: received packets in the receive pool
//! (rules 2 and 4 of `ffi/mod.rs`) and registered regions (rules 5 and 6).

use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::{lock, Handle, RawIov, RawMr};

/// The receive pool as seen by packets: memory to read and a queue of buffers to re-post.
pub(super) struct RxShared {
    /// Keeps the pool (and endpoint) alive while packets use it (rule 2).
    pub(super) _handle: Arc<Handle>,
    pub(super) base: *const u8,
    pub(super) buf_size: usize,
    /// Indices of dropped `RxBuf`s, waiting for the owner to re-post them.
    pub(super) returned: Mutex<Vec<u32>>,
    /// `returned.len()`, readable without the lock.
    pub(super) count: AtomicUsize,
}

// SAFETY: `base` points into the pool, which lives as long as `handle`; a buffer is read
// through it only by the single `RxBuf` that owns it (rule 4).
unsafe impl Send for RxShared {}
// SAFETY: as above; `returned` and `count` are synchronised.
unsafe impl Sync for RxShared {}

/// A received buffer, owned until dropped; then it goes back to be re-posted (rule 4).
pub(crate) struct RxBuf {
    pub(super) pool: Arc<RxShared>,
    pub(super) idx: u32,
    pub(super) len: usize,
}

impl RxBuf {
    /// The bytes received.
    pub(crate) fn bytes(&self) -> &[u8] {
        let off = self.idx as usize * self.pool.buf_size;
        // SAFETY: the buffer `idx` is not posted while this RxBuf exists (rule 4), so
        // nothing writes it; `len <= buf_size` was checked when the RxBuf was made, and
        // `idx < rx_count`, so the range lies inside the pool, which outlives `self`
        // through `pool._handle`.
        unsafe { std::slice::from_raw_parts(self.pool.base.add(off), self.len) }
    }
}

impl Drop for RxBuf {
    fn drop(&mut self) {
        let mut q = lock(&self.pool.returned);
        q.push(self.idx);
        self.pool.count.store(q.len(), Ordering::Release);
    }
}

/// A registered memory region, owned by the transport; its memory lives until the
/// last operation using it has completed (rule 5).
pub(crate) struct Region {
    pub(super) handle: Arc<Handle>,
    pub(super) raw: NonNull<RawMr>,
    pub(super) buf: *mut u8,
    pub(super) len: usize,
    /// The key a peer names this region with.
    pub key: u64,
    /// The remote address of byte 0 (0 when the provider addresses by offset).
    pub base: u64,
}

// SAFETY: the region's memory and registration are reached only through the owning
// transport (`&mut` for writes) or through the provider during an operation, and freed
// once, in `Drop`, after the last operation holding it completed.
unsafe impl Send for Region {}
// SAFETY: shared access only reads the fields above or copies out of the memory.
unsafe impl Sync for Region {}

impl Region {
    /// Size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The local piece `off .. off + len` of the region, if in bounds.
    pub(crate) fn piece(&self, off: usize, len: usize) -> Option<RawIov> {
        (off <= self.len && len <= self.len - off).then(|| RawIov {
            // `wrapping_add` computes the address without dereferencing it; in bounds.
            buf: self.buf.wrapping_add(off),
            len: len as u64,
        })
    }

    /// Copies `out.len()` bytes from offset `off`; false if out of bounds.
    pub(crate) fn read_at(&self, off: usize, out: &mut [u8]) -> bool {
        if off > self.len || out.len() > self.len - off {
            return false;
        }
        // SAFETY: in bounds (checked); the memory is live while `self` is. Bytes an RMA
        // in flight is writing read as unspecified values, as on any RDMA interface.
        unsafe { std::ptr::copy_nonoverlapping(self.buf.add(off), out.as_mut_ptr(), out.len()) }
        true
    }

    /// Copies `data` to offset `off`; false if out of bounds.
    pub(crate) fn write_at(&self, off: usize, data: &[u8]) -> bool {
        if off > self.len || data.len() > self.len - off {
            return false;
        }
        // SAFETY: in bounds (checked); callers reach this only through `&mut` of the
        // owning transport, so no other thread writes it from our side.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.buf.add(off), data.len()) }
        true
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: `raw` came from nf_ofi_mr_alloc (or _reg) and is freed once; no operation uses
        // it any more (each holds an Arc of this region until its completion); the
        // endpoint is still open (we hold `handle`).
        unsafe { (self.handle.shim.mr_free)(self.raw.as_ptr()) }
    }
}
