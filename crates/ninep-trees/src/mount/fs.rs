//! The [`Filesystem`] impl of [`MountTable`]: the root's own answers, and forwarding
//! to the child a fid is in, with qids rewritten (rule 4 of the module docs).

use std::sync::Arc;

use crate::mount::{MountFid, MountTable, Place, Session};
use nf_ninep::errno::{EBADF, EEXIST, EISDIR, ENOTDIR, EROFS};
use nf_ninep::message::*;
use nf_ninep::readdir::{decode_dirents, DirentWriter};
use nf_ninep::types::{Attr, GetattrMask, Qid};
use nf_ninep::wire::Data;
use nf_ninep_server::Creds;
use nf_ninep_server::FsError;
use nf_ninep_server::{Ctx, Filesystem, FsResult, Walked};

const S_IFDIR: u32 = 0o040000;

impl MountTable {
    /// Why `name` cannot be made at the root: it exists, or the root is read-only.
    fn refusal(&self, name: &str) -> u32 {
        if self.index_of(name).is_some() {
            EEXIST
        } else {
            EROFS
        }
    }

    fn root_attr(&self) -> Rgetattr {
        Rgetattr {
            valid: GetattrMask::BASIC,
            qid: self.root_qid(),
            attr: Attr {
                mode: S_IFDIR | 0o555,
                uid: self.uid,
                gid: self.gid,
                nlink: 2 + self.mounts.len() as u64,
                blksize: 4096,
                atime: self.created,
                mtime: self.created,
                ctime: self.created,
                ..Attr::default()
            },
        }
    }

    /// Rewrites the qids of a child's `Rreaddir` data; the entries keep their sizes.
    fn rewrite_entries(&self, index: usize, at_root: bool, data: Data) -> FsResult<Data> {
        let entries = decode_dirents(data.as_slice()).map_err(|_| FsError::Errno(EBADF))?;
        let mut out = DirentWriter::new(data.len() as u32);
        for mut e in entries {
            e.qid = if at_root && e.name == ".." {
                self.root_qid()
            } else {
                Self::outer(index, e.qid)
            };
            out.push(&e).map_err(|_| FsError::Errno(EBADF))?;
        }
        Ok(out.into_data())
    }
}

/// Maps the qid a child answered to the table's.
fn mapped(index: usize, q: Qid) -> Qid {
    MountTable::outer(index, q)
}

impl Filesystem for MountTable {
    type Fid = MountFid;

    /// Rule 7 of the module docs: decided per request, by the child it reaches.
    fn runs_inline(&self) -> bool {
        true
    }

    fn attach(
        &self,
        ctx: &Ctx,
        req: &Tattach,
        _: Option<&MountFid>,
    ) -> FsResult<(Rattach, MountFid)> {
        let creds = match &self.check {
            Some(check) => check(ctx, req)?,
            None => Creds::server().clone(),
        };
        let session = Arc::new(Session {
            attach: req.clone(),
            creds,
        });
        let root = MountFid::root(&session);
        let names = super::split(&req.aname);
        if names.is_empty() {
            return Ok((
                Rattach {
                    qid: self.root_qid(),
                },
                root,
            ));
        }
        let walked = self.walk_names(ctx, &root, &names)?;
        match (walked.fid, walked.qids.last()) {
            (Some(fid), Some(qid)) => Ok((Rattach { qid: *qid }, fid)),
            _ => Err(FsError::Errno(nf_ninep::errno::ENOENT)),
        }
    }

    fn walk1(&self, ctx: &Ctx, dir: &MountFid, name: &str) -> FsResult<(Qid, MountFid)> {
        let w = self.walk_names(ctx, dir, &[name.to_string()])?;
        match (w.fid, w.qids.first()) {
            (Some(fid), Some(qid)) => Ok((*qid, fid)),
            _ => Err(FsError::Errno(nf_ninep::errno::ENOENT)),
        }
    }

    fn clone_fid(&self, ctx: &Ctx, fid: &MountFid) -> FsResult<MountFid> {
        match &fid.at {
            Place::Root(_) => Ok(MountFid::root(&fid.session)),
            Place::Child { index, state, path } => {
                let (fs, ctx) = self.reach(ctx, &fid.session, *index)?;
                let state = fs.clone_fid(&ctx, state)?;
                Ok(MountFid::child(&fid.session, *index, state, *path))
            }
        }
    }

    fn walk(&self, ctx: &Ctx, fid: &MountFid, names: &[String]) -> FsResult<Walked<MountFid>> {
        if names.is_empty() {
            return Ok(Walked {
                qids: Vec::new(),
                fid: Some(self.clone_fid(ctx, fid)?),
            });
        }
        self.walk_names(ctx, fid, names)
    }

