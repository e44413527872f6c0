//! The [`Filesystem`] impl of [`ReadOnlyView`].

use std::os::unix::fs::FileExt;
use std::sync::Arc;

use rustix::fs::{FileType, Mode, OFlags};

use super::overlay::{key, without_set_id, Entry, MemDir, MemFile, MemMeta, S_ISGID};
use super::{Found, ReadOnlyView, RoFid, RoOpen};
use crate::host::{child, os, step, HOST_VALID};
use crate::listing::Listing;
use crate::now;
use nf_ninep::errno::{EBADF, EBUSY, EEXIST, EINVAL, EISDIR, ELOOP, EOPNOTSUPP, EPERM, EROFS};
use nf_ninep::message::*;
use nf_ninep::types::{LOpenFlags, Qid, SetattrMask, Timespec, UnlinkatFlags};
use nf_ninep_server::FsError;
use nf_ninep_server::{Ctx, Filesystem, FsResult};

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_ISVTX: u32 = 0o1000;

/// The directory holding `path` (the root for the root).
fn parent_of(path: &[String]) -> &[String] {
    &path[..path.len().saturating_sub(1)]
}

fn writes(flags: LOpenFlags) -> bool {
    let m = flags.access_mode();
    m == LOpenFlags::WRONLY.0 || m == LOpenFlags::RDWR.0
}

/// The time a setattr asks for: the given one with `given`, else now.
fn chosen(req: &Tsetattr, given: SetattrMask, t: Timespec) -> Timespec {
    if req.valid.contains(given) {
        t
    } else {
        now()
    }
}

impl ReadOnlyView {
    /// Creates a memory entry at `path` (the parent must be a directory and the name free).
    fn add_entry(&self, path: &[String], make: impl FnOnce(u64) -> Entry) -> FsResult<Entry> {
        self.need_dir(&path[..path.len() - 1])?;
        let mut ov = self.overlay();
        if self.find_in(&ov, path).is_ok() {
            return Err(FsError::Errno(EEXIST));
        }
        let entry = make(ov.new_qid_path());
        ov.remove_tree(&key(path));
        ov.insert(key(path), entry.clone())?;
        Ok(entry)
    }
}

impl Filesystem for ReadOnlyView {
    type Fid = RoFid;

    /// As `PassthroughFs`: only an open behind a lease break waits, and it answers
    /// [`FsError::WouldBlock`] on the reader thread.
    fn runs_inline(&self) -> bool {
        true
    }

    fn attach(&self, _: &Ctx, _: &Tattach, _: Option<&RoFid>) -> FsResult<(Rattach, RoFid)> {
        let qid = self.qid(&self.find(&[])?);
        Ok((Rattach { qid }, self.fid(Vec::new())))
    }

    fn walk1(&self, _: &Ctx, dir: &RoFid, name: &str) -> FsResult<(Qid, RoFid)> {
        let mut path = dir.path();
        step(&mut path, name);
        let qid = self.qid(&self.find(&path)?);
        Ok((qid, self.fid(path)))
    }

    fn clone_fid(&self, _: &Ctx, fid: &RoFid) -> FsResult<RoFid> {
        Ok(self.fid(fid.path()))
    }

    fn getattr(&self, _: &Ctx, fid: &RoFid, _: &Tgetattr) -> FsResult<Rgetattr> {
        let found = match fid.open.get() {
            Some(RoOpen::Mem { file, .. }) => Found::File(Arc::clone(file)),
            Some(RoOpen::Host(file)) => Found::Host(rustix::fs::fstat(file).map_err(os)?),
            _ => self.find(&fid.path())?,
        };
        let mut attr = Self::attr(&found);
        match found {
            Found::File(_) => attr.mode = S_IFREG | (attr.mode & 0o7777),
            Found::Dir(_) => attr.mode = S_IFDIR | (attr.mode & 0o7777),
            Found::Host(_) => {}
        }
        Ok(Rgetattr {
            valid: HOST_VALID,
            qid: self.qid(&found),
            attr,
        })
    }

