//! Attributes: `Tgetattr` → [`Stat`], `Tsetattr`, `Tstatfs`.

use crate::error::ClientError;
use crate::fid::Fid;
use crate::session::Root;
use nf_ninep::message::*;
use nf_ninep::types::{Attr, GetattrMask, Qid, QidType, SetAttr, SetattrMask};

/// A file's attributes, as `Rgetattr` gives them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Which fields the server filled in.
    pub valid: GetattrMask,
    /// The file's qid.
    pub qid: Qid,
    /// The attributes.
    pub attr: Attr,
}

impl Stat {
    /// True for a directory.
    pub fn is_dir(&self) -> bool {
        self.qid.ty.contains(QidType::DIR)
    }

    /// True for a symbolic link.
    pub fn is_symlink(&self) -> bool {
        self.qid.ty.contains(QidType::SYMLINK)
    }

    /// True for a regular file (not a pipe, device or socket), by the mode's type bits.
    pub fn is_regular(&self) -> bool {
        self.attr.mode & 0o170000 == 0o100000
    }

    /// Size in bytes.
    pub fn size(&self) -> u64 {
        self.attr.size
    }

    /// Permission bits (`mode & 0o7777`).
    pub fn permissions(&self) -> u32 {
        self.attr.mode & 0o7777
    }
}

impl Fid {
    /// `Tgetattr` asking for `mask`.
    pub fn getattr(&self, mask: GetattrMask) -> Result<Stat, ClientError> {
        let msg = Tgetattr {
            fid: self.number(),
            request_mask: mask,
        };
        self.client()
            .request("stat", msg, |r| match r {
                Rmessage::Rgetattr(r) => Some(Stat {
                    valid: r.valid,
                    qid: r.qid,
                    attr: r.attr,
                }),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))
    }

    /// Every attribute (`GetattrMask::ALL`).
    pub fn stat(&self) -> Result<Stat, ClientError> {
        self.getattr(GetattrMask::ALL)
    }

    /// `Tsetattr`: changes the attributes `valid` selects to the values in `attr`.
    pub fn setattr(&self, valid: SetattrMask, attr: SetAttr) -> Result<(), ClientError> {
        let msg = Tsetattr {
            fid: self.number(),
            valid,
            attr,
        };
        self.client()
            .request("setattr", msg, |r| match r {
                Rmessage::Rsetattr(_) => Some(()),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))
    }

    /// `Tstatfs`: figures of the file system holding this fid.
    pub fn statfs(&self) -> Result<Rstatfs, ClientError> {
        self.client()
            .request("statfs", Tstatfs { fid: self.number() }, |r| match r {
                Rmessage::Rstatfs(r) => Some(r),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))
    }
}

impl Root {
    /// The attributes of `path` (a symlink's own, not its target's).
    pub fn stat(&self, path: &str) -> Result<Stat, ClientError> {
        self.walk(path)?.stat()
    }

    /// Sets the permission bits of `path`.
    pub fn chmod(&self, path: &str, mode: u32) -> Result<(), ClientError> {
        let attr = SetAttr {
            mode,
            ..SetAttr::default()
        };
        self.walk(path)?.setattr(SetattrMask::MODE, attr)
    }

    /// Sets the size of `path`.
    pub fn truncate(&self, path: &str, size: u64) -> Result<(), ClientError> {
        let attr = SetAttr {
            size,
            ..SetAttr::default()
        };
        self.walk(path)?.setattr(SetattrMask::SIZE, attr)
    }
}
