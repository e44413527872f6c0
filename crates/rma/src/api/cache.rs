//! Freed allocations kept mapped, so that the next allocation of the same sizes over
//! the same team costs one allgather and a barrier instead of creating, exchanging,
//! mapping and unlinking segment files.
//!
//! Global Arrays allocates and frees a segment for every array it creates, temporaries
//! included, mostly of sizes it used before; a fresh allocation costs three allgathers,
//! a file per member, a mapping per domain peer and the room check's reads of
//! `/proc` and the cgroup files.
//!
//! Rules (why every member makes the same choice without talking about it):
//! 1. The cache is kept per team, keyed by its members' world ranks in team order.
//!    `malloc` and `free` synchronise every member of their team (allgathers and a
//!    barrier), so for one membership every member sees the same sequence of
//!    allocations and frees — two teams of the same members called in different
//!    orders would deadlock first.
//! 2. Everything that decides — which entry is taken, which ones are dropped — depends
//!    only on that team's sequence and on numbers every member knows alike (the sizes
//!    every member asked for), never on this proc's own totals: so every member's
//!    cache of a team holds the same entries in the same order.
//! 3. `free` keeps an allocation (never an adopted one: every member knows it was,
//!    since `adopt` is collective) whose total over the team is at most [`KEEP_ALLOC`];
//!    a team's cache holds at most [`KEEP_COUNT`] entries and [`KEEP_BYTES`] in all,
//!    the oldest going first.
//! 4. `malloc` of the same sizes takes the newest match: each member zeroes its own
//!    part (the memory starts zeroed, as a fresh one does), enters it again in the
//!    segment table, the service's list and the registry, and the barrier that ends
//!    the call keeps everyone off it until all are done.
//! 5. A kept allocation is no longer in the table, the service's list or the registry
//!    (a request for it is refused as for any freed memory); only dropping it from the
//!    cache unmaps it, after the registry's writer has caught up (so `nf serve` never
//!    reads memory that is gone): the writer thread unmaps it then.
//! 6. Sizes share segments by class, as a size-class allocator's blocks do: a segment
//!    that may be kept gets a file of its size rounded up to a power of two
//!    ([`capacity`]), and rule 4's match is by class — every member's kept capacity is
//!    the capacity of what it now asks (so a member asking 0 bytes matches one that
//!    asked 0). A program whose arrays change size a little from one to the next (GA
//!    temporaries) then reuses instead of creating. The reuse takes the new sizes:
//!    bounds checks, the registry and the bytes zeroed are what was asked, not the
//!    capacity. The cost: address space and file size up to 2× what was asked;
//!    memory only where touched (the files are sparse), so at most the larger of the
//!    sizes that used the segment.

use std::collections::VecDeque;

use crate::error::RmaError;
use crate::memory::Alloc;
use crate::rma::Rma;
use crate::wireup::Team;

/// Largest allocation, summed over its team, that `free` keeps.
pub(crate) const KEEP_ALLOC: u64 = 16 << 20;
/// Entries a team's cache holds at most.
pub(crate) const KEEP_COUNT: usize = 8;
/// Bytes, summed over the team, a team's cache holds at most.
pub(crate) const KEEP_BYTES: u64 = 64 << 20;

/// Largest segment (one member's part) sized to its class (rule 6): a larger one is
/// never kept, as it takes its team over [`KEEP_ALLOC`].
pub(crate) const CLASS_LIMIT: u64 = KEEP_ALLOC;

/// The file size of a segment of `len` bytes made by `malloc` (rule 6): `len` rounded
/// up to a power of two, at least a page; `len` itself (0 included) above
/// [`CLASS_LIMIT`] or for 0.
pub(crate) fn capacity(len: u64) -> u64 {
    if len == 0 || len > CLASS_LIMIT {
        return len;
    }
    let page = crate::shm::adopt::page_size() as u64;
    len.next_power_of_two().max(page)
}

/// Whether `kept` can serve an allocation of `sizes` (rule 6: same class everywhere).
fn fits(kept: &Alloc, sizes: &[u64]) -> bool {
    kept.lens.len() == sizes.len()
        && (kept.lens.iter().zip(sizes)).all(|(&l, &s)| capacity(l) == capacity(s))
}

/// An allocation's file bytes summed over its team (the same on every member).
fn team_bytes(a: &Alloc) -> u64 {
    a.lens.iter().map(|&l| capacity(l)).sum()
}