    fn lopen(&self, ctx: &Ctx, fid: &RoFid, req: &Tlopen) -> FsResult<Rlopen> {
        let path = fid.path();
        let append = req.flags.contains(LOpenFlags::APPEND);
        let truncate = req.flags.contains(LOpenFlags::TRUNC) && writes(req.flags);
        if writes(req.flags) || truncate {
            self.permit(ctx, &path, 2)?;
        }
        let opened = match self.find(&path)? {
            Found::Dir(_) => RoOpen::Dir(Listing::default()),
            Found::File(file) => {
                if truncate {
                    file.truncate(0)?;
                }
                RoOpen::Mem { file, append }
            }
            Found::Host(st) => match FileType::from_raw_mode(st.st_mode) {
                FileType::Directory => RoOpen::Dir(Listing::default()),
                FileType::RegularFile if writes(req.flags) || truncate => RoOpen::Mem {
                    file: self.copy_up(&path, truncate, ctx)?,
                    append,
                },
                FileType::RegularFile => {
                    let (file, _) =
                        self.root
                            .open_file(&path, OFlags::RDONLY, Mode::empty(), ctx)?;
                    RoOpen::Host(file)
                }
                FileType::Symlink => return Err(FsError::Errno(ELOOP)),
                _ => return Err(FsError::Errno(EOPNOTSUPP)),
            },
        };
        let qid = match &opened {
            RoOpen::Mem { file, .. } => file.qid(),
            _ => self.qid(&self.find(&path)?),
        };
        fid.open.set(opened).map_err(|_| FsError::Errno(EBUSY))?;
        Ok(Rlopen { qid, iounit: 0 })
    }

    fn lcreate(&self, ctx: &Ctx, dir: &RoFid, req: &Tlcreate) -> FsResult<(Rlcreate, RoFid)> {
        let path = child(&dir.path(), &req.name);
        self.permit_parent(ctx, &path)?;
        let budget = Arc::clone(&self.budget);
        let (uid, gid) = (ctx.maker().uid(), ctx.maker().gid());
        let meta = MemMeta::new(S_IFREG | (req.mode & 0o7777), uid, gid);
        let entry = self.add_entry(&path, |qid_path| {
            Entry::File(MemFile::new(qid_path, Vec::new(), meta, budget))
        })?;
        let Entry::File(file) = entry else {
            return Err(FsError::Errno(EINVAL));
        };
        let qid = file.qid();
        let fid = self.fid(path);
        let append = req.flags.contains(LOpenFlags::APPEND);
        let _ = fid.open.set(RoOpen::Mem { file, append });
        Ok((Rlcreate { qid, iounit: 0 }, fid))
    }

    fn read(&self, _: &Ctx, fid: &RoFid, req: &Tread) -> FsResult<Rread> {
        let data = match fid.open.get() {
            Some(RoOpen::Host(file)) => {
                let mut buf = vec![0u8; req.count as usize];
                let n = file.read_at(&mut buf, req.offset)?;
                buf.truncate(n);
                buf
            }
            Some(RoOpen::Mem { file, .. }) => file.read(req.offset, req.count),
            Some(RoOpen::Dir(_)) => return Err(FsError::Errno(EISDIR)),
            None => return Err(FsError::Errno(EBADF)),
        };
        Ok(Rread { data: data.into() })
    }

    fn write(&self, ctx: &Ctx, fid: &RoFid, req: &Twrite) -> FsResult<Rwrite> {
        match fid.open.get() {
            Some(RoOpen::Mem { file, append }) => {
                let count = file.write(req.offset, req.data.as_slice(), *append)?;
                file.written_by(ctx);
                Ok(Rwrite { count })
            }
            _ => Err(FsError::Errno(EBADF)),
        }
    }

    /// The merged listing is a snapshot per open directory, charged to the
    /// connection's memory budget while it is kept (`listing`).
    fn readdir(&self, ctx: &Ctx, dir: &RoFid, req: &Treaddir) -> FsResult<Rreaddir> {
        match dir.open.get() {
            Some(RoOpen::Dir(listing)) => {
                listing.read(ctx, req.offset, req.count, || self.entries(&dir.path()))
            }
            _ => Err(FsError::Errno(EBADF)),
        }
    }

    fn mkdir(&self, ctx: &Ctx, dir: &RoFid, req: &Tmkdir) -> FsResult<Rmkdir> {
        let path = child(&dir.path(), &req.name);
        self.permit_parent(ctx, &path)?;
        let (uid, gid) = (ctx.maker().uid(), ctx.maker().gid());
        let meta = MemMeta::new(S_IFDIR | (req.mode & 0o7777), uid, gid);
        let entry = self.add_entry(&path, |qid_path| {
            Entry::Dir(Arc::new(MemDir {
                qid_path,
                meta: std::sync::Mutex::new(meta),
            }))
        })?;
        let Entry::Dir(d) = entry else {
            return Err(FsError::Errno(EINVAL));
        };
        Ok(Rmkdir { qid: d.qid() })
    }

