//! Recycled buffers for large packets.
//!
//! A large frame is read straight into its packet's buffer. Taking that buffer from
//! here, and giving it back when the packet is dropped, means the progress thread
//! reads into memory that is already mapped and initialised: no allocation, no
//! zeroing, no page faults per packet. Small packets are allocated as they come.

use std::sync::Mutex;

use super::inbox::lock;

/// Buffers kept for reuse at most.
const KEEP: usize = 16;
/// Bytes kept for reuse at most (a packet may be as large as `max_payload`).
const KEEP_BYTES: usize = 32 << 20;

#[derive(Default)]
struct Spare {
    bufs: Vec<Vec<u8>>,
    bytes: usize,
}

/// A stack of spare packet buffers shared by the progress thread and the packets.
#[derive(Default)]
pub(crate) struct Pool {
    spare: Mutex<Spare>,
}

impl Pool {
    /// A buffer of at least `len` bytes (contents unspecified; only bytes never used
    /// before are zeroed).
    pub(crate) fn take(&self, len: usize) -> Vec<u8> {
        let mut buf = {
            let mut spare = lock(&self.spare);
            let buf = spare.bufs.pop().unwrap_or_default();
            spare.bytes -= buf.len();
            buf
        };
        if buf.len() < len {
            buf.resize(len, 0);
        }
        buf
    }

    /// Returns a buffer for reuse (dropped if enough are kept already).
    pub(crate) fn give(&self, buf: Vec<u8>) {
        let mut spare = lock(&self.spare);
        if spare.bufs.len() < KEEP && spare.bytes + buf.len() <= KEEP_BYTES {
            spare.bytes += buf.len();
            spare.bufs.push(buf);
        }
    }
}
