//! Checking a request before the tree sees it (lib9p's `sFOO` half).
//!
//! [`check`] runs on the connection's reader thread, in arrival order, under the
//! connection lock. It resolves fid numbers to entries, enforces the rules below, reserves
//! the fids a request will create, and turns the message into a [`Job`] for a worker.
//! It never calls the tree. A failed check is answered at once with its `Rlerror`.
//!
//! | rule | errno |
//! |---|---|
//! | fid unknown (or still being created) | `EBADF` |
//! | new fid already in use | `EEXIST` |
//! | fid table full (`max_fids`) | `EMFILE` |
//! | walk from an open fid; open or create on an open fid | `EBUSY` |
//! | walk of names from, or create/readdir/mkdir/… in, a non-directory | `ENOTDIR` |
//! | read or write of a directory; open a directory for writing | `EISDIR` |
//! | read/write on a fid not opened for it; readdir, lock on an unopened fid | `EBADF` |
//! | more than 16 walk names | `E2BIG` |
//! | a name that is empty, `.`/`..` (create-like requests) or holds `/` or NUL | `EINVAL` |
//! | a name longer than 255 bytes | `ENAMETOOLONG` |
//! | read/readdir count above msize − IOHDRSZ | nothing: the count is cut to fit (a shorter reply, as diod and the kernel expect) |
//! | afid that is not an auth fid | `EBADF` |

use crate::fid::{FidKind, FidTable};
pub(crate) use crate::job::{FidRef, Job};
use nf_ninep::errno::{EBADF, EBUSY, EINVAL, EISDIR, ENAMETOOLONG, ENOTDIR, EPROTO};
use nf_ninep::frame::io_count_limit;
use nf_ninep::message::*;
use nf_ninep::types::{LOpenFlags, MAXWELEM, NOFID};

/// Argument list too long: a walk of more than 16 names.
pub(crate) const E2BIG: u32 = 7;

/// Longest name a create-like request may carry.
const NAME_MAX: usize = 255;

fn err<T>(ecode: u32) -> Result<T, Rlerror> {
    Err(Rlerror::new(ecode))
}

/// A ready fid of kind `File`.
fn file<S>(fids: &FidTable<S>, fid: u32) -> Result<FidRef<S>, Rlerror> {
    let entry = fids.get(fid)?;
    if entry.meta().kind != FidKind::File {
        return err(EBADF);
    }
    Ok(entry)
}

/// A ready directory fid (open or not).
fn dir<S>(fids: &FidTable<S>, fid: u32) -> Result<FidRef<S>, Rlerror> {
    let entry = file(fids, fid)?;
    let meta = entry.meta();
    if !meta.is_dir() {
        return err(ENOTDIR);
    }
    Ok(entry)
}

/// A name for a new directory entry: one path element, not `.` or `..`.
fn new_name(name: &str) -> Result<(), Rlerror> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return err(EINVAL);
    }
    if name.len() > NAME_MAX {
        return err(ENAMETOOLONG);
    }
    Ok(())
}

/// A walk element: one path element (`.` and `..` are the tree's business).
fn walk_name(name: &str) -> Result<(), Rlerror> {
    if name.is_empty() || name.contains(['/', '\0']) {
        return err(EINVAL);
    }
    if name.len() > NAME_MAX {
        return err(ENAMETOOLONG);
    }
    Ok(())
}

/// Caps a read/readdir count at msize − IOHDRSZ, whatever was asked (read(5): the
/// server may return fewer bytes than asked for).
fn io_count(msize: u32, count: u32) -> Result<u32, Rlerror> {
    Ok(io_count_limit(msize, count))
}

