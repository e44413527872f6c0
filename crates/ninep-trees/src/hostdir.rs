//! [`HostDir`]: a host directory listed page by page with the kernel's own cookies.
//!
//! A `Treaddir` reads from a directory stream kept open per fid: it seeks to the offset
//! asked for and reads entries with getdents64, and each entry's 9P offset is the
//! kernel's `d_off`, the cookie to resume after it — diod's seekdir/telldir, knfsd's
//! readdir cookies. A page costs memory in proportion to the page, whatever the
//! directory's size; nothing but the descriptor is kept between pages; and a client
//! may resume from any offset it was given. (Listing a directory in one go and paging
//! through a snapshot kept per fid cost 100,000 entries' worth per open fid.)
//!
//! Rules:
//!
//! 1. The directory is opened when its fid is (`Tlopen`), as the user, beneath the
//!    export (rules 2–3 of `host.rs`): the kernel checks read permission there, as
//!    `opendir(3)` does. Its descriptor is charged to the connection's descriptor
//!    budgets while the fid is open (rule 6 of `host.rs`).
//! 2. Offset 0 is the start (a fresh listing, as `rewinddir`); any other offset is a
//!    cookie this stream returned and goes to `lseek` unchanged. What a cookie means
//!    is the file system's (a hash on ext4, a position on tmpfs). An entry that stays
//!    in the directory while a client pages through it is listed exactly once; one
//!    added or removed meanwhile may or may not be, as with `readdir(3)`.
//! 3. A page is read into a buffer the size of the reply (at least [`MIN_BUFFER`], so
//!    that one record of the longest name fits), charged to the connection's memory
//!    budget while it lives ([`Ctx::charge`]). An entry that does not fit the reply is
//!    left for the next page, which seeks back to it.
//! 4. `.` and `..` keep the qids the lexical walk gives them (rule 1 of `host.rs`): `..`
//!    of the export root is the root itself, never the host's parent. Other entries
//!    take their qid from the kernel's record (`d_ino`, `d_type`).
//! 5. Names that are not UTF-8 are skipped (9P strings are UTF-8); the stream still
//!    moves past them.
//! 6. Seeking and reading happen under the stream's lock, so two requests on one fid
//!    never interleave their seek and read.

use std::os::fd::OwnedFd;
use std::sync::Mutex;

use rustix::fs::{RawDir, SeekFrom};

use crate::host::{dtype, os, qid_type, HostRoot, Kept};
use nf_ninep::errno::EIO;
use nf_ninep::message::Rreaddir;
use nf_ninep::readdir::DirentWriter;
use nf_ninep::types::{Dirent, Qid};
use nf_ninep_server::{lock, Ctx, FsError, FsResult};

/// Smallest read buffer: a kernel record of a 255-byte name takes 280 bytes.
pub(crate) const MIN_BUFFER: usize = 1024;

/// An open host directory, read page by page (the module docs).
pub(crate) struct HostDir {
    fd: Mutex<Kept<OwnedFd>>,
}

impl HostDir {
    /// Opens the directory `path` beneath `root`, for `ctx`'s connection (rule 1).
    pub fn open(root: &HostRoot, path: &[String], ctx: &Ctx) -> FsResult<HostDir> {
        Ok(HostDir {
            fd: Mutex::new(root.open_dir(path, ctx)?),
        })
    }

    /// The entries after `offset`, at most `count` bytes of them; `dot` gives the qid
    /// of `.` and `..` (rule 4).
    pub fn page(
        &self,
        ctx: &Ctx,
        offset: u64,
        count: u32,
        dot: impl Fn(&str) -> FsResult<Qid>,
    ) -> FsResult<Rreaddir> {
        let len = (count as usize).max(MIN_BUFFER);
        let _charge = ctx.charge(len)?;
        let mut buf = Vec::with_capacity(len);
        let fd = lock(&self.fd);
        rustix::fs::seek(&*fd, SeekFrom::Start(offset)).map_err(os)?;
        let mut writer = DirentWriter::new(count);
        let mut stream = RawDir::new(&*fd, buf.spare_capacity_mut());
        while let Some(entry) = stream.next() {
            let entry = entry.map_err(os)?;
            let Ok(name) = entry.file_name().to_str() else {
                tracing::debug!("skipping a directory entry whose name is not UTF-8");
                continue;
            };
            let (qid, dtype) = match name {
                "." | ".." => (dot(name)?, Dirent::DT_DIR),
                _ => (
                    Qid {
                        ty: qid_type(entry.file_type()),
                        version: 0,
                        path: entry.ino(),
                    },
                    dtype(entry.file_type()),
                ),
            };
            let record = Dirent {
                qid,
                offset: entry.next_entry_cookie(),
                dtype,
                name: name.to_string(),
            };
            if !writer.push(&record).map_err(|_| FsError::Errno(EIO))? {
                break;
            }
        }
        Ok(Rreaddir {
            data: writer.into_data(),
        })
    }
}
