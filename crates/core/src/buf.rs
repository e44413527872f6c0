//! Receive buffers: recycled, always fully initialised, with a filled length.
//!
//! Large receives reuse buffers so that a multi-megabyte message does not fault in
//! fresh pages every time, and a reused buffer is never zeroed again (it only grows).
//! Keeping every byte initialised lets peers write into it through the kernel and
//! lets us hand out slices without `unsafe`.

/// A message body being received or delivered.
pub(crate) struct RecvBuf {
    bytes: Vec<u8>,
    filled: usize,
}

impl RecvBuf {
    /// A buffer able to hold `total` bytes, reusing `spare`'s allocation.
    pub(crate) fn with_room(mut spare: Vec<u8>, total: usize) -> RecvBuf {
        if spare.len() < total {
            spare.resize(total, 0);
        }
        RecvBuf {
            bytes: spare,
            filled: 0,
        }
    }

    /// A buffer holding a copy of `data`.
    pub(crate) fn copy_of(spare: Vec<u8>, data: &[u8]) -> RecvBuf {
        let mut b = RecvBuf::with_room(spare, data.len());
        b.push(data);
        b
    }

    /// Appends `data`; false (and nothing copied) if it does not fit the room made.
    pub(crate) fn push(&mut self, data: &[u8]) -> bool {
        let end = self.filled + data.len();
        if end > self.bytes.len() {
            return false;
        }
        self.bytes[self.filled..end].copy_from_slice(data);
        self.filled = end;
        true
    }

    /// The bytes received so far.
    pub(crate) fn filled(&self) -> &[u8] {
        &self.bytes[..self.filled]
    }

    /// Room `range` to fill directly (by a single-copy read).
    pub(crate) fn room(&mut self, range: std::ops::Range<usize>) -> &mut [u8] {
        &mut self.bytes[range]
    }

    /// Address of byte `at`, for a peer to write into through the kernel.
    pub(crate) fn addr_of(&self, at: usize) -> u64 {
        self.bytes[at..].as_ptr() as u64
    }

    /// Declares the first `n` bytes filled (after direct reads / peer writes).
    pub(crate) fn set_filled(&mut self, n: usize) {
        self.filled = n.min(self.bytes.len());
    }

    /// The allocation, for reuse.
    pub(crate) fn into_inner(self) -> Vec<u8> {
        self.bytes
    }
}