    fn getattr(&self, ctx: &Ctx, fid: &MountFid, req: &Tgetattr) -> FsResult<Rgetattr> {
        match &fid.at {
            Place::Root(_) => Ok(self.root_attr()),
            Place::Child { index, state, .. } => {
                let (fs, ctx) = self.reach(ctx, &fid.session, *index)?;
                let mut r = fs.getattr(&ctx, state, req)?;
                r.qid = mapped(*index, r.qid);
                Ok(r)
            }
        }
    }

    fn lopen(&self, ctx: &Ctx, fid: &MountFid, req: &Tlopen) -> FsResult<Rlopen> {
        match &fid.at {
            Place::Root(_) => Ok(Rlopen {
                qid: self.root_qid(),
                iounit: 0,
            }),
            Place::Child { index, state, .. } => {
                let (fs, ctx) = self.reach(ctx, &fid.session, *index)?;
                let mut r = fs.lopen(&ctx, state, req)?;
                r.qid = mapped(*index, r.qid);
                Ok(r)
            }
        }
    }

    fn lcreate(&self, ctx: &Ctx, dir: &MountFid, req: &Tlcreate) -> FsResult<(Rlcreate, MountFid)> {
        let (fs, state, index, ctx) = self.child(ctx, dir, self.refusal(&req.name))?;
        let ctx = &ctx;
        let (mut r, state) = fs.lcreate(ctx, state, req)?;
        let fid = MountFid::child(&dir.session, index, state, r.qid.path);
        r.qid = mapped(index, r.qid);
        Ok((r, fid))
    }

    fn read(&self, ctx: &Ctx, fid: &MountFid, req: &Tread) -> FsResult<Rread> {
        let (fs, state, _, ctx) = self.child(ctx, fid, EISDIR)?;
        let ctx = &ctx;
        fs.read(ctx, state, req)
    }

    fn write(&self, ctx: &Ctx, fid: &MountFid, req: &Twrite) -> FsResult<Rwrite> {
        let (fs, state, _, ctx) = self.child(ctx, fid, EISDIR)?;
        let ctx = &ctx;
        fs.write(ctx, state, req)
    }

    fn readdir(&self, ctx: &Ctx, dir: &MountFid, req: &Treaddir) -> FsResult<Rreaddir> {
        match &dir.at {
            Place::Root(listing) => {
                listing.read(ctx, req.offset, req.count, || Ok(self.root_entries()))
            }
            Place::Child { index, state, path } => {
                let (fs, ctx) = self.reach(ctx, &dir.session, *index)?;
                let r = fs.readdir(&ctx, state, req)?;
                let at_root = *path == self.mounts[*index].root.path;
                Ok(Rreaddir {
                    data: self.rewrite_entries(*index, at_root, r.data)?,
                })
            }
        }
    }

    fn mkdir(&self, ctx: &Ctx, dir: &MountFid, req: &Tmkdir) -> FsResult<Rmkdir> {
        let (fs, state, index, ctx) = self.child(ctx, dir, self.refusal(&req.name))?;
        let ctx = &ctx;
        let r = fs.mkdir(ctx, state, req)?;
        Ok(Rmkdir {
            qid: mapped(index, r.qid),
        })
    }

    fn mknod(&self, ctx: &Ctx, dir: &MountFid, req: &Tmknod) -> FsResult<Rmknod> {
        let (fs, state, index, ctx) = self.child(ctx, dir, EROFS)?;
        let ctx = &ctx;
        let r = fs.mknod(ctx, state, req)?;
        Ok(Rmknod {
            qid: mapped(index, r.qid),
        })
    }

    fn symlink(&self, ctx: &Ctx, dir: &MountFid, req: &Tsymlink) -> FsResult<Rsymlink> {
        let (fs, state, index, ctx) = self.child(ctx, dir, EROFS)?;
        let ctx = &ctx;
        let r = fs.symlink(ctx, state, req)?;
        Ok(Rsymlink {
            qid: mapped(index, r.qid),
        })
    }

    fn readlink(&self, ctx: &Ctx, fid: &MountFid, req: &Treadlink) -> FsResult<Rreadlink> {
        let (fs, state, _, ctx) = self.child(ctx, fid, nf_ninep::errno::EINVAL)?;
        let ctx = &ctx;
        fs.readlink(ctx, state, req)
    }

