//! `/mem` (#r): every running proc's global memory segments as files.
//!
//! `/mem/JOB` lists a job's ranks, `/mem/JOB/RANK` that rank's live segments by
//! number, and `/mem/JOB/RANK/SEGMENT` is the segment: its size is the segment's
//! length, reading at an offset copies from the rank's memory (an RMA get), writing
//! copies into it (a put), both with cross-memory attach (`process_vm_readv` /
//! `process_vm_writev`) on the pid the rank published.
//!
//! Where the daemon learns about segments: the rma layer's memory registry
//! ([`nf_memreg`]), a small file per rank, read afresh at every walk, listing
//! and I/O; which entries it believes and who sees what is [`view`].
//!
//! Rules:
//! 1. Only users the attach check vouched for get in ([`crate::access`]: the kernel's
//!    word on a local peer, or a TLS certificate): a fid without an identity (this tree
//!    mounted without that check) is refused with `EACCES`. Cross-memory attach is
//!    checked by the kernel against the server's real uid, not the attached user's, so
//!    [`view`] decides who sees which proc: its owner, and root.
//! 2. A read at or past the end returns 0 bytes, one that crosses it is short. A write
//!    at or past the end fails with `EFBIG` (as a write beyond a file size limit);
//!    one that crosses it writes what fits and returns that count.
//! 3. A rank that died disappears from the listings at once; a fid already walked to
//!    it answers `ESRCH` (no such process). A segment freed since the walk answers
//!    `ESTALE`, as does one unmapped during the copy itself.
//! 4. Nothing here waits (files, `/proc`, one copy of at most msize bytes), so the
//!    tree runs inline on the connection's reader thread.
//!
//! Consistency: a read or write is a plain copy at the moment it runs, not ordered with
//! the job's own RMA epochs (fences, barriers, mutexes): a debugger's or monitor's view,
//! like `/proc/PID/mem`. A segment freed while a copy is under way may be copied from or
//! into whatever the rank mapped there next; the registry entry leaves before the
//! memory is unmapped, so only a copy already past its check can.

pub mod view;

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use nf_memreg::SegEntry;
use nf_ninep::errno::{EACCES, EFBIG, EINVAL, EISDIR, ENOENT, ENOTDIR, ESRCH, ESTALE};
use nf_ninep::{
    Attr, Dirent, GetattrMask, Qid, QidType, Rattach, Rgetattr, Rread, Rreaddir, Rwrite, Tattach,
    Tgetattr, Tread, Treaddir, Twrite,
};
use nf_ninep_server::{Ctx, Filesystem, FsError, FsResult};
use nf_ninep_trees::Listing;
use nf_transport::shm::cma;

use view::{Proc, View};

/// EFAULT: the copy touched memory the rank no longer maps.
const EFAULT: u32 = 14;

/// The tree mounted at `/mem`.
pub struct MemTree {
    view: View,
}

impl MemTree {
    /// `/mem` over the registry at `dir`, for a daemon running as `daemon_uid`.
    pub fn new(dir: PathBuf, daemon_uid: u32) -> MemTree {
        MemTree {
            view: View::new(dir, daemon_uid),
        }
    }

    /// The registry directory read.
    pub fn registry(&self) -> &Path {
        self.view.dir()
    }
}

/// Which file a fid names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum At {
    Root,
    Job(String),
    Rank(RankAt),
    Seg(RankAt, u64),
}

/// One rank, pinned to the process it was walked to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct RankAt {
    job: String,
    rank: u32,
    pid: u32,
    start: u64,
}

impl RankAt {
    fn of(p: &Proc) -> RankAt {
        RankAt {
            job: p.entry.job.clone(),
            rank: p.entry.rank,
            pid: p.entry.pid,
            start: p.entry.start,
        }
    }
}

/// A fid of [`MemTree`]: who attached (`None`: nobody the transport vouches for,
/// rule 1), where it is, and its directory listing.
pub struct MemFid {
    who: Option<u32>,
    at: At,
    listing: Listing,
}

impl MemFid {
    /// Who is asking, or `EACCES` (rule 1).
    fn who(&self) -> FsResult<u32> {
        self.who.ok_or_else(|| {
            tracing::warn!("/mem refused: this connection does not identify its user (use the unix socket, shm or TLS)");
            FsError::Errno(EACCES)
        })
    }

    fn to(&self, at: At) -> MemFid {
        MemFid {
            who: self.who,
            at,
            listing: Listing::default(),
        }
    }
}

const ROOT: Qid = Qid {
    ty: QidType::DIR,
    version: 0,
    path: 1,
};

