//! [`PassthroughFs`] (#U): a host directory exported read-write.
//!
//! Every path is resolved beneath the export root by the rules in `host.rs`: `..` stops
//! at the root and symlinks are never followed, so nothing outside the export can be
//! reached. The server process's own permissions apply; the attaching user is not
//! mapped yet (the node daemon's security step will do that), and the `gid` of create
//! requests is ignored.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Timestamps, UTIME_NOW, UTIME_OMIT};

use crate::host::{
    attr, child, open_flags, os, step, HostRoot, Kept, PathRegistry, SharedPath, Versions,
    HOST_VALID,
};
use crate::hostdir::HostDir;
use crate::ExportError;
use nf_ninep::errno::{EBADF, EBUSY, EINVAL, EISDIR, ELOOP, EOPNOTSUPP, EPERM};
use nf_ninep::message::*;
use nf_ninep::types::{Qid, SetattrMask, Timespec, UnlinkatFlags};
use nf_ninep_server::lock;
use nf_ninep_server::FsError;
use nf_ninep_server::{Ctx, Filesystem, FsResult};

/// Exports a host directory, read-write (#U).
pub struct PassthroughFs {
    export: PathBuf,
    root: HostRoot,
    versions: Versions,
    paths: PathRegistry,
}

/// A [`PassthroughFs`] fid: a path below the root, and the open file or directory.
pub struct HostFid {
    path: SharedPath,
    open: OnceLock<HostOpen>,
}

enum HostOpen {
    File { file: Kept<File>, qid_path: u64 },
    Dir(HostDir),
}

impl PassthroughFs {
    /// Exports the directory `dir`.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self, ExportError> {
        let (export, root) = HostRoot::export(dir.as_ref())?;
        Ok(PassthroughFs {
            export,
            root,
            versions: Versions::default(),
            paths: PathRegistry::default(),
        })
    }

    /// The exported directory.
    pub fn export(&self) -> &Path {
        &self.export
    }

    fn fid(&self, path: Vec<String>) -> HostFid {
        HostFid {
            path: self.paths.track(path),
            open: OnceLock::new(),
        }
    }

    fn qid_of(&self, path: &[String]) -> FsResult<Qid> {
        Ok(self.root.qid(&self.root.lstat(path)?, &self.versions))
    }

    fn open_file(fid: &HostFid) -> FsResult<(&File, u64)> {
        match fid.open.get() {
            Some(HostOpen::File { file, qid_path }) => Ok((file, *qid_path)),
            Some(HostOpen::Dir(_)) => Err(FsError::Errno(EISDIR)),
            None => Err(FsError::Errno(EBADF)),
        }
    }

    /// The qid of `.` or `..` in the directory `path` (rule 4 of `hostdir.rs`).
    fn dot_qid(&self, path: &[String], name: &str) -> FsResult<Qid> {
        let mut at = path.to_vec();
        step(&mut at, name);
        self.qid_of(&at)
    }

    fn move_path(&self, from: Vec<String>, to: Vec<String>) -> FsResult<()> {
        if from.is_empty() || to.is_empty() {
            return Err(FsError::Errno(EBUSY));
        }
        let (from_dir, from_name) = self.root.locate(&from)?;
        let (to_dir, to_name) = self.root.locate(&to)?;
        rustix::fs::renameat(&from_dir, from_name, &to_dir, to_name).map_err(os)?;
        self.paths.renamed(&from, &to);
        Ok(())
    }

    fn set_times(&self, path: &[String], req: &Tsetattr) -> FsResult<()> {
        let pick = |set: SetattrMask, given: SetattrMask, t: Timespec| {
            if !req.valid.contains(set) {
                rustix::fs::Timespec {
                    tv_sec: 0,
                    tv_nsec: UTIME_OMIT,
                }
            } else if req.valid.contains(given) {
                rustix::fs::Timespec {
                    tv_sec: i64::try_from(t.sec).unwrap_or(i64::MAX),
                    tv_nsec: i64::try_from(t.nsec).unwrap_or(0),
                }
            } else {
                rustix::fs::Timespec {
                    tv_sec: 0,
                    tv_nsec: UTIME_NOW,
                }
            }
        };
        let times = Timestamps {
            last_access: pick(SetattrMask::ATIME, SetattrMask::ATIME_SET, req.attr.atime),
            last_modification: pick(SetattrMask::MTIME, SetattrMask::MTIME_SET, req.attr.mtime),
        };
        let (dir, name) = self.root.locate(path)?;
        rustix::fs::utimensat(&dir, name, &times, AtFlags::SYMLINK_NOFOLLOW).map_err(os)
    }
}

