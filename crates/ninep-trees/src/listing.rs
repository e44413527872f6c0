//! Directory reads by offset, for trees whose listings are computed in one go.
//!
//! A `Treaddir` at offset 0 takes a snapshot of the directory; later offsets page
//! through that snapshot, so entries neither repeat nor vanish while a client lists a
//! directory that changes. Each entry's offset is its index + 1 (the cookie to resume
//! after it).
//!
//! A snapshot costs memory for as long as the fid is open, so it is meant for listings
//! that are computed (a synthetic tree, a mount table's root, `/ro`'s merge of the
//! host and its overlay); a host directory alone is read page by page instead
//! (`hostdir`). [`Listing::read`] charges the snapshot to the request's connection
//! ([`Ctx::charge`]) for as long as it is kept: past the budget the read fails
//! `ENOMEM` and nothing is kept.

use std::sync::Mutex;

use nf_ninep::message::Rreaddir;
use nf_ninep::readdir::DirentWriter;
use nf_ninep::types::Dirent;
use nf_ninep_server::{lock, Charge, Ctx, FsError, FsResult};

/// The listing state of one open directory fid (for trees outside this crate too).
#[derive(Default)]
pub struct Listing {
    snapshot: Mutex<Option<Snapshot>>,
}

/// A listing taken at offset 0, and what it is charged.
struct Snapshot {
    entries: Vec<Dirent>,
    _charge: Charge,
}

/// What the allocator adds to each name: glibc's chunk header, and rounding up.
const PER_NAME: usize = 16;

/// Bytes a snapshot of `entries` holds: the records, and each name's allocation.
fn footprint(entries: &Vec<Dirent>) -> usize {
    let names: usize = entries.iter().map(|e| e.name.capacity() + PER_NAME).sum();
    entries.capacity() * std::mem::size_of::<Dirent>() + names
}

impl Listing {
    /// The entries after `offset`, at most `count` bytes; `fill` lists the directory
    /// (its offsets are overwritten) and is called at offset 0 or when nothing is
    /// cached. The snapshot is charged to `ctx`'s connection while it is kept.
    pub fn read(
        &self,
        ctx: &Ctx,
        offset: u64,
        count: u32,
        fill: impl FnOnce() -> FsResult<Vec<Dirent>>,
    ) -> FsResult<Rreaddir> {
        let mut snapshot = lock(&self.snapshot);
        if offset == 0 || snapshot.is_none() {
            // The old snapshot goes (and its charge with it) before the new one is made.
            *snapshot = None;
            let mut entries = fill()?;
            // Kept as long as the fid is open: no spare room.
            entries.shrink_to_fit();
            for (i, e) in entries.iter_mut().enumerate() {
                e.offset = i as u64 + 1;
            }
            let charged = ctx.charge(footprint(&entries))?;
            *snapshot = Some(Snapshot {
                entries,
                _charge: charged,
            });
        }
        let entries = snapshot.as_ref().map_or(&[][..], |s| &s.entries[..]);
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(entries.len());
        let mut writer = DirentWriter::new(count);
        for entry in &entries[start..] {
            if !writer
                .push(entry)
                .map_err(|_| FsError::Errno(nf_ninep::errno::EIO))?
            {
                break;
            }
        }
        Ok(Rreaddir {
            data: writer.into_data(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep::readdir::decode_dirents;

    fn named(names: &[&str]) -> Vec<Dirent> {
        names
            .iter()
            .map(|n| Dirent {
                name: n.to_string(),
                ..Dirent::default()
            })
            .collect()
    }

    #[test]
    fn pages_through_a_snapshot() {
        let l = Listing::default();
        let ctx = Ctx::background(8192);
        let first = l.read(&ctx, 0, 50, || Ok(named(&["a", "b", "c"]))).unwrap();
        let got = decode_dirents(first.data.as_slice()).unwrap();
        assert_eq!(got.len(), 2); // 25 bytes each
        let next = l
            .read(&ctx, got[1].offset, 50, || panic!("must use the snapshot"))
            .unwrap();
        let rest = decode_dirents(next.data.as_slice()).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].name, "c");
        assert!(l
            .read(&ctx, 3, 50, || unreachable!())
            .unwrap()
            .data
            .is_empty());
    }
}