    fn readlink(&self, _: &Ctx, fid: &RoFid, _: &Treadlink) -> FsResult<Rreadlink> {
        let path = fid.path();
        if !matches!(self.find(&path)?, Found::Host(_)) {
            return Err(FsError::Errno(EINVAL));
        }
        let (dir, name) = self.root.locate(&path)?;
        let target = rustix::fs::readlinkat(&dir, name, Vec::new()).map_err(os)?;
        let target = target.into_string().map_err(|_| FsError::Errno(EINVAL))?;
        Ok(Rreadlink { target })
    }

    fn rename(&self, ctx: &Ctx, fid: &RoFid, dir: &RoFid, req: &Trename) -> FsResult<Rrename> {
        let (from, to) = (fid.path(), child(&dir.path(), &req.name));
        self.permit_rename(ctx, &from, &to)?;
        self.move_file(from, to, ctx)?;
        Ok(Rrename)
    }

    fn renameat(
        &self,
        ctx: &Ctx,
        olddir: &RoFid,
        newdir: &RoFid,
        req: &Trenameat,
    ) -> FsResult<Rrenameat> {
        let (from, to) = (
            child(&olddir.path(), &req.oldname),
            child(&newdir.path(), &req.newname),
        );
        self.permit_rename(ctx, &from, &to)?;
        self.move_file(from, to, ctx)?;
        Ok(Rrenameat)
    }

    fn unlinkat(&self, ctx: &Ctx, dir: &RoFid, req: &Tunlinkat) -> FsResult<Runlinkat> {
        let want_dir = req.flags.contains(UnlinkatFlags::REMOVEDIR);
        let path = child(&dir.path(), &req.name);
        self.permit_remove(ctx, &path)?;
        self.unlink(&path, Some(want_dir))?;
        Ok(Runlinkat)
    }

    fn remove(&self, ctx: &Ctx, fid: &RoFid) -> FsResult<Rremove> {
        self.permit_remove(ctx, &fid.path())?;
        self.unlink(&fid.path(), None)?;
        Ok(Rremove)
    }

    fn setattr(&self, ctx: &Ctx, fid: &RoFid, req: &Tsetattr) -> FsResult<Rsetattr> {
        let path = fid.path();
        let any = |bits: &[SetattrMask]| bits.iter().any(|&b| req.valid.contains(b));
        let chown = any(&[SetattrMask::UID, SetattrMask::GID]);
        if chown {
            self.permit_chown(ctx, &path, req)?;
        }
        if any(&[
            SetattrMask::MODE,
            SetattrMask::ATIME_SET,
            SetattrMask::MTIME_SET,
        ]) {
            self.permit_owner(ctx, &path)?;
        }
        if any(&[SetattrMask::SIZE, SetattrMask::ATIME, SetattrMask::MTIME]) {
            self.permit(ctx, &path, 2).or_else(|e| {
                // utimes(now) takes write permission or ownership.
                self.permit_owner(ctx, &path).map_err(|_| e)
            })?;
        }
        let meta_of = |found: &Found| -> FsResult<Option<Arc<MemFile>>> {
            match found {
                Found::File(f) => Ok(Some(Arc::clone(f))),
                Found::Host(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
                    Ok(Some(self.copy_up(&path, false, ctx)?))
                }
                Found::Dir(_) => Ok(None),
                Found::Host(_) => Err(FsError::Errno(EROFS)),
            }
        };
        let found = match fid.open.get() {
            Some(RoOpen::Mem { file, .. }) => Found::File(Arc::clone(file)),
            _ => self.find(&path)?,
        };
        let file = meta_of(&found)?;
        if let (Some(f), true) = (&file, req.valid.contains(SetattrMask::SIZE)) {
            f.truncate(req.attr.size)?;
            f.written_by(ctx);
        }
        let apply = |m: &mut MemMeta, is_dir: bool| {
            if req.valid.contains(SetattrMask::UID) {
                m.uid = req.attr.uid;
            }
            if req.valid.contains(SetattrMask::GID) {
                m.gid = req.attr.gid;
            }
            if chown && !is_dir {
                // chown(2) of a file drops its set-id bits, whoever asks (since 2.2.13).
                m.mode = without_set_id(m.mode);
            }
            if req.valid.contains(SetattrMask::MODE) {
                let mut mode = req.attr.mode & 0o7777;
                // chmod(2): a user outside the file's group cannot set its setgid bit.
                if ctx
                    .creds()
                    .is_some_and(|c| !c.is_root() && !c.in_group(m.gid))
                {
                    mode &= !S_ISGID;
                }
                m.mode = (m.mode & !0o7777) | mode;
            }
            if req.valid.contains(SetattrMask::ATIME) {
                m.atime = chosen(req, SetattrMask::ATIME_SET, req.attr.atime);
            }
            if req.valid.contains(SetattrMask::MTIME) {
                m.mtime = chosen(req, SetattrMask::MTIME_SET, req.attr.mtime);
            }
            m.ctime = now();
        };
        match (&file, &found) {
            (Some(f), _) => apply(&mut nf_ninep_server::lock(&f.meta), false),
            (None, Found::Dir(d)) => apply(&mut nf_ninep_server::lock(&d.meta), true),
            _ => return Err(FsError::Errno(EROFS)),
        }
        Ok(Rsetattr)
    }