impl HostFid {
    fn path(&self) -> Vec<String> {
        lock(&self.path).clone()
    }
}

impl Filesystem for PassthroughFs {
    type Fid = HostFid;

    /// Host calls return promptly; the one wait, an open behind a lease break, answers
    /// [`FsError::WouldBlock`] on the reader thread (rule 5 of `host.rs`).
    fn runs_inline(&self) -> bool {
        true
    }

    fn attach(&self, _: &Ctx, _: &Tattach, _: Option<&HostFid>) -> FsResult<(Rattach, HostFid)> {
        Ok((
            Rattach {
                qid: self.qid_of(&[])?,
            },
            self.fid(Vec::new()),
        ))
    }

    fn walk1(&self, _: &Ctx, dir: &HostFid, name: &str) -> FsResult<(Qid, HostFid)> {
        let mut path = dir.path();
        step(&mut path, name);
        let qid = self.qid_of(&path)?;
        Ok((qid, self.fid(path)))
    }

    fn clone_fid(&self, _: &Ctx, fid: &HostFid) -> FsResult<HostFid> {
        Ok(self.fid(fid.path()))
    }

    fn getattr(&self, _: &Ctx, fid: &HostFid, _: &Tgetattr) -> FsResult<Rgetattr> {
        let st = match fid.open.get() {
            Some(HostOpen::File { file, .. }) => rustix::fs::fstat(file).map_err(os)?,
            _ => self.root.lstat(&fid.path())?,
        };
        Ok(Rgetattr {
            valid: HOST_VALID,
            qid: self.root.qid(&st, &self.versions),
            attr: attr(&st),
        })
    }

    fn lopen(&self, ctx: &Ctx, fid: &HostFid, req: &Tlopen) -> FsResult<Rlopen> {
        let path = fid.path();
        let st = self.root.lstat(&path)?;
        let opened = match FileType::from_raw_mode(st.st_mode) {
            FileType::Directory => HostOpen::Dir(HostDir::open(&self.root, &path, ctx)?),
            FileType::RegularFile => {
                let (file, st) =
                    self.root
                        .open_file(&path, open_flags(req.flags)?, Mode::empty(), ctx)?;
                let qid_path = self.root.qid(&st, &self.versions).path;
                HostOpen::File { file, qid_path }
            }
            FileType::Symlink => return Err(FsError::Errno(ELOOP)),
            _ => return Err(FsError::Errno(EOPNOTSUPP)),
        };
        fid.open.set(opened).map_err(|_| FsError::Errno(EBUSY))?;
        Ok(Rlopen {
            qid: self.qid_of(&path)?,
            iounit: 0,
        })
    }

    fn lcreate(&self, ctx: &Ctx, dir: &HostFid, req: &Tlcreate) -> FsResult<(Rlcreate, HostFid)> {
        let path = child(&dir.path(), &req.name);
        let flags = open_flags(req.flags)? | OFlags::CREATE;
        let mode = Mode::from_raw_mode(req.mode & 0o7777);
        let (file, st) = self.root.open_file(&path, flags, mode, ctx)?;
        let qid = self.root.qid(&st, &self.versions);
        let fid = self.fid(path);
        let _ = fid.open.set(HostOpen::File {
            file,
            qid_path: qid.path,
        });
        Ok((Rlcreate { qid, iounit: 0 }, fid))
    }

    fn read(&self, _: &Ctx, fid: &HostFid, req: &Tread) -> FsResult<Rread> {
        let (file, _) = Self::open_file(fid)?;
        let mut buf = vec![0u8; req.count as usize];
        let n = file.read_at(&mut buf, req.offset)?;
        buf.truncate(n);
        Ok(Rread { data: buf.into() })
    }