/// A stable qid for `at` (below 2^55, as the mount table needs; 1 is the root's).
fn qid(at: &At) -> Qid {
    if *at == At::Root {
        return ROOT;
    }
    let mut h = DefaultHasher::new();
    at.hash(&mut h);
    let path = (h.finish() & ((1 << 55) - 1)) | 2;
    let ty = match at {
        At::Seg(..) => QidType::FILE,
        _ => QidType::DIR,
    };
    Qid {
        ty,
        version: 0,
        path,
    }
}

impl MemTree {
    /// The rank `r` names, if it still runs the same process (`ESRCH` otherwise).
    fn rank(&self, who: u32, r: &RankAt) -> FsResult<Proc> {
        self.view
            .proc(who, &r.job, r.rank)
            .filter(|p| p.entry.pid == r.pid && p.entry.start == r.start)
            .ok_or(FsError::Errno(ESRCH))
    }

    /// The segment a file fid names, and its owner (rule 3).
    fn segment(&self, fid: &MemFid) -> FsResult<(Proc, SegEntry)> {
        let At::Seg(r, id) = &fid.at else {
            return Err(FsError::Errno(EISDIR));
        };
        let proc = self.rank(fid.who()?, r)?;
        let seg = proc.entry.segment(*id).ok_or(FsError::Errno(ESTALE))?;
        Ok((proc, seg))
    }

    /// Every proc of `job` that `who` may see.
    fn job(&self, who: u32, job: &str) -> Vec<Proc> {
        let mut procs: Vec<Proc> = self
            .view
            .procs(who)
            .into_iter()
            .filter(|p| p.entry.job == job)
            .collect();
        procs.sort_by_key(|p| p.entry.rank);
        procs
    }

    /// The entries of directory `at` (with `.` and `..`), or why it is gone.
    fn list(&self, who: u32, at: &At) -> FsResult<Vec<Dirent>> {
        let dir = |name: String, at: At| Dirent {
            qid: qid(&at),
            offset: 0,
            dtype: Dirent::DT_DIR,
            name,
        };
        let (parent, children) = match at {
            At::Root => {
                let mut jobs: Vec<String> = self
                    .view
                    .procs(who)
                    .into_iter()
                    .map(|p| p.entry.job)
                    .collect();
                jobs.sort();
                jobs.dedup();
                let children = jobs.into_iter().map(|j| dir(j.clone(), At::Job(j)));
                (At::Root, children.collect::<Vec<_>>())
            }
            At::Job(job) => {
                let procs = self.job(who, job);
                if procs.is_empty() {
                    return Err(FsError::Errno(ENOENT));
                }
                let children = procs
                    .iter()
                    .map(|p| dir(p.entry.rank.to_string(), At::Rank(RankAt::of(p))));
                (At::Root, children.collect())
            }
            At::Rank(r) => {
                let proc = self.rank(who, r)?;
                let children = proc.entry.segments.iter().map(|s| {
                    let at = At::Seg(r.clone(), s.id);
                    Dirent {
                        dtype: Dirent::DT_REG,
                        ..dir(s.id.to_string(), at)
                    }
                });
                (At::Job(r.job.clone()), children.collect())
            }
            At::Seg(..) => return Err(FsError::Errno(ENOTDIR)),
        };
        let mut all = vec![dir(".".into(), at.clone()), dir("..".into(), parent)];
        all.extend(children);
        Ok(all)
    }
}

/// `name` as a number written the one canonical way (`7`, not `07` or `+7`).
fn number<T: std::str::FromStr + ToString>(name: &str) -> Option<T> {
    name.parse().ok().filter(|n: &T| n.to_string() == name)
}

/// The bytes `[offset, offset + want)` of a `len`-byte segment clipped to its end.
fn clip(offset: u64, want: u64, len: u64) -> u64 {
    want.min(len.saturating_sub(offset))
}

/// An error of a cross-memory copy as the client sees it (rule 3).
fn copy_error(e: std::io::Error) -> FsError {
    match FsError::from(e) {
        FsError::Errno(EFAULT) => FsError::Errno(ESTALE),
        other => other,
    }
}

impl Filesystem for MemTree {
    type Fid = MemFid;

    fn runs_inline(&self) -> bool {
        true
    }

    fn attach(&self, ctx: &Ctx, _: &Tattach, _: Option<&MemFid>) -> FsResult<(Rattach, MemFid)> {
        let fid = MemFid {
            who: ctx.creds().map(|c| c.uid()),
            at: At::Root,
            listing: Listing::default(),
        };
        Ok((Rattach { qid: ROOT }, fid))
    }

