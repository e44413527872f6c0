//! Reading directories: `Treaddir`, and [`DirEntry`].

use crate::error::ClientError;
use crate::open::File;
use crate::session::Root;
use nf_ninep::message::*;
use nf_ninep::readdir::decode_dirents;
use nf_ninep::types::{Dirent, LOpenFlags, Qid, QidType};

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name.
    pub name: String,
    /// Its qid.
    pub qid: Qid,
    /// Its `d_type` (`Dirent::DT_DIR`, `DT_REG`, …).
    pub dtype: u8,
    /// The cookie to continue reading after it.
    pub offset: u64,
}

impl DirEntry {
    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.qid.ty.contains(QidType::DIR) || self.dtype == Dirent::DT_DIR
    }
}

impl From<Dirent> for DirEntry {
    fn from(d: Dirent) -> Self {
        DirEntry {
            name: d.name,
            qid: d.qid,
            dtype: d.dtype,
            offset: d.offset,
        }
    }
}

impl File {
    /// One `Treaddir` from cookie `offset` (0 to start); empty at the end.
    pub fn readdir_page(&self, offset: u64) -> Result<Vec<DirEntry>, ClientError> {
        let msg = Treaddir {
            fid: self.number(),
            offset,
            count: self.chunk(),
        };
        let data = self
            .client()
            .request("readdir", msg, |r| match r {
                Rmessage::Rreaddir(r) => Some(r.data),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))?;
        Ok(decode_dirents(data.as_slice())?
            .into_iter()
            .map(DirEntry::from)
            .collect())
    }

    /// Every entry of the open directory but `.` and `..`.
    pub fn readdir_all(&self) -> Result<Vec<DirEntry>, ClientError> {
        let mut out = Vec::new();
        let mut offset = 0;
        loop {
            let page = self.readdir_page(offset)?;
            let Some(last) = page.last() else {
                return Ok(out);
            };
            offset = last.offset;
            out.extend(page.into_iter().filter(|e| e.name != "." && e.name != ".."));
        }
    }
}

impl Root {
    /// The entries of directory `path`, without `.` and `..`.
    pub fn readdir(&self, path: &str) -> Result<Vec<DirEntry>, ClientError> {
        self.open(path, LOpenFlags::RDONLY)?.readdir_all()
    }
}