    fn statfs(&self, _: &Ctx, _: &RoFid, _: &Tstatfs) -> FsResult<Rstatfs> {
        self.root.statfs()
    }
}

impl ReadOnlyView {
    /// `EACCES` unless the request's user may access `path` for `want` (4 read, 2 write,
    /// 1 search), by the file's owner, group and mode, in memory or on the host: the
    /// overlay is shared by every client, so changing it takes the rights changing the
    /// host file would.
    fn permit(&self, ctx: &Ctx, path: &[String], want: u32) -> FsResult<()> {
        if ctx.creds().is_none() {
            return Ok(());
        }
        let a = Self::attr(&self.find(path)?);
        ctx.permit((a.uid, a.gid), a.mode, want)
    }

    /// `EACCES` unless the user may add or remove entries in the directory holding
    /// `path`.
    fn permit_parent(&self, ctx: &Ctx, path: &[String]) -> FsResult<()> {
        self.permit(ctx, parent_of(path), 3)
    }

    /// [`Self::permit_parent`], and the sticky rule for the entry at `path` (which
    /// must exist): unlink, rmdir, and the source of a rename.
    fn permit_remove(&self, ctx: &Ctx, path: &[String]) -> FsResult<()> {
        self.permit_parent(ctx, path)?;
        self.permit_sticky(ctx, path)
    }

    /// The checks of rename(2): `from` may be removed, an entry may be added beside
    /// `to`, and an entry already at `to` (which the rename replaces) passes the sticky
    /// rule as if removed.
    fn permit_rename(&self, ctx: &Ctx, from: &[String], to: &[String]) -> FsResult<()> {
        self.permit_remove(ctx, from)?;
        self.permit_parent(ctx, to)?;
        match self.find(to) {
            Ok(_) => self.permit_sticky(ctx, to),
            Err(_) => Ok(()),
        }
    }

    /// `EPERM` where the directory holding `path` is sticky (`/tmp`'s 1777) and the
    /// user owns neither the entry nor the directory and is not root: the kernel's
    /// rule, applied to host entries (by their host owner) as to memory ones, so that
    /// no user can white out, or replace, a file the others rely on.
    fn permit_sticky(&self, ctx: &Ctx, path: &[String]) -> FsResult<()> {
        let Some(c) = ctx.creds() else {
            return Ok(());
        };
        let dir = Self::attr(&self.find(parent_of(path))?);
        if c.is_root() || dir.mode & S_ISVTX == 0 || dir.uid == c.uid() {
            return Ok(());
        }
        if Self::attr(&self.find(path)?).uid == c.uid() {
            Ok(())
        } else {
            Err(FsError::Errno(EPERM))
        }
    }

    /// `EPERM` unless chown(2) would let the user give `path` the owner and group
    /// `req` asks for: root may give anything; a file's owner may keep the owner and
    /// change the group to one of their own groups; nobody else may.
    fn permit_chown(&self, ctx: &Ctx, path: &[String], req: &Tsetattr) -> FsResult<()> {
        let Some(c) = ctx.creds() else {
            return Ok(());
        };
        if c.is_root() {
            return Ok(());
        }
        let a = Self::attr(&self.find(path)?);
        let owner_kept = !req.valid.contains(SetattrMask::UID) || req.attr.uid == a.uid;
        let group_ok = !req.valid.contains(SetattrMask::GID)
            || req.attr.gid == a.gid
            || c.in_group(req.attr.gid);
        if a.uid == c.uid() && owner_kept && group_ok {
            Ok(())
        } else {
            Err(FsError::Errno(EPERM))
        }
    }

    /// `EPERM` unless the user owns `path` (or is root): chmod and utimes.
    fn permit_owner(&self, ctx: &Ctx, path: &[String]) -> FsResult<()> {
        let Some(c) = ctx.creds() else {
            return Ok(());
        };
        if c.is_root() || Self::attr(&self.find(path)?).uid == c.uid() {
            Ok(())
        } else {
            Err(FsError::Errno(EPERM))
        }
    }
}
