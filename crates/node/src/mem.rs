//! `/mem` (#r): global memory segments as files — not here yet.
//!
//! `/mem/JOB/RANK/SEGMENT` arrives with the rma layer (issue 4): reading or writing at
//! an offset will be an RMA get or put on that segment. Until then `/mem` holds only a
//! `README` saying so, and walking to anything else fails with `ENOSYS` ("function not
//! implemented"), so a reader gets a clear error instead of an empty file.

use nf_ninep::errno::{EACCES, EISDIR, ENOSYS, ENOTDIR};
use nf_ninep::server::{Ctx, Filesystem, FsResult};
use nf_ninep::{
    encode_dirents, Attr, Dirent, GetattrMask, Qid, QidType, Rattach, Rgetattr, Rlerror, Rread,
    Rreaddir, Tattach, Tgetattr, Tread, Treaddir,
};

/// What `/mem/README` says.
pub const README: &str = "\
/mem: global memory segments as files (seed 000's #r).

Not available yet: /mem/JOB/RANK/SEGMENT arrives with the rma layer (issue 4).
Reading or writing such a file at an offset will be an RMA get or put on that
segment, and its size will be the segment's. Until then every path under /mem
but this README fails with ENOSYS (function not implemented).
";

/// The placeholder tree mounted at `/mem`.
#[derive(Default)]
pub struct MemPending;

/// A fid of [`MemPending`]: its root or its README.
pub enum MemFid {
    /// `/mem` itself.
    Root,
    /// `/mem/README`.
    Readme,
}

const ROOT: Qid = Qid {
    ty: QidType::DIR,
    version: 0,
    path: 1,
};
const FILE: Qid = Qid {
    ty: QidType::FILE,
    version: 0,
    path: 2,
};

impl Filesystem for MemPending {
    type Fid = MemFid;

    fn attach(&self, _: &Ctx, _: &Tattach, _: Option<&MemFid>) -> FsResult<(Rattach, MemFid)> {
        Ok((Rattach { qid: ROOT }, MemFid::Root))
    }

    fn walk1(&self, _: &Ctx, dir: &MemFid, name: &str) -> FsResult<(Qid, MemFid)> {
        match (dir, name) {
            (MemFid::Readme, _) => Err(Rlerror::new(ENOTDIR)),
            (MemFid::Root, "." | "..") => Ok((ROOT, MemFid::Root)),
            (MemFid::Root, "README") => Ok((FILE, MemFid::Readme)),
            (MemFid::Root, _) => Err(Rlerror::new(ENOSYS)),
        }
    }

    fn clone_fid(&self, _: &Ctx, fid: &MemFid) -> FsResult<MemFid> {
        Ok(match fid {
            MemFid::Root => MemFid::Root,
            MemFid::Readme => MemFid::Readme,
        })
    }

    fn getattr(&self, _: &Ctx, fid: &MemFid, _: &Tgetattr) -> FsResult<Rgetattr> {
        let (qid, mode, size) = match fid {
            MemFid::Root => (ROOT, 0o040555, 0),
            MemFid::Readme => (FILE, 0o100444, README.len() as u64),
        };
        Ok(Rgetattr {
            valid: GetattrMask::BASIC,
            qid,
            attr: Attr {
                mode,
                nlink: 1,
                size,
                blksize: 4096,
                ..Attr::default()
            },
        })
    }

    fn read(&self, _: &Ctx, fid: &MemFid, req: &Tread) -> FsResult<Rread> {
        match fid {
            MemFid::Root => Err(Rlerror::new(EISDIR)),
            MemFid::Readme => {
                let start =
                    usize::try_from(req.offset).map_or(README.len(), |o| o.min(README.len()));
                let end = start.saturating_add(req.count as usize).min(README.len());
                Ok(Rread {
                    data: README.as_bytes()[start..end].to_vec().into(),
                })
            }
        }
    }

    fn readdir(&self, _: &Ctx, dir: &MemFid, req: &Treaddir) -> FsResult<Rreaddir> {
        if let MemFid::Readme = dir {
            return Err(Rlerror::new(ENOTDIR));
        }
        let entry = |i: u64, name: &str, qid: Qid, dtype: u8| Dirent {
            qid,
            offset: i,
            dtype,
            name: name.to_string(),
        };
        let all = [
            entry(1, ".", ROOT, Dirent::DT_DIR),
            entry(2, "..", ROOT, Dirent::DT_DIR),
            entry(3, "README", FILE, Dirent::DT_REG),
        ];
        let start = usize::try_from(req.offset).map_or(all.len(), |o| o.min(all.len()));
        let (data, _) =
            encode_dirents(&all[start..], req.count).map_err(|_| Rlerror::new(EACCES))?;
        Ok(Rreaddir { data })
    }
}
