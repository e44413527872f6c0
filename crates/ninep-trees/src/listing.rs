//! Directory reads by offset, for trees whose listings are computed in one go.
//!
//! A `Treaddir` at offset 0 takes a snapshot of the directory; later offsets page
//! through that snapshot, so entries neither repeat nor vanish while a client lists a
//! directory that changes. Each entry's offset is its index + 1 (the cookie to resume
//! after it).

use std::sync::Mutex;

use nf_ninep::message::Rreaddir;
use nf_ninep::readdir::DirentWriter;
use nf_ninep::types::Dirent;
use nf_ninep_server::lock;
use nf_ninep_server::FsError;
use nf_ninep_server::FsResult;

/// The listing state of one open directory fid (for trees outside this crate too).
#[derive(Default)]
pub struct Listing {
    snapshot: Mutex<Option<Vec<Dirent>>>,
}

impl Listing {
    /// The entries after `offset`, at most `count` bytes; `fill` lists the directory
    /// (its offsets are overwritten) and is called at offset 0 or when nothing is cached.
    pub fn page(
        &self,
        offset: u64,
        count: u32,
        fill: impl FnOnce() -> FsResult<Vec<Dirent>>,
    ) -> FsResult<Rreaddir> {
        let mut snapshot = lock(&self.snapshot);
        if offset == 0 || snapshot.is_none() {
            let mut entries = fill()?;
            for (i, e) in entries.iter_mut().enumerate() {
                e.offset = i as u64 + 1;
            }
            *snapshot = Some(entries);
        }
        let entries = snapshot.as_deref().unwrap_or_default();
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
        let first = l.page(0, 50, || Ok(named(&["a", "b", "c"]))).unwrap();
        let got = decode_dirents(first.data.as_slice()).unwrap();
        assert_eq!(got.len(), 2); // 25 bytes each
        let next = l
            .page(got[1].offset, 50, || panic!("must use the snapshot"))
            .unwrap();
        let rest = decode_dirents(next.data.as_slice()).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].name, "c");
        assert!(l.page(3, 50, || unreachable!()).unwrap().data.is_empty());
    }
}