/// Checks `msg` (anything but `Tversion` and `Tflush`, which the connection handles).
pub(crate) fn check<S>(
    fids: &mut FidTable<S>,
    msize: u32,
    msg: Tmessage,
) -> Result<Job<S>, Rlerror> {
    use Tmessage as T;
    Ok(match msg {
        T::Tversion(_) | T::Tflush(_) => return err(EPROTO),
        T::Tauth(req) => {
            fids.reserve(req.afid)?;
            Job::Auth { req }
        }
        T::Tattach(req) => {
            let afid = if req.afid == NOFID {
                None
            } else {
                let entry = fids.get(req.afid)?;
                if entry.meta().kind != FidKind::Auth {
                    return err(EBADF);
                }
                Some(entry)
            };
            fids.reserve(req.fid)?;
            Job::Attach { req, afid }
        }
        T::Twalk(req) => {
            if req.wnames.len() > MAXWELEM {
                return err(E2BIG);
            }
            let fid = file(fids, req.fid)?;
            let meta = fid.meta();
            if meta.open.is_some() {
                return err(EBUSY);
            }
            if !req.wnames.is_empty() && !meta.is_dir() {
                return err(ENOTDIR);
            }
            for name in &req.wnames {
                walk_name(name)?;
            }
            if req.newfid != req.fid {
                fids.reserve(req.newfid)?;
            }
            Job::Walk { fid, req }
        }
        T::Tlopen(req) => {
            let fid = file(fids, req.fid)?;
            let meta = fid.meta();
            if meta.open.is_some() {
                return err(EBUSY);
            }
            if meta.is_dir() && req.flags.access_mode() != LOpenFlags::RDONLY.0 {
                return err(EISDIR);
            }
            Job::Lopen { fid, req }
        }
        T::Tlcreate(req) => {
            let dir = dir(fids, req.fid)?;
            if dir.meta().open.is_some() {
                return err(EBUSY);
            }
            new_name(&req.name)?;
            Job::Lcreate { dir, req }
        }
        T::Tread(mut req) => {
            let fid = fids.get(req.fid)?;
            let meta = fid.meta();
            if meta.kind == FidKind::File && meta.is_dir() {
                return err(EISDIR);
            }
            if !meta.readable() {
                return err(EBADF);
            }
            req.count = io_count(msize, req.count)?;
            Job::Read { fid, req }
        }
        T::Twrite(req) => {
            let fid = fids.get(req.fid)?;
            let meta = fid.meta();
            if meta.kind == FidKind::File && meta.is_dir() {
                return err(EISDIR);
            }
            if !meta.writable() {
                return err(EBADF);
            }
            Job::Write { fid, req }
        }
        T::Treaddir(mut req) => {
            let dir = dir(fids, req.fid)?;
            if dir.meta().open.is_none() {
                return err(EBADF);
            }
            req.count = io_count(msize, req.count)?;
            Job::Readdir { dir, req }
        }
        T::Tclunk(req) => {
            fids.get(req.fid)?;
            let fid = fids.remove(req.fid).ok_or(Rlerror::new(EBADF))?;
            Job::Clunk { fid }
        }
        T::Tremove(req) => {
            fids.get(req.fid)?;
            let fid = fids.remove(req.fid).ok_or(Rlerror::new(EBADF))?;
            Job::Remove { fid }
        }
        T::Tgetattr(req) => Job::Getattr {
            fid: file(fids, req.fid)?,
            req,
        },
        T::Tsetattr(req) => Job::Setattr {
            fid: file(fids, req.fid)?,
            req,
        },
        T::Tstatfs(req) => Job::Statfs {
            fid: file(fids, req.fid)?,
            req,
        },
        T::Tfsync(req) => Job::Fsync {
            fid: file(fids, req.fid)?,
            req,
        },
        T::Treadlink(req) => Job::Readlink {
            fid: file(fids, req.fid)?,
            req,
        },
        T::Tmkdir(req) => {
            new_name(&req.name)?;
            Job::Mkdir {
                dir: dir(fids, req.dfid)?,
                req,
            }
        }
        T::Tmknod(req) => {
            new_name(&req.name)?;
            Job::Mknod {
                dir: dir(fids, req.dfid)?,
                req,
            }
        }
        T::Tsymlink(req) => {
            new_name(&req.name)?;
            Job::Symlink {
                dir: dir(fids, req.fid)?,
                req,
            }
        }
        T::Tlink(req) => {
            new_name(&req.name)?;
            Job::Link {
                dir: dir(fids, req.dfid)?,
                fid: file(fids, req.fid)?,
                req,
            }
        }
        T::Trename(req) => {
            new_name(&req.name)?;
            Job::Rename {
                fid: file(fids, req.fid)?,
                dir: dir(fids, req.dfid)?,
                req,
            }
        }
        T::Trenameat(req) => {
            new_name(&req.oldname)?;
            new_name(&req.newname)?;
            Job::Renameat {
                olddir: dir(fids, req.olddirfid)?,
                newdir: dir(fids, req.newdirfid)?,
                req,
            }
        }
        T::Tunlinkat(req) => {
            new_name(&req.name)?;
            Job::Unlinkat {
                dir: dir(fids, req.dirfid)?,
                req,
            }
        }
        T::Txattrwalk(req) => {
            let fid = file(fids, req.fid)?;
            fids.reserve(req.newfid)?;
            Job::Xattrwalk { fid, req }
        }
        T::Txattrcreate(req) => {
            let fid = file(fids, req.fid)?;
            if fid.meta().open.is_some() {
                return err(EBUSY);
            }
            Job::Xattrcreate { fid, req }
        }
        T::Tlock(req) => Job::Lock {
            fid: opened(fids, req.fid)?,
            req,
        },
        T::Tgetlock(req) => Job::Getlock {
            fid: opened(fids, req.fid)?,
            req,
        },
    })
}

