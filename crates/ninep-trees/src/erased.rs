//! [`Erased`]: any [`Filesystem`] behind one fid type, so trees of different types can
//! sit side by side (in a [`super::MountTable`]) as `Arc<dyn Filesystem<Fid = AnyFid>>`.
//!
//! Every method forwards to the wrapped tree after downcasting the fid states. A state
//! of the wrong type can only come from handing one tree's fid to another, which the
//! mount table never does; it is answered `EBADF` rather than a panic.

use std::any::Any;

use nf_ninep::errno::EBADF;
use nf_ninep::message::*;
use nf_ninep::types::Qid;
use nf_ninep_server::FsError;
use nf_ninep_server::{Ctx, Filesystem, FsResult, Walked};

/// A fid state of some tree, type-erased.
pub type AnyFid = Box<dyn Any + Send + Sync>;

/// A tree whose fid states are [`AnyFid`]s.
pub type DynFs = dyn Filesystem<Fid = AnyFid>;

/// Wraps a tree so that its fid states are [`AnyFid`]s.
pub struct Erased<F>(pub F);

impl<F: Filesystem> Erased<F> {
    fn fid<'a>(&self, fid: &'a AnyFid) -> FsResult<&'a F::Fid> {
        fid.downcast_ref::<F::Fid>().ok_or(FsError::Errno(EBADF))
    }
}

fn boxed<R, S: Send + Sync + 'static>(r: FsResult<(R, S)>) -> FsResult<(R, AnyFid)> {
    r.map(|(reply, state)| (reply, Box::new(state) as AnyFid))
}

impl<F: Filesystem> Filesystem for Erased<F> {
    type Fid = AnyFid;

    fn runs_inline(&self) -> bool {
        self.0.runs_inline()
    }

    fn attach(
        &self,
        ctx: &Ctx,
        req: &Tattach,
        afid: Option<&AnyFid>,
    ) -> FsResult<(Rattach, AnyFid)> {
        let afid = afid.map(|a| self.fid(a)).transpose()?;
        boxed(self.0.attach(ctx, req, afid))
    }

    fn auth(&self, ctx: &Ctx, req: &Tauth) -> FsResult<(Rauth, AnyFid)> {
        boxed(self.0.auth(ctx, req))
    }

    fn walk1(&self, ctx: &Ctx, dir: &AnyFid, name: &str) -> FsResult<(Qid, AnyFid)> {
        boxed(self.0.walk1(ctx, self.fid(dir)?, name))
    }

    fn clone_fid(&self, ctx: &Ctx, fid: &AnyFid) -> FsResult<AnyFid> {
        Ok(Box::new(self.0.clone_fid(ctx, self.fid(fid)?)?))
    }

    fn walk(&self, ctx: &Ctx, fid: &AnyFid, names: &[String]) -> FsResult<Walked<AnyFid>> {
        let w = self.0.walk(ctx, self.fid(fid)?, names)?;
        Ok(Walked {
            qids: w.qids,
            fid: w.fid.map(|f| Box::new(f) as AnyFid),
        })
    }

    fn getattr(&self, ctx: &Ctx, fid: &AnyFid, req: &Tgetattr) -> FsResult<Rgetattr> {
        self.0.getattr(ctx, self.fid(fid)?, req)
    }

    fn lopen(&self, ctx: &Ctx, fid: &AnyFid, req: &Tlopen) -> FsResult<Rlopen> {
        self.0.lopen(ctx, self.fid(fid)?, req)
    }

    fn lcreate(&self, ctx: &Ctx, dir: &AnyFid, req: &Tlcreate) -> FsResult<(Rlcreate, AnyFid)> {
        boxed(self.0.lcreate(ctx, self.fid(dir)?, req))
    }

    fn read(&self, ctx: &Ctx, fid: &AnyFid, req: &Tread) -> FsResult<Rread> {
        self.0.read(ctx, self.fid(fid)?, req)
    }

    fn write(&self, ctx: &Ctx, fid: &AnyFid, req: &Twrite) -> FsResult<Rwrite> {
        self.0.write(ctx, self.fid(fid)?, req)
    }