    fn write(&self, _: &Ctx, fid: &HostFid, req: &Twrite) -> FsResult<Rwrite> {
        let (file, qid_path) = Self::open_file(fid)?;
        let n = file.write_at(req.data.as_slice(), req.offset)?;
        self.versions.bump(qid_path);
        Ok(Rwrite { count: n as u32 })
    }

    fn readdir(&self, ctx: &Ctx, dir: &HostFid, req: &Treaddir) -> FsResult<Rreaddir> {
        match dir.open.get() {
            Some(HostOpen::Dir(stream)) => {
                let path = dir.path();
                stream.page(ctx, req.offset, req.count, |name| self.dot_qid(&path, name))
            }
            _ => Err(FsError::Errno(EBADF)),
        }
    }

    fn mkdir(&self, _: &Ctx, dir: &HostFid, req: &Tmkdir) -> FsResult<Rmkdir> {
        let parent = dir.path();
        let fd = self.root.dir(&parent)?;
        rustix::fs::mkdirat(
            &fd,
            req.name.as_str(),
            Mode::from_raw_mode(req.mode & 0o7777),
        )
        .map_err(os)?;
        Ok(Rmkdir {
            qid: self.qid_of(&child(&parent, &req.name))?,
        })
    }

    /// FIFOs and sockets only: they are inert here (never opened, rule 4 of `host.rs`)
    /// and clients such as v9fs serve their I/O locally. Device nodes are refused with
    /// `EPERM`, so an export never gains a door to the host's devices.
    fn mknod(&self, _: &Ctx, dir: &HostFid, req: &Tmknod) -> FsResult<Rmknod> {
        let ftype = FileType::from_raw_mode(req.mode);
        match ftype {
            FileType::Fifo | FileType::Socket => {}
            FileType::CharacterDevice | FileType::BlockDevice => return Err(FsError::Errno(EPERM)),
            _ => return Err(FsError::Errno(EINVAL)),
        }
        let parent = dir.path();
        let fd = self.root.dir(&parent)?;
        let mode = Mode::from_raw_mode(req.mode & 0o7777);
        rustix::fs::mknodat(&fd, req.name.as_str(), ftype, mode, 0).map_err(os)?;
        Ok(Rmknod {
            qid: self.qid_of(&child(&parent, &req.name))?,
        })
    }

    fn symlink(&self, _: &Ctx, dir: &HostFid, req: &Tsymlink) -> FsResult<Rsymlink> {
        let parent = dir.path();
        let fd = self.root.dir(&parent)?;
        rustix::fs::symlinkat(req.symtgt.as_str(), &fd, req.name.as_str()).map_err(os)?;
        Ok(Rsymlink {
            qid: self.qid_of(&child(&parent, &req.name))?,
        })
    }

    fn readlink(&self, _: &Ctx, fid: &HostFid, _: &Treadlink) -> FsResult<Rreadlink> {
        let path = fid.path();
        let (dir, name) = self.root.locate(&path)?;
        let target = rustix::fs::readlinkat(&dir, name, Vec::new()).map_err(os)?;
        let target = target.into_string().map_err(|_| FsError::Errno(EINVAL))?;
        Ok(Rreadlink { target })
    }

    fn link(&self, _: &Ctx, dir: &HostFid, fid: &HostFid, req: &Tlink) -> FsResult<Rlink> {
        let source = fid.path();
        let (src_dir, src_name) = self.root.locate(&source)?;
        let dst_dir = self.root.dir(&dir.path())?;
        rustix::fs::linkat(
            &src_dir,
            src_name,
            &dst_dir,
            req.name.as_str(),
            AtFlags::empty(),
        )
        .map_err(os)?;
        Ok(Rlink)
    }

    fn rename(&self, _: &Ctx, fid: &HostFid, dir: &HostFid, req: &Trename) -> FsResult<Rrename> {
        self.move_path(fid.path(), child(&dir.path(), &req.name))?;
        Ok(Rrename)
    }

    fn renameat(
        &self,
        _: &Ctx,
        olddir: &HostFid,
        newdir: &HostFid,
        req: &Trenameat,
    ) -> FsResult<Rrenameat> {
        let from = child(&olddir.path(), &req.oldname);
        let to = child(&newdir.path(), &req.newname);
        self.move_path(from, to)?;
        Ok(Rrenameat)
    }