/// A ready file fid that is open.
fn opened<S>(fids: &FidTable<S>, fid: u32) -> Result<FidRef<S>, Rlerror> {
    let entry = file(fids, fid)?;
    if entry.meta().open.is_none() {
        return err(EBADF);
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fid::{FidEntry, FidMeta};
    use nf_ninep::errno::{EEXIST, EMFILE};
    use nf_ninep::types::{Qid, QidType};

    fn table() -> FidTable<()> {
        let mut t = FidTable::new(4);
        let root = Qid {
            ty: QidType::DIR,
            version: 0,
            path: 1,
        };
        t.reserve(0).unwrap();
        assert!(t
            .fill(0, FidEntry::new((), FidMeta::new(root, FidKind::File)))
            .is_ok());
        t.reserve(1).unwrap();
        assert!(t
            .fill(
                1,
                FidEntry::new((), FidMeta::new(Qid::default(), FidKind::File))
            )
            .is_ok());
        t
    }

    fn ecode(r: Result<Job<()>, Rlerror>) -> u32 {
        match r {
            Ok(_) => 0,
            Err(e) => e.ecode,
        }
    }

    fn walk(fid: u32, newfid: u32, names: &[&str]) -> Tmessage {
        Twalk {
            fid,
            newfid,
            wnames: names.iter().map(|s| s.to_string()).collect(),
        }
        .into()
    }

    #[test]
    fn walk_rules() {
        let mut t = table();
        assert_eq!(ecode(check(&mut t, 8192, walk(9, 5, &["a"]))), EBADF);
        assert_eq!(ecode(check(&mut t, 8192, walk(0, 1, &["a"]))), EEXIST);
        assert_eq!(ecode(check(&mut t, 8192, walk(1, 5, &["a"]))), ENOTDIR);
        assert_eq!(ecode(check(&mut t, 8192, walk(0, 5, &["a/b"]))), EINVAL);
        let many: Vec<&str> = vec!["x"; 17];
        assert_eq!(ecode(check(&mut t, 8192, walk(0, 5, &many))), E2BIG);
        assert_eq!(ecode(check(&mut t, 8192, walk(0, 5, &["a"]))), 0);
        // 5 is reserved now: reuse and use-before-ready both fail.
        assert_eq!(ecode(check(&mut t, 8192, walk(0, 5, &["a"]))), EEXIST);
        assert_eq!(ecode(check(&mut t, 8192, Tclunk { fid: 5 }.into())), EBADF);
        assert_eq!(ecode(check(&mut t, 8192, walk(0, 6, &[]))), 0);
        assert_eq!(ecode(check(&mut t, 8192, walk(0, 7, &[]))), EMFILE);
    }

    #[test]
    fn io_rules() {
        let mut t = table();
        let read = |fid, count| {
            Tmessage::from(Tread {
                fid,
                offset: 0,
                count,
            })
        };
        assert_eq!(ecode(check(&mut t, 8192, read(1, 10))), EBADF); // not open
        assert_eq!(ecode(check(&mut t, 8192, read(0, 10))), EISDIR);
        t.get(1)
            .unwrap()
            .set_meta(|m| m.open = Some(LOpenFlags::RDONLY));
        match check(&mut t, 8192, read(1, u32::MAX)) {
            Ok(Job::Read { req, .. }) => assert_eq!(req.count, 8192 - 24, "cut, not refused"),
            _ => panic!("a huge read count is cut to fit msize"),
        }
        match check(&mut t, 8192, read(1, 8192)) {
            Ok(Job::Read { req, .. }) => assert_eq!(req.count, 8192 - 24),
            _ => panic!("read refused"),
        }
        let write = Twrite {
            fid: 1,
            offset: 0,
            data: vec![1].into(),
        };
        assert_eq!(ecode(check(&mut t, 8192, write.into())), EBADF);
        let lopen = Tlopen {
            fid: 0,
            flags: LOpenFlags::RDWR,
        };
        assert_eq!(ecode(check(&mut t, 8192, lopen.into())), EISDIR);
    }

    #[test]
    fn create_names() {
        let mut t = table();
        for (name, code) in [("", EINVAL), ("..", EINVAL), ("a/b", EINVAL), ("ok", 0)] {
            let m = Tmkdir {
                dfid: 0,
                name: name.into(),
                mode: 0o755,
                gid: 0,
            };
            assert_eq!(ecode(check(&mut t, 8192, m.into())), code, "{name:?}");
        }
        let long = "x".repeat(256);
        let m = Tunlinkat {
            dirfid: 0,
            name: long,
            flags: Default::default(),
        };
        assert_eq!(ecode(check(&mut t, 8192, m.into())), ENAMETOOLONG);
    }
}
