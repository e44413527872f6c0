//! Applying a checked request: the one `match` that calls the tree.
//!
//! [`apply`] runs on a worker thread without any connection lock. It only calls the
//! [`Filesystem`] method for the job and packs the outcome into a [`Done`], which
//! [`crate::reply::record`] then turns into fid-table changes and the reply.

use std::sync::Arc;

use crate::cancel::Cancel;
use crate::check::{FidRef, Job};
use crate::error::{FsError, FsResult};
use crate::fid::{FidKind, FidMeta};
use crate::handler::{Ctx, Filesystem, Walked};
use nf_ninep::errno::EIO;
use nf_ninep::message::*;
use nf_ninep::types::LOpenFlags;

/// A new fid's reply, tree state and bookkeeping.
pub(crate) type Created<S> = FsResult<(Rmessage, S, FidMeta)>;

/// What a tree method returned, with what the bookkeeping step needs to know.
pub(crate) enum Done<S> {
    /// Attach, auth, xattrwalk: install the state under the reserved `fid`.
    NewFid { fid: u32, result: Created<S> },
    /// Walk from `from` (number `fid`) to `newfid`.
    Walk {
        from: FidRef<S>,
        fid: u32,
        newfid: u32,
        nwname: usize,
        result: FsResult<Walked<S>>,
    },
    /// Lopen: mark the fid open.
    Opened {
        fid: FidRef<S>,
        flags: LOpenFlags,
        result: FsResult<Rlopen>,
    },
    /// Lcreate, xattrcreate: the new state replaces `old` under number `fid`.
    Replaced {
        fid: u32,
        old: FidRef<S>,
        result: Created<S>,
    },
    /// Everything else: no bookkeeping.
    Reply(FsResult<Rmessage>),
}

fn reply<S, R: Into<Rmessage>>(result: FsResult<R>) -> Done<S> {
    Done::Reply(result.map(Into::into))
}

impl<S> Done<S> {
    /// True if the tree answered [`FsError::WouldBlock`]: the request must run again
    /// where it may wait.
    pub fn would_block(&self) -> bool {
        let code = |e: &FsError| *e == FsError::WouldBlock;
        match self {
            Done::NewFid { result, .. } | Done::Replaced { result, .. } => {
                result.as_ref().is_err_and(code)
            }
            Done::Walk { result, .. } => result.as_ref().is_err_and(code),
            Done::Opened { result, .. } => result.as_ref().is_err_and(code),
            Done::Reply(result) => result.as_ref().is_err_and(code),
        }
    }
}

/// A context for releasing a state: never cancelled, whatever happened to the request.
fn release_ctx(ctx: &Ctx) -> Ctx {
    Ctx::new(Cancel::new(), ctx.msize(), ctx.conn_id(), ctx.tag())
        .with_user(ctx.user().map(Into::into))
        .with_peer_uid(ctx.peer_uid())
}