    fn readdir(&self, ctx: &Ctx, dir: &AnyFid, req: &Treaddir) -> FsResult<Rreaddir> {
        self.0.readdir(ctx, self.fid(dir)?, req)
    }

    fn mkdir(&self, ctx: &Ctx, dir: &AnyFid, req: &Tmkdir) -> FsResult<Rmkdir> {
        self.0.mkdir(ctx, self.fid(dir)?, req)
    }

    fn mknod(&self, ctx: &Ctx, dir: &AnyFid, req: &Tmknod) -> FsResult<Rmknod> {
        self.0.mknod(ctx, self.fid(dir)?, req)
    }

    fn symlink(&self, ctx: &Ctx, dir: &AnyFid, req: &Tsymlink) -> FsResult<Rsymlink> {
        self.0.symlink(ctx, self.fid(dir)?, req)
    }

    fn readlink(&self, ctx: &Ctx, fid: &AnyFid, req: &Treadlink) -> FsResult<Rreadlink> {
        self.0.readlink(ctx, self.fid(fid)?, req)
    }

    fn link(&self, ctx: &Ctx, dir: &AnyFid, fid: &AnyFid, req: &Tlink) -> FsResult<Rlink> {
        self.0.link(ctx, self.fid(dir)?, self.fid(fid)?, req)
    }

    fn rename(&self, ctx: &Ctx, fid: &AnyFid, dir: &AnyFid, req: &Trename) -> FsResult<Rrename> {
        self.0.rename(ctx, self.fid(fid)?, self.fid(dir)?, req)
    }

    fn renameat(
        &self,
        ctx: &Ctx,
        olddir: &AnyFid,
        newdir: &AnyFid,
        req: &Trenameat,
    ) -> FsResult<Rrenameat> {
        self.0
            .renameat(ctx, self.fid(olddir)?, self.fid(newdir)?, req)
    }

    fn unlinkat(&self, ctx: &Ctx, dir: &AnyFid, req: &Tunlinkat) -> FsResult<Runlinkat> {
        self.0.unlinkat(ctx, self.fid(dir)?, req)
    }

    fn remove(&self, ctx: &Ctx, fid: &AnyFid) -> FsResult<Rremove> {
        self.0.remove(ctx, self.fid(fid)?)
    }

    fn setattr(&self, ctx: &Ctx, fid: &AnyFid, req: &Tsetattr) -> FsResult<Rsetattr> {
        self.0.setattr(ctx, self.fid(fid)?, req)
    }

    fn statfs(&self, ctx: &Ctx, fid: &AnyFid, req: &Tstatfs) -> FsResult<Rstatfs> {
        self.0.statfs(ctx, self.fid(fid)?, req)
    }

    fn fsync(&self, ctx: &Ctx, fid: &AnyFid, req: &Tfsync) -> FsResult<Rfsync> {
        self.0.fsync(ctx, self.fid(fid)?, req)
    }

    fn xattrwalk(
        &self,
        ctx: &Ctx,
        fid: &AnyFid,
        req: &Txattrwalk,
    ) -> FsResult<(Rxattrwalk, AnyFid)> {
        boxed(self.0.xattrwalk(ctx, self.fid(fid)?, req))
    }

    fn xattrcreate(
        &self,
        ctx: &Ctx,
        fid: &AnyFid,
        req: &Txattrcreate,
    ) -> FsResult<(Rxattrcreate, AnyFid)> {
        boxed(self.0.xattrcreate(ctx, self.fid(fid)?, req))
    }

    fn lock(&self, ctx: &Ctx, fid: &AnyFid, req: &Tlock) -> FsResult<Rlock> {
        self.0.lock(ctx, self.fid(fid)?, req)
    }

    fn getlock(&self, ctx: &Ctx, fid: &AnyFid, req: &Tgetlock) -> FsResult<Rgetlock> {
        self.0.getlock(ctx, self.fid(fid)?, req)
    }

    fn clunk(&self, ctx: &Ctx, fid: &AnyFid) -> FsResult<()> {
        self.0.clunk(ctx, self.fid(fid)?)
    }
}