    fn walk1(&self, _: &Ctx, dir: &MemFid, name: &str) -> FsResult<(Qid, MemFid)> {
        let who = dir.who()?;
        let next = match (&dir.at, name) {
            (At::Seg(..), _) => return Err(FsError::Errno(ENOTDIR)),
            (at, ".") => at.clone(),
            (At::Root | At::Job(_), "..") => At::Root,
            (At::Rank(r), "..") => At::Job(r.job.clone()),
            (At::Root, job) => {
                if self.job(who, job).is_empty() {
                    return Err(FsError::Errno(ENOENT));
                }
                At::Job(job.to_string())
            }
            (At::Job(job), rank) => {
                let proc = number(rank)
                    .and_then(|rank| self.view.proc(who, job, rank))
                    .ok_or(FsError::Errno(ENOENT))?;
                At::Rank(RankAt::of(&proc))
            }
            (At::Rank(r), seg) => {
                let proc = self.rank(who, r).map_err(|_| FsError::Errno(ENOENT))?;
                let id = number(seg)
                    .filter(|&id| proc.entry.segment(id).is_some())
                    .ok_or(FsError::Errno(ENOENT))?;
                At::Seg(r.clone(), id)
            }
        };
        Ok((qid(&next), dir.to(next)))
    }

    fn clone_fid(&self, _: &Ctx, fid: &MemFid) -> FsResult<MemFid> {
        Ok(fid.to(fid.at.clone()))
    }

    fn getattr(&self, _: &Ctx, fid: &MemFid, _: &Tgetattr) -> FsResult<Rgetattr> {
        let (mode, uid, size) = match &fid.at {
            At::Root => (0o040555, 0, 0),
            At::Job(job) => {
                let procs = self.job(fid.who()?, job);
                let first = procs.first().ok_or(FsError::Errno(ENOENT))?;
                (0o040555, first.uid, 0)
            }
            At::Rank(r) => (0o040555, self.rank(fid.who()?, r)?.uid, 0),
            At::Seg(..) => {
                let (proc, seg) = self.segment(fid)?;
                (0o100600, proc.uid, seg.len)
            }
        };
        Ok(Rgetattr {
            valid: GetattrMask::BASIC,
            qid: qid(&fid.at),
            attr: Attr {
                mode,
                uid,
                gid: uid,
                nlink: 1,
                size,
                blksize: 4096,
                ..Attr::default()
            },
        })
    }

    fn read(&self, _: &Ctx, fid: &MemFid, req: &Tread) -> FsResult<Rread> {
        let (proc, seg) = self.segment(fid)?;
        let n = clip(req.offset, u64::from(req.count), seg.len);
        let data =
            cma::read_vec(proc.entry.pid, seg.base + req.offset, n as usize).map_err(copy_error)?;
        Ok(Rread { data: data.into() })
    }

    fn write(&self, _: &Ctx, fid: &MemFid, req: &Twrite) -> FsResult<Rwrite> {
        let (proc, seg) = self.segment(fid)?;
        let data = req.data.as_slice();
        if data.is_empty() {
            return Ok(Rwrite { count: 0 });
        }
        if req.offset >= seg.len {
            return Err(FsError::Errno(EFBIG));
        }
        let n = clip(req.offset, data.len() as u64, seg.len) as usize;
        cma::write(proc.entry.pid, seg.base + req.offset, &data[..n]).map_err(copy_error)?;
        Ok(Rwrite {
            count: u32::try_from(n).map_err(|_| FsError::Errno(EINVAL))?,
        })
    }

    fn readdir(&self, ctx: &Ctx, dir: &MemFid, req: &Treaddir) -> FsResult<Rreaddir> {
        let who = dir.who()?;
        dir.listing
            .read(ctx, req.offset, req.count, || self.list(who, &dir.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ranges() {
        assert_eq!(number::<u32>("7"), Some(7));
        assert_eq!(number::<u32>("07"), None);
        assert_eq!(number::<u32>("+7"), None);
        assert_eq!(number::<u32>("x"), None);
        assert_eq!(clip(0, 10, 100), 10);
        assert_eq!(clip(95, 10, 100), 5);
        assert_eq!(clip(100, 10, 100), 0);
        assert_eq!(clip(u64::MAX, 10, 100), 0);
        assert_ne!(qid(&At::Job("a".into())).path, ROOT.path);
        assert_eq!(qid(&At::Job("a".into())), qid(&At::Job("a".into())));
    }
}