/// Calls the tree for `job` (borrowed, so that a request the tree could not run
/// without waiting can be run again on a worker).
pub(crate) fn apply<F: Filesystem>(fs: &F, ctx: &Ctx, job: &Job<F::Fid>) -> Done<F::Fid> {
    match job {
        Job::Auth { req } => Done::NewFid {
            fid: req.afid,
            result: fs.auth(ctx, req).map(|(r, state)| {
                let meta = FidMeta::new(r.aqid, FidKind::Auth);
                (r.into(), state, meta)
            }),
        },
        Job::Attach { req, afid } => Done::NewFid {
            fid: req.fid,
            result: fs
                .attach(ctx, req, afid.as_deref().map(|e| &e.state))
                .map(|(r, state)| {
                    let meta = FidMeta::new(r.qid, FidKind::File);
                    (r.into(), state, meta)
                }),
        },
        Job::Walk { fid, req } => {
            let result = fs.walk(ctx, &fid.state, &req.wnames);
            Done::Walk {
                from: Arc::clone(fid),
                fid: req.fid,
                newfid: req.newfid,
                nwname: req.wnames.len(),
                result,
            }
        }
        Job::Lopen { fid, req } => {
            let result = fs.lopen(ctx, &fid.state, req);
            Done::Opened {
                fid: Arc::clone(fid),
                flags: req.flags,
                result,
            }
        }
        Job::Lcreate { dir, req } => {
            let result = fs.lcreate(ctx, &dir.state, req).map(|(r, state)| {
                let mut meta = FidMeta::new(r.qid, FidKind::File);
                meta.open = Some(req.flags);
                (r.into(), state, meta)
            });
            Done::Replaced {
                fid: req.fid,
                old: Arc::clone(dir),
                result,
            }
        }
        Job::Read { fid, req } => reply(fs.read(ctx, &fid.state, req).map(|mut r| {
            if r.data.len() > req.count as usize {
                tracing::error!(
                    count = req.count,
                    got = r.data.len(),
                    "tree read returned more than asked; truncated"
                );
                r.data.0.truncate(req.count as usize);
            }
            r
        })),
        Job::Write { fid, req } => reply(fs.write(ctx, &fid.state, req)),
        Job::Readdir { dir, req } => reply(fs.readdir(ctx, &dir.state, req).and_then(|r| {
            if r.data.len() > req.count as usize {
                tracing::error!(
                    count = req.count,
                    got = r.data.len(),
                    "tree readdir returned more than asked"
                );
                return Err(FsError::Errno(EIO));
            }
            Ok(r)
        })),
        Job::Clunk { fid } => reply(fs.clunk(&release_ctx(ctx), &fid.state).map(|()| Rclunk)),
        Job::Remove { fid } => {
            let result = fs.remove(ctx, &fid.state);
            // A remove to be run again keeps its state until then.
            if result.as_ref().err() != Some(&FsError::WouldBlock) {
                let _ = fs.clunk(&release_ctx(ctx), &fid.state);
            }
            reply(result)
        }
        Job::Getattr { fid, req } => reply(fs.getattr(ctx, &fid.state, req)),
        Job::Setattr { fid, req } => reply(fs.setattr(ctx, &fid.state, req)),
        Job::Statfs { fid, req } => reply(fs.statfs(ctx, &fid.state, req)),
        Job::Fsync { fid, req } => reply(fs.fsync(ctx, &fid.state, req)),
        Job::Mkdir { dir, req } => reply(fs.mkdir(ctx, &dir.state, req)),
        Job::Mknod { dir, req } => reply(fs.mknod(ctx, &dir.state, req)),
        Job::Symlink { dir, req } => reply(fs.symlink(ctx, &dir.state, req)),
        Job::Readlink { fid, req } => reply(fs.readlink(ctx, &fid.state, req)),
        Job::Link { dir, fid, req } => reply(fs.link(ctx, &dir.state, &fid.state, req)),
        Job::Rename { fid, dir, req } => reply(fs.rename(ctx, &fid.state, &dir.state, req)),
        Job::Renameat {
            olddir,
            newdir,
            req,
        } => reply(fs.renameat(ctx, &olddir.state, &newdir.state, req)),
        Job::Unlinkat { dir, req } => reply(fs.unlinkat(ctx, &dir.state, req)),
        Job::Xattrwalk { fid, req } => Done::NewFid {
            fid: req.newfid,
            result: fs.xattrwalk(ctx, &fid.state, req).map(|(r, state)| {
                let meta = FidMeta::new(fid.meta().qid, FidKind::XattrRead);
                (r.into(), state, meta)
            }),
        },
        Job::Xattrcreate { fid, req } => {
            let result = fs.xattrcreate(ctx, &fid.state, req).map(|(r, state)| {
                let meta = FidMeta::new(fid.meta().qid, FidKind::XattrWrite);
                (r.into(), state, meta)
            });
            Done::Replaced {
                fid: req.fid,
                old: Arc::clone(fid),
                result,
            }
        }
        Job::Lock { fid, req } => reply(fs.lock(ctx, &fid.state, req)),
        Job::Getlock { fid, req } => reply(fs.getlock(ctx, &fid.state, req)),
    }
}
