//! The segment table: every proc's live segments, by address in *that* proc's space.
//!
//! Remote addresses of different procs may be numerically equal (each names its own
//! address space), so there is one sorted list per proc. An entry knows where the
//! segment is mapped in this process when its proc shares our domain, which is how
//! `(proc, remote address)` becomes a local pointer.

use nf_transport::rma::RemoteRegion;

/// One proc's segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seg {
    /// Address of byte 0 in the owner's space.
    pub base: u64,
    /// Length in bytes (> 0).
    pub len: u64,
    /// Address of byte 0 in this process, if mapped here (0 otherwise).
    pub mapped: usize,
    /// How the owner's ofi endpoint names the segment, when we reach it natively.
    pub ofi: Option<RemoteRegion>,
}

impl Seg {
    /// Whether `addr .. addr + len` lies inside the segment.
    pub(crate) fn contains(&self, addr: u64, len: u64) -> bool {
        addr >= self.base && len <= self.len && addr - self.base <= self.len - len
    }

    /// The local pointer for owner address `addr` (inside the segment, and mapped).
    pub(crate) fn local(&self, addr: u64) -> *mut u8 {
        debug_assert!(self.mapped != 0 && self.contains(addr, 0));
        (self.mapped + (addr - self.base) as usize) as *mut u8
    }
}

/// Every proc's segments.
pub(crate) struct Table {
    procs: Vec<Vec<Seg>>,
}

impl Table {
    /// An empty table for `size` procs.
    pub(crate) fn new(size: usize) -> Table {
        Table {
            procs: vec![Vec::new(); size],
        }
    }

    /// Adds a segment of `proc`.
    pub(crate) fn insert(&mut self, proc: usize, seg: Seg) {
        let list = &mut self.procs[proc];
        let at = list.partition_point(|s| s.base < seg.base);
        list.insert(at, seg);
    }

    /// Removes the segment of `proc` starting at `base`.
    pub(crate) fn remove(&mut self, proc: usize, base: u64) -> Option<Seg> {
        let list = &mut self.procs[proc];
        let at = list.iter().position(|s| s.base == base)?;
        Some(list.remove(at))
    }

    /// The segment of `proc` holding all of `addr .. addr + len`.
    pub(crate) fn find(&self, proc: usize, addr: u64, len: u64) -> Option<Seg> {
        let list = self.procs.get(proc)?;
        let at = list.partition_point(|s| s.base <= addr);
        let seg = *list.get(at.checked_sub(1)?)?;
        seg.contains(addr, len).then_some(seg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_found_only_inside_one_segment() {
        let mut t = Table::new(2);
        t.insert(
            1,
            Seg {
                base: 0x2000,
                len: 0x1000,
                mapped: 0x9000,
                ofi: None,
            },
        );
        t.insert(
            1,
            Seg {
                base: 0x1000,
                len: 0x1000,
                mapped: 0,
                ofi: None,
            },
        );
        assert_eq!(t.find(1, 0x1000, 0x1000).map(|s| s.base), Some(0x1000));
        assert_eq!(t.find(1, 0x2ff8, 8).map(|s| s.base), Some(0x2000));
        assert_eq!(t.find(1, 0x1ff8, 16), None, "straddles two segments");
        assert_eq!(t.find(1, 0x3000, 1), None);
        assert_eq!(t.find(1, 0xfff, 1), None);
        assert_eq!(t.find(0, 0x1000, 1), None, "another proc's space");
        assert_eq!(t.find(1, u64::MAX, 2), None);
        assert_eq!(t.find(1, 0x2010, 8).unwrap().local(0x2010) as usize, 0x9010);
        assert!(t.remove(1, 0x2000).is_some());
        assert_eq!(t.find(1, 0x2000, 1), None);
    }
}