    fn link(&self, ctx: &Ctx, dir: &MountFid, fid: &MountFid, req: &Tlink) -> FsResult<Rlink> {
        let (fs, d, f, ctx) = self.pair(ctx, dir, fid, EROFS)?;
        let ctx = &ctx;
        fs.link(ctx, d, f, req)
    }

    fn rename(
        &self,
        ctx: &Ctx,
        fid: &MountFid,
        dir: &MountFid,
        req: &Trename,
    ) -> FsResult<Rrename> {
        let (fs, f, d, ctx) = self.pair(ctx, fid, dir, EROFS)?;
        let ctx = &ctx;
        fs.rename(ctx, f, d, req)
    }

    fn renameat(
        &self,
        ctx: &Ctx,
        olddir: &MountFid,
        newdir: &MountFid,
        req: &Trenameat,
    ) -> FsResult<Rrenameat> {
        let (fs, o, n, ctx) = self.pair(ctx, olddir, newdir, EROFS)?;
        let ctx = &ctx;
        fs.renameat(ctx, o, n, req)
    }

    fn unlinkat(&self, ctx: &Ctx, dir: &MountFid, req: &Tunlinkat) -> FsResult<Runlinkat> {
        let (fs, state, _, ctx) = self.child(ctx, dir, EROFS)?;
        let ctx = &ctx;
        fs.unlinkat(ctx, state, req)
    }

    fn remove(&self, ctx: &Ctx, fid: &MountFid) -> FsResult<Rremove> {
        let (fs, state, _, ctx) = self.child(ctx, fid, EROFS)?;
        let ctx = &ctx;
        fs.remove(ctx, state)
    }

    fn setattr(&self, ctx: &Ctx, fid: &MountFid, req: &Tsetattr) -> FsResult<Rsetattr> {
        let (fs, state, _, ctx) = self.child(ctx, fid, EROFS)?;
        let ctx = &ctx;
        fs.setattr(ctx, state, req)
    }

    fn statfs(&self, ctx: &Ctx, fid: &MountFid, req: &Tstatfs) -> FsResult<Rstatfs> {
        match &fid.at {
            Place::Root(_) => Ok(nf_ninep_server::synthetic_statfs()),
            Place::Child { index, state, .. } => {
                let (fs, ctx) = self.reach(ctx, &fid.session, *index)?;
                fs.statfs(&ctx, state, req)
            }
        }
    }

    fn fsync(&self, ctx: &Ctx, fid: &MountFid, req: &Tfsync) -> FsResult<Rfsync> {
        match &fid.at {
            Place::Root(_) => Ok(Rfsync),
            Place::Child { .. } => {
                let (fs, state, _, ctx) = self.child(ctx, fid, ENOTDIR)?;
                let ctx = &ctx;
                fs.fsync(ctx, state, req)
            }
        }
    }

    fn xattrwalk(
        &self,
        ctx: &Ctx,
        fid: &MountFid,
        req: &Txattrwalk,
    ) -> FsResult<(Rxattrwalk, MountFid)> {
        let (fs, state, index, ctx) = self.child(ctx, fid, nf_ninep::errno::EOPNOTSUPP)?;
        let ctx = &ctx;
        let (r, state) = fs.xattrwalk(ctx, state, req)?;
        Ok((r, MountFid::child(&fid.session, index, state, fid.path())))
    }

    fn xattrcreate(
        &self,
        ctx: &Ctx,
        fid: &MountFid,
        req: &Txattrcreate,
    ) -> FsResult<(Rxattrcreate, MountFid)> {
        let (fs, state, index, ctx) = self.child(ctx, fid, nf_ninep::errno::EOPNOTSUPP)?;
        let ctx = &ctx;
        let (r, state) = fs.xattrcreate(ctx, state, req)?;
        Ok((r, MountFid::child(&fid.session, index, state, fid.path())))
    }

    fn lock(&self, ctx: &Ctx, fid: &MountFid, req: &Tlock) -> FsResult<Rlock> {
        let (fs, state, _, ctx) = self.child(ctx, fid, EISDIR)?;
        let ctx = &ctx;
        fs.lock(ctx, state, req)
    }

    fn getlock(&self, ctx: &Ctx, fid: &MountFid, req: &Tgetlock) -> FsResult<Rgetlock> {
        let (fs, state, _, ctx) = self.child(ctx, fid, EISDIR)?;
        let ctx = &ctx;
        fs.getlock(ctx, state, req)
    }

    fn clunk(&self, ctx: &Ctx, fid: &MountFid) -> FsResult<()> {
        match &fid.at {
            Place::Root(_) => Ok(()),
            Place::Child { index, state, .. } => self.mounts[*index].fs.clunk(ctx, state),
        }
    }
}