impl Rma<'_> {
    /// Rule 4: an allocation of `sizes` over `team` from the cache, ready to use, or
    /// `None` (nothing was done) when the cache has none.
    pub(crate) fn reuse(
        &self,
        team: &dyn Team,
        me: usize,
        sizes: &[u64],
    ) -> Result<Option<Vec<u64>>, RmaError> {
        let alloc = {
            let mut mem = self.mem.borrow_mut();
            let Some(kept) = mem.cache.get_mut(team.members()) else {
                return Ok(None);
            };
            let Some(i) = kept.iter().rposition(|a| fits(a, sizes)) else {
                return Ok(None);
            };
            kept.remove(i).expect("the position was just found")
        };
        let mut alloc = alloc;
        alloc.resize(sizes);
        let (base, len) = (alloc.bases[me], alloc.lens[me]);
        if len > 0 {
            // SAFETY: our own segment, mapped at `base` for `len` bytes since it was
            // created (the cache keeps its mapping in `alloc.maps`); it was freed, so
            // nobody reads or writes it until the barrier below returns.
            unsafe { std::ptr::write_bytes(base as *mut u8, 0, len as usize) };
            self.own_segments().push((base, len));
            self.registry.borrow_mut().add(alloc.n, base, len);
        }
        let bases = alloc.bases.clone();
        {
            let mut mem = self.mem.borrow_mut();
            for &(q, seg) in &alloc.segs {
                mem.table.insert(q, seg);
            }
            if let Some(key) = Alloc::key(&alloc.members, &alloc.bases) {
                mem.allocs.insert(key, alloc);
            }
        }
        team.barrier()?;
        Ok(Some(bases))
    }

    /// Rule 3: keeps a freed allocation (already out of the table, the service's list
    /// and the registry), or lets it go; drops what no longer fits.
    pub(crate) fn keep_or_release(&self, alloc: Alloc) {
        if alloc.adopted || team_bytes(&alloc) > KEEP_ALLOC {
            return self.release(alloc);
        }
        let evicted: Vec<Alloc> = {
            let mut mem = self.mem.borrow_mut();
            let kept = mem.cache.entry(alloc.members.clone()).or_default();
            kept.push_back(alloc);
            overflow(kept)
        };
        for a in evicted {
            self.release(a);
        }
    }

    /// Unmaps a freed allocation for good (rule 5): an adopted one here and now (its
    /// range must be private again when `free` returns), any other on the registry's
    /// writer thread once the file no longer lists it, off the caller's path (giving
    /// the pages of a touched 2 MiB segment back took 0.03-0.5 ms of `ARMCI_Free`).
    pub(crate) fn release(&self, alloc: Alloc) {
        self.deregister(alloc.region);
        let maps = alloc.maps;
        let registry = self.registry.borrow();
        if alloc.adopted {
            registry.flush_to(alloc.unlisted);
            drop(maps);
        } else {
            registry.after_written(alloc.unlisted, Box::new(move || drop(maps)));
        }
    }
}

/// The oldest entries that take `kept` over its bounds, taken out of it.
fn overflow(kept: &mut VecDeque<Alloc>) -> Vec<Alloc> {
    let mut out = Vec::new();
    while kept.len() > KEEP_COUNT || kept.iter().map(team_bytes).sum::<u64>() > KEEP_BYTES {
        match kept.pop_front() {
            Some(a) => out.push(a),
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::Seg;

    fn kept(lens: &[u64]) -> Alloc {
        let members: Vec<usize> = (0..lens.len()).collect();
        let bases: Vec<u64> = (1..=lens.len() as u64).map(|i| i << 32).collect();
        let segs = members
            .iter()
            .zip(&bases)
            .zip(lens)
            .filter(|(_, &l)| l > 0)
            .map(|((&q, &base), &len)| {
                let seg = Seg {
                    base,
                    len,
                    mapped: 0,
                    ofi: None,
                };
                (q, seg)
            })
            .collect();
        Alloc {
            members,
            bases,
            lens: lens.to_vec(),
            maps: Vec::new(),
            region: None,
            n: 1,
            segs,
            unlisted: 0,
            adopted: false,
        }
    }

    #[test]
    fn capacity_is_the_power_of_two_class_up_to_the_limit() {
        let page = crate::shm::adopt::page_size() as u64;
        assert_eq!(capacity(0), 0);
        assert_eq!(capacity(1), page);
        assert_eq!(capacity(page), page);
        assert_eq!(capacity(page + 1), 2 * page);
        assert_eq!(capacity(3 * page), 4 * page);
        assert_eq!(capacity(CLASS_LIMIT), CLASS_LIMIT);
        assert_eq!(capacity(CLASS_LIMIT + 1), CLASS_LIMIT + 1);
    }

    #[test]
    fn a_kept_allocation_serves_sizes_of_its_classes_and_takes_them() {
        let page = crate::shm::adopt::page_size() as u64;
        let mut a = kept(&[3 * page, 0, 8 * page]);
        // Same classes everywhere, a member asking 0 where it asked 0.
        assert!(fits(&a, &[4 * page, 0, 5 * page]));
        // One member out of its class, above or below; 0 against bytes; a longer team.
        assert!(!fits(&a, &[4 * page + 1, 0, 5 * page]));
        assert!(!fits(&a, &[2 * page, 0, 5 * page]));
        assert!(!fits(&a, &[4 * page, 1, 5 * page]));
        assert!(!fits(&a, &[0, 0, 5 * page]));
        assert!(!fits(&a, &[4 * page, 0, 5 * page, 0]));
        a.resize(&[4 * page, 0, 5 * page]);
        assert_eq!(a.lens, [4 * page, 0, 5 * page]);
        let lens: Vec<(usize, u64)> = a.segs.iter().map(|(q, s)| (*q, s.len)).collect();
        assert_eq!(lens, [(0, 4 * page), (2, 5 * page)]);
    }
}
