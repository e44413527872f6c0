//! Opening and creating files: `Tlopen`, `Tlcreate`, and [`File`].

use std::ops::Deref;

use crate::error::ClientError;
use crate::fid::Fid;
use crate::session::Root;
use crate::walk::{join, parent_and_name};
use nf_ninep::frame::IOHDRSZ;
use nf_ninep::message::*;
use nf_ninep::types::LOpenFlags;

/// An open file (or directory). Reads and writes are split into messages of at most
/// the iounit (or msize − 24 bytes). Dereferences to its [`Fid`].
#[derive(Debug)]
pub struct File {
    fid: Fid,
    iounit: u32,
    pos: u64,
    /// Opened with `APPEND`: the server writes at the end, whatever the offset.
    append: bool,
}

impl Deref for File {
    type Target = Fid;

    fn deref(&self) -> &Fid {
        &self.fid
    }
}

impl File {
    fn new(fid: Fid, iounit: u32, flags: LOpenFlags) -> File {
        File {
            fid,
            iounit,
            pos: 0,
            append: flags.contains(LOpenFlags::APPEND),
        }
    }

    /// Whether it was opened to append (`LOpenFlags::APPEND`).
    pub fn appends(&self) -> bool {
        self.append
    }

    /// The iounit the server gave (0: msize − 24).
    pub fn iounit(&self) -> u32 {
        self.iounit
    }

    /// Most bytes one read or write message moves.
    pub fn chunk(&self) -> u32 {
        let limit = self.fid.client().msize().saturating_sub(IOHDRSZ);
        match self.iounit {
            0 => limit,
            n => n.min(limit),
        }
    }

    /// Offset used by [`File::read_to_end`], [`File::write_all`] and the `io` traits.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Moves the offset.
    pub fn seek_to(&mut self, pos: u64) {
        self.pos = pos;
    }

    pub(crate) fn advance(&mut self, n: u64) {
        self.pos += n;
    }

    /// Closes the file (clunks its fid), reporting errors.
    pub fn close(self) -> Result<(), ClientError> {
        self.fid.clunk()
    }
}

fn gid() -> u32 {
    rustix::process::getgid().as_raw()
}

impl Fid {
    /// Opens this fid (`Tlopen`); the fid becomes the file's.
    pub fn lopen(mut self, flags: LOpenFlags) -> Result<File, ClientError> {
        let r = self
            .client()
            .request(
                "open",
                Tlopen {
                    fid: self.number(),
                    flags,
                },
                |r| match r {
                    Rmessage::Rlopen(r) => Some(r),
                    _ => None,
                },
            )
            .map_err(|e| e.at(self.path()))?;
        self.set_qid(r.qid);
        Ok(File::new(self, r.iounit, flags))
    }

    /// Creates and opens `name` in this directory (`Tlcreate`); the fid becomes the
    /// new file's.
    pub fn lcreate(
        mut self,
        name: &str,
        flags: LOpenFlags,
        mode: u32,
    ) -> Result<File, ClientError> {
        let msg = Tlcreate {
            fid: self.number(),
            name: name.to_string(),
            flags,
            mode,
            gid: gid(),
        };
        let shown = join(self.path(), &[name.to_string()]);
        let r = self
            .client()
            .request("create", msg, |r| match r {
                Rmessage::Rlcreate(r) => Some(r),
                _ => None,
            })
            .map_err(|e| e.at(&shown))?;
        self.set_qid(r.qid);
        Ok(File::new(self, r.iounit, flags))
    }
}

impl Root {
    /// Opens the file at `path` with `flags` (`LOpenFlags::RDONLY`, `WRONLY | TRUNC`, …).
    pub fn open(&self, path: &str, flags: LOpenFlags) -> Result<File, ClientError> {
        self.walk(path)?.lopen(flags)
    }

    /// Creates the file at `path` with permission bits `mode` and opens it with `flags`.
    pub fn create(&self, path: &str, flags: LOpenFlags, mode: u32) -> Result<File, ClientError> {
        let (parent, name) = parent_and_name("create", path)?;
        self.walk_names(&parent)?.lcreate(&name, flags, mode)
    }
}
