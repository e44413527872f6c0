//! What a proc knows about global and local memory: the segment table, the live
//! collective allocations with their mappings, `malloc_local` blocks, and how segment
//! files are named.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;

use memmap2::MmapMut;
use nf_transport::rma::RegionId;
use nf_transport::shm::segment::{segment_path, PREFIX};

use crate::shm::map::Mapping;
use crate::shm::room::Gauge;
use crate::table::{Seg, Table};

/// One live collective allocation.
pub(crate) struct Alloc {
    /// World ranks of the team, in team order.
    pub members: Vec<usize>,
    /// Each member's base (0 for a member that asked for 0 bytes).
    pub bases: Vec<u64>,
    /// Each member's length: what it asked for. Its segment file holds `capacity` (in
    /// `api/cache.rs`) of it, the same for every length of a class, so a reuse (which
    /// keeps the class) needs no record of the file's size.
    pub lens: Vec<u64>,
    /// Our own segment and the domain peers' segments, mapped here.
    pub maps: Vec<Mapping>,
    /// Our segment's ofi registration, if native RMA reaches it.
    pub region: Option<RegionId>,
    /// Our segment's number (its file and registry id; 0 without one).
    pub n: u64,
    /// The segment table's entries for this allocation, by world rank.
    pub segs: Vec<(usize, Seg)>,
    /// The memory registry's change that took our segment off its list, once freed
    /// (the segment may be unmapped once the registry's file holds it).
    pub unlisted: u64,
    /// Made by `Rma::adopt`: never kept for reuse (`cache.rs`, rule 3).
    pub adopted: bool,
}

impl Alloc {
    /// Takes the lengths `sizes` (each of its member's class) for a reuse: the
    /// lengths and the segment table's entries, bounds checks included, are what was
    /// asked now.
    pub(crate) fn resize(&mut self, sizes: &[u64]) {
        for (q, seg) in &mut self.segs {
            if let Some(i) = self.members.iter().position(|m| m == q) {
                seg.len = sizes[i];
                if let Some(r) = &mut seg.ofi {
                    r.len = sizes[i];
                }
            }
        }
        self.lens = sizes.to_vec();
    }

    /// The key every member computes alike: the first non-empty member's
    /// `(world rank, base)`; `None` if every member asked for 0 bytes.
    pub(crate) fn key(members: &[usize], bases: &[u64]) -> Option<(usize, u64)> {
        members
            .iter()
            .zip(bases)
            .find(|(_, &b)| b != 0)
            .map(|(&m, &b)| (m, b))
    }
}

/// Global and local memory of this proc.
pub(crate) struct Memory {
    /// Every proc's live segments.
    pub table: Table,
    /// Live allocations by [`Alloc::key`].
    pub allocs: HashMap<(usize, u64), Alloc>,
    /// `malloc_local` blocks by address.
    pub locals: HashMap<usize, MmapMut>,
    /// Freed allocations kept mapped for reuse, oldest first, per team (`cache.rs`).
    pub cache: HashMap<Vec<usize>, VecDeque<Alloc>>,
    /// Our allocation counter (names our segment files).
    pub seq: u64,
    /// The room for our segments on this host (`shm/room.rs`).
    pub room: Gauge,
}

impl Memory {
    /// Nothing allocated yet, for a job of `size` procs.
    pub(crate) fn new(size: usize) -> Memory {
        Memory {
            table: Table::new(size),
            allocs: HashMap::new(),
            locals: HashMap::new(),
            cache: HashMap::new(),
            seq: 0,
            room: Gauge::default(),
        }
    }
}

/// Segment file names of this job on this host (see `shm/mod.rs`).
pub(crate) struct Names {
    dir: PathBuf,
    stem: String,
}

impl Names {
    /// Names under `dir` for `job` on the host whose identity hashes to `host`.
    pub(crate) fn new(dir: PathBuf, job: &str, host: u64) -> Names {
        Names {
            dir,
            stem: format!("{job}-{:08x}-rma", host as u32),
        }
    }

    /// Proc `proc`'s segment number `n`.
    pub(crate) fn segment(&self, proc: usize, n: u64) -> PathBuf {
        segment_path(&self.dir, &format!("{}{proc}", self.stem), n as usize)
    }

    /// Proc `proc`'s control segment.
    pub(crate) fn control(&self, proc: usize) -> PathBuf {
        self.dir.join(format!("{PREFIX}{}{proc}-ctl", self.stem))
    }

    /// The directory.
    pub(crate) fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_start_with_the_launchers_job_prefix() {
        let n = Names::new("/dev/shm".into(), "job7", 0x1234_5678_9abc);
        let seg = n.segment(3, 11).display().to_string();
        assert_eq!(seg, "/dev/shm/nf-job7-56789abc-rma3-11");
        assert_eq!(
            n.control(3).display().to_string(),
            "/dev/shm/nf-job7-56789abc-rma3-ctl"
        );
        assert_eq!(Alloc::key(&[4, 5, 6], &[0, 0x10, 0x20]), Some((5, 0x10)));
        assert_eq!(Alloc::key(&[4], &[0]), None);
    }
}
