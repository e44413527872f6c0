//! The symmetric heap's allocator: offsets into each PE's part of one collective
//! allocation.
//!
//! Rules:
//! 1. Deterministic: the result depends only on the sequence of calls, so PEs that
//!    make the same calls in the same order (the specification makes them
//!    collective) get the same offsets; no PE ever tells another its offsets.
//! 2. First fit in offset order; every block starts at a multiple of its alignment
//!    (at least [`MIN_ALIGN`], so every atomic type is aligned) and its length is
//!    rounded up to a multiple of [`MIN_ALIGN`].
//! 3. Freed blocks merge with free neighbours, so freed ranges are reused whole.

use std::collections::BTreeMap;

/// Smallest alignment and length granule of a block: a cache line.
pub const MIN_ALIGN: usize = 64;

/// A block offset that is not the start of a live block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("offset {0:#x} is not the start of a live symmetric heap block")]
pub struct NotABlock(pub usize);

/// Free and used ranges of one PE's part of the heap (the same on every PE).
#[derive(Debug, Clone)]
pub struct Heap {
    size: usize,
    /// Free ranges: offset → length; never two adjacent.
    free: BTreeMap<usize, usize>,
    /// Live blocks: offset → length.
    used: BTreeMap<usize, usize>,
}

impl Heap {
    /// A heap of `size` bytes, all free.
    pub fn new(size: usize) -> Heap {
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(0, size);
        }
        Heap {
            size,
            free,
            used: BTreeMap::new(),
        }
    }

    /// Bytes in all.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The granule-rounded length a request of `bytes` takes.
    pub fn rounded(bytes: usize) -> Option<usize> {
        bytes.max(1).checked_next_multiple_of(MIN_ALIGN)
    }

    /// The offset of a new block of `bytes` aligned to `align` (a power of two), or
    /// `None` when no free range holds it.
    pub fn alloc(&mut self, bytes: usize, align: usize) -> Option<usize> {
        let len = Self::rounded(bytes)?;
        let align = align.max(MIN_ALIGN);
        let (start, o, l) = self.free.iter().find_map(|(&o, &l)| {
            let start = o.checked_next_multiple_of(align)?;
            (start.checked_add(len)? <= o + l).then_some((start, o, l))
        })?;
        self.free.remove(&o);
        if start > o {
            self.free.insert(o, start - o);
        }
        if start + len < o + l {
            self.free.insert(start + len, o + l - start - len);
        }
        self.used.insert(start, len);
        Some(start)
    }

    /// Length of the live block at `off`.
    pub fn len_of(&self, off: usize) -> Option<usize> {
        self.used.get(&off).copied()
    }

    /// Frees the block at `off`; returns its length.
    pub fn free(&mut self, off: usize) -> Result<usize, NotABlock> {
        let len = self.used.remove(&off).ok_or(NotABlock(off))?;
        let (mut start, mut end) = (off, off + len);
        if let Some((&po, &pl)) = self.free.range(..off).next_back() {
            if po + pl == off {
                self.free.remove(&po);
                start = po;
            }
        }
        if let Some(nl) = self.free.remove(&end) {
            end += nl;
        }
        self.free.insert(start, end - start);
        Ok(len)
    }

    /// The largest free range (for error messages).
    pub fn largest_free(&self) -> usize {
        self.free.values().copied().max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_and_do_not_overlap() {
        let mut h = Heap::new(1 << 20);
        let a = h.alloc(1, 1).unwrap();
        let b = h.alloc(100, 8).unwrap();
        let c = h.alloc(10, 4096).unwrap();
        assert_eq!((a, b), (0, 64));
        assert_eq!(c % 4096, 0);
        assert!(b + 128 <= c);
        assert_eq!(h.len_of(b), Some(128));
    }

    #[test]
    fn freed_ranges_merge_and_are_reused() {
        let mut h = Heap::new(4096);
        let a = h.alloc(1024, 1).unwrap();
        let b = h.alloc(1024, 1).unwrap();
        let c = h.alloc(1024, 1).unwrap();
        h.free(a).unwrap();
        h.free(b).unwrap();
        // a and b merged: a 2048-byte block fits where they were.
        assert_eq!(h.alloc(2048, 1), Some(a));
        h.free(c).unwrap();
        assert_eq!(h.largest_free(), 2048);
        assert_eq!(h.free(c), Err(NotABlock(c)));
    }

    #[test]
    fn too_big_is_none_and_changes_nothing() {
        let mut h = Heap::new(4096);
        assert_eq!(h.alloc(4097, 1), None);
        assert_eq!(h.alloc(usize::MAX, 1), None);
        assert_eq!(h.alloc(4096, 1), Some(0));
        assert_eq!(h.alloc(1, 1), None);
    }

    #[test]
    fn the_same_calls_give_the_same_offsets() {
        let run = || {
            let mut h = Heap::new(1 << 16);
            let mut got = Vec::new();
            for i in 1..50usize {
                got.push(h.alloc(i * 37, 1 << (i % 8)).unwrap());
                if i % 3 == 0 {
                    h.free(got[i / 2]).ok();
                }
            }
            got
        };
        assert_eq!(run(), run());
    }
}