    fn unlinkat(&self, _: &Ctx, dir: &HostFid, req: &Tunlinkat) -> FsResult<Runlinkat> {
        let fd = self.root.dir(&dir.path())?;
        let flags = if req.flags.contains(UnlinkatFlags::REMOVEDIR) {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        rustix::fs::unlinkat(&fd, req.name.as_str(), flags).map_err(os)?;
        Ok(Runlinkat)
    }

    fn remove(&self, _: &Ctx, fid: &HostFid) -> FsResult<Rremove> {
        let path = fid.path();
        if path.is_empty() {
            return Err(FsError::Errno(EBUSY));
        }
        let st = self.root.lstat(&path)?;
        let flags = if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
            AtFlags::REMOVEDIR
        } else {
            AtFlags::empty()
        };
        let (dir, name) = self.root.locate(&path)?;
        rustix::fs::unlinkat(&dir, name, flags).map_err(os)?;
        Ok(Rremove)
    }

    fn setattr(&self, ctx: &Ctx, fid: &HostFid, req: &Tsetattr) -> FsResult<Rsetattr> {
        let path = fid.path();
        let open = match fid.open.get() {
            Some(HostOpen::File { file, .. }) => Some(file),
            _ => None,
        };
        if req.valid.contains(SetattrMask::MODE) {
            match open {
                Some(file) => rustix::fs::fchmod(file, Mode::from_raw_mode(req.attr.mode & 0o7777))
                    .map_err(os)?,
                None => self.root.chmod(&path, req.attr.mode)?,
            }
        }
        let uid = req
            .valid
            .contains(SetattrMask::UID)
            .then(|| rustix::fs::Uid::from_raw(req.attr.uid));
        let gid = req
            .valid
            .contains(SetattrMask::GID)
            .then(|| rustix::fs::Gid::from_raw(req.attr.gid));
        if uid.is_some() || gid.is_some() {
            let (dir, name) = self.root.locate(&path)?;
            rustix::fs::chownat(&dir, name, uid, gid, AtFlags::SYMLINK_NOFOLLOW).map_err(os)?;
        }
        if req.valid.contains(SetattrMask::SIZE) {
            let resized = open.map(|f| f.set_len(req.attr.size));
            match resized {
                Some(Ok(())) => {}
                _ => {
                    let (file, _) =
                        self.root
                            .open_file(&path, OFlags::WRONLY, Mode::empty(), ctx)?;
                    file.set_len(req.attr.size)?;
                }
            }
            if let Ok(qid) = self.qid_of(&path) {
                self.versions.bump(qid.path);
            }
        }
        // A truncation already stamped mtime and ctime "now"; asking the kernel again
        // with an explicit (OMIT, NOW) pair would need ownership, not just write
        // permission, and refuse a user the `O_TRUNC` open a local user is allowed
        // (v9fs sends exactly that: SIZE with MTIME, no MTIME_SET).
        let only_now = !req.valid.contains(SetattrMask::ATIME_SET)
            && !req.valid.contains(SetattrMask::MTIME_SET);
        let stamped =
            req.valid.contains(SetattrMask::SIZE) && !req.valid.contains(SetattrMask::ATIME);
        let times =
            req.valid.contains(SetattrMask::ATIME) || req.valid.contains(SetattrMask::MTIME);
        if times && !(only_now && stamped) {
            self.set_times(&path, req)?;
        }
        Ok(Rsetattr)
    }

    fn statfs(&self, _: &Ctx, _: &HostFid, _: &Tstatfs) -> FsResult<Rstatfs> {
        self.root.statfs()
    }

    fn fsync(&self, _: &Ctx, fid: &HostFid, req: &Tfsync) -> FsResult<Rfsync> {
        if let Some(HostOpen::File { file, .. }) = fid.open.get() {
            if req.datasync != 0 {
                file.sync_data()?;
            } else {
                file.sync_all()?;
            }
        }
        Ok(Rfsync)
    }
}

impl std::fmt::Debug for PassthroughFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PassthroughFs")
            .field("export", &self.export)
            .finish()
    }
}
