//! [`MountTable`]: one tree made of several, each mounted under a name of the root.
//!
//! The root directory is the table itself: it lists the mount names and cannot be
//! changed by clients. The first path element picks a child tree; everything below it
//! is that tree's. A mount may also show one file or directory *inside* a tree (as
//! Plan 9's bind does), so one synthetic tree can provide several root entries, files
//! included. Rules:
//!
//! 1. **Attach** runs the table's attach check (if any), then attaches to the root, or
//!    to the path `aname` names (`/fs` attaches to the root of the tree mounted as `fs`).
//! 2. **Walking into a mount** attaches to the child with the client's `uname` and
//!    `n_uname` (and an empty `aname`), then walks to the mounted path inside it. A
//!    walk is split at mount boundaries: a run of names inside one child goes to that
//!    child's `walk` in one call.
//! 3. **`..` at a child's root** leads back to the table's root (the fid remembers the
//!    qid.path of the file it names, and the child's root qid.path is recorded when it
//!    is mounted); `..` at the table's root stays there.
//! 4. **Qids are unique across children**: a child's qid.path `p` becomes
//!    `(index + 1) << 56 | (p & (2^56 − 1))`, the root's is 1. Children must keep
//!    their paths below 2^56 (inode numbers and synthetic node numbers do). Directory
//!    entries are rewritten the same way; the `..` entry of a child's root names the
//!    table's root.
//! 5. Operations on two fids (link, rename, renameat) must stay inside one child
//!    (`EXDEV` otherwise), as across file systems.
//! 6. The root itself answers getattr, open, readdir and statfs; creating, removing or
//!    writing there fails with `EROFS`.
//! 7. **Inline requests are decided per request.** The table runs inline
//!    ([`Filesystem::runs_inline`]): the root never waits, and the context's
//!    [`Ctx::may_block`] goes to the child unchanged, so a child that runs inline
//!    decides for itself (a stream with data answers at once, one without says
//!    [`FsError::WouldBlock`]). A request that reaches a child which does not run
//!    inline is answered [`FsError::WouldBlock`] where it may not block, before the
//!    child sees it, so the server runs it on a worker. A walk that would block
//!    anywhere is a [`FsError::WouldBlock`] walk, never a partial one.
//! 8. **Acting as the attached user.** The attach check decides who an attach stands
//!    for ([`Creds`]; without a check, the server itself). Every fid descends from one
//!    attach and keeps its identity; before any request reaches a child, the calling
//!    thread takes that identity on for filesystem access ([`Creds::assume`]) and the
//!    child gets it in its context ([`Ctx::creds`]). Host trees are then checked by the
//!    kernel as that user; in-memory trees check ownership themselves. (Clunks are not:
//!    releasing a fid needs no rights.)

mod fs;

use std::sync::Arc;

use crate::erased::{AnyFid, DynFs, Erased};
use crate::listing::Listing;
use crate::now;
use nf_ninep::errno::{ENOENT, EXDEV};
use nf_ninep::message::*;
use nf_ninep::types::{Dirent, Qid, QidType, Timespec, NOFID, NONUNAME};
use nf_ninep_server::Creds;
use nf_ninep_server::{Ctx, Filesystem, FsError, FsResult, Walked};

/// Bits of a child's qid.path kept (the top 8 hold the mount index + 1).
const CHILD_BITS: u32 = 56;
const CHILD_MASK: u64 = (1 << CHILD_BITS) - 1;
/// qid.path of the table's root.
const ROOT_PATH: u64 = 1;
/// Most children a table holds (the index must fit the top 8 bits, 0 is the root's).
pub const MAX_MOUNTS: usize = 255;

/// The check run on every `Tattach` before anything else (user mapping, policy): who
/// the attach stands for, or the error to answer.
pub type AttachCheck = dyn Fn(&Ctx, &Tattach) -> FsResult<Creds> + Send + Sync;

/// Why a tree could not be mounted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MountError {
    /// The name is empty, `.`, `..`, or holds `/` or NUL.
    #[error("mount table: bad mount name {0:?}: use one path element, not . or ..")]
    BadName(String),
    /// The name is taken.
    #[error("mount table: {0:?} is already mounted; pick another name")]
    Taken(String),
    /// The table is full.
    #[error("mount table: at most {MAX_MOUNTS} trees can be mounted")]
    Full,
    /// Attaching to the child (to learn its root) failed.
    #[error("mount table: cannot attach to the tree for {name:?} (errno {errno})")]
    Attach {
        /// The mount name.
        name: String,
        /// The errno it answered.
        errno: u32,
    },
}

struct Mount {
    name: String,
    fs: Arc<DynFs>,
    /// The names, inside the child, of what is mounted (empty: its root).
    inside: Vec<String>,
    /// The child's own qid of what is mounted, for rule 3 and the root's listing.
    root: Qid,
    /// The child's [`Filesystem::runs_inline`] (rule 7).
    inline: bool,
}

/// Trees mounted under the names of one synthetic root (see the [module docs](self)).
pub struct MountTable {
    mounts: Vec<Mount>,
    check: Option<Box<AttachCheck>>,
    uid: u32,
    gid: u32,
    created: Timespec,
}

impl Default for MountTable {
    fn default() -> Self {
        MountTable::new()
    }
}

/// What one attach established: its request and who its fids act as (rule 8).
pub(super) struct Session {
    attach: Tattach,
    creds: Creds,
}

/// A [`MountTable`] fid: the attach it came from and where it is.
pub struct MountFid {
    session: Arc<Session>,
    at: Place,
}

enum Place {
    /// The table's root, with its listing once opened.
    Root(Listing),
    /// Inside child `index`: its state and the child's qid.path of the file.
    Child {
        index: usize,
        state: AnyFid,
        path: u64,
    },
}

impl MountFid {
    fn root(session: &Arc<Session>) -> MountFid {
        MountFid {
            session: Arc::clone(session),
            at: Place::Root(Listing::default()),
        }
    }

    fn child(session: &Arc<Session>, index: usize, state: AnyFid, path: u64) -> MountFid {
        MountFid {
            session: Arc::clone(session),
            at: Place::Child { index, state, path },
        }
    }

    /// The child's qid.path of the file (0 at the root).
    fn path(&self) -> u64 {
        match &self.at {
            Place::Root(_) => 0,
            Place::Child { path, .. } => *path,
        }
    }

    /// The attach request this fid descends from (user names, aname).
    pub fn session(&self) -> &Tattach {
        &self.session.attach
    }

    /// Who this fid acts as (rule 8).
    pub fn creds(&self) -> &Creds {
        &self.session.creds
    }
}

impl MountTable {
    /// An empty table: a root directory with nothing mounted.
    pub fn new() -> Self {
        MountTable {
            mounts: Vec::new(),
            check: None,
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
            created: now(),
        }
    }

    /// Runs `check` on every `Tattach`: its error is the attach's answer, its identity
    /// the one the attach's fids act as (rule 8).
    pub fn with_attach_check(
        mut self,
        check: impl Fn(&Ctx, &Tattach) -> FsResult<Creds> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Box::new(check));
        self
    }

    /// Mounts `fs` as `/name`.
    pub fn mount(&mut self, name: &str, fs: impl Filesystem) -> Result<&mut Self, MountError> {
        self.mount_dyn(name, Arc::new(Erased(fs)), "/")
    }

    /// Mounts the file or directory at `path` inside an already type-erased tree as
    /// `/name` (`/` for its root). Several mounts may share one tree.
    pub fn mount_dyn(
        &mut self,
        name: &str,
        fs: Arc<DynFs>,
        path: &str,
    ) -> Result<&mut Self, MountError> {
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
            return Err(MountError::BadName(name.to_string()));
        }
        if self.index_of(name).is_some() {
            return Err(MountError::Taken(name.to_string()));
        }
        if self.mounts.len() >= MAX_MOUNTS {
            return Err(MountError::Full);
        }
        let inside = split(path);
        let ctx = Ctx::background(nf_ninep::DEFAULT_MAX_MSIZE);
        let probe = Tattach {
            fid: NOFID,
            afid: NOFID,
            uname: String::new(),
            aname: String::new(),
            n_uname: NONUNAME,
        };
        Creds::server().assume().map_err(|e| MountError::Attach {
            name: name.to_string(),
            errno: e.ecode,
        })?;
        let (root, state) =
            attach_inside(&*fs, &ctx, &probe, &inside).map_err(|e| MountError::Attach {
                name: name.to_string(),
                // A background context may block, so the probe never answers WouldBlock.
                errno: e.errno().unwrap_or(nf_ninep::errno::EIO),
            })?;
        let _ = fs.clunk(&ctx, &state);
        let inline = fs.runs_inline();
        self.mounts.push(Mount {
            name: name.to_string(),
            fs,
            inside,
            root,
            inline,
        });
        Ok(self)
    }

    /// The mount names, in mount order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.mounts.iter().map(|m| m.name.as_str())
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.mounts.iter().position(|m| m.name == name)
    }

    fn root_qid(&self) -> Qid {
        Qid {
            ty: QidType::DIR,
            version: 0,
            path: ROOT_PATH,
        }
    }

    /// A child's qid as the table shows it (rule 4).
    fn outer(index: usize, q: Qid) -> Qid {
        Qid {
            path: ((index as u64 + 1) << CHILD_BITS) | (q.path & CHILD_MASK),
            ..q
        }
    }

    /// Child `index`, if a request with `ctx` may run it now (rule 7), and the context
    /// to call it with; the calling thread now acts as the session's user (rule 8).
    pub(super) fn reach(
        &self,
        ctx: &Ctx,
        session: &Session,
        index: usize,
    ) -> FsResult<(&DynFs, Ctx)> {
        let mount = &self.mounts[index];
        if !mount.inline && !ctx.may_block() {
            return Err(FsError::WouldBlock);
        }
        session.creds.assume()?;
        Ok((&*mount.fs, ctx.acting_as(&session.creds)))
    }

    /// The child, its state and index for `fid`; `at_root` is the errno for the root.
    fn child<'a>(
        &'a self,
        ctx: &Ctx,
        fid: &'a MountFid,
        at_root: u32,
    ) -> FsResult<(&'a DynFs, &'a AnyFid, usize, Ctx)> {
        match &fid.at {
            Place::Root(_) => Err(FsError::Errno(at_root)),
            Place::Child { index, state, .. } => {
                let (fs, ctx) = self.reach(ctx, &fid.session, *index)?;
                Ok((fs, state, *index, ctx))
            }
        }
    }

    /// The child and states of two fids that must be in the same child (rule 5).
    fn pair<'a>(
        &'a self,
        ctx: &Ctx,
        a: &'a MountFid,
        b: &'a MountFid,
        at_root: u32,
    ) -> FsResult<(&'a DynFs, &'a AnyFid, &'a AnyFid, Ctx)> {
        let (_, sb, ib, _) = self.child(ctx, b, at_root)?;
        // The first fid's user is the one the operation runs as.
        let (fs, sa, ia, acting) = self.child(ctx, a, at_root)?;
        if ia != ib {
            return Err(FsError::Errno(EXDEV));
        }
        Ok((fs, sa, sb, acting))
    }

    /// Enters mount `name` from the root (rule 2).
    fn enter(&self, ctx: &Ctx, session: &Arc<Session>, name: &str) -> FsResult<(Qid, MountFid)> {
        if name == "." || name == ".." {
            return Ok((self.root_qid(), MountFid::root(session)));
        }
        let index = self.index_of(name).ok_or(FsError::Errno(ENOENT))?;
        let (fs, ctx) = self.reach(ctx, session, index)?;
        let inside = &self.mounts[index].inside;
        let (qid, state) = attach_inside(fs, &ctx, &session.attach, inside)?;
        Ok((
            Self::outer(index, qid),
            MountFid::child(session, index, state, qid.path),
        ))
    }

    /// Walks from `from` as far as one tree goes: the qids walked and, when all of them
    /// were, the new fid.
    fn step(
        &self,
        ctx: &Ctx,
        from: &MountFid,
        names: &[String],
    ) -> FsResult<(Vec<Qid>, Option<MountFid>)> {
        let (index, state, path) = match &from.at {
            Place::Root(_) => {
                let (qid, fid) = self.enter(ctx, &from.session, &names[0])?;
                return Ok((vec![qid], Some(fid)));
            }
            Place::Child { index, state, path } => (*index, state, *path),
        };
        if names[0] == ".." && path == self.mounts[index].root.path {
            return Ok((vec![self.root_qid()], Some(MountFid::root(&from.session))));
        }
        let (fs, ctx) = self.reach(ctx, &from.session, index)?;
        let ctx = &ctx;
        if names[0] == ".." {
            let (qid, next) = fs.walk1(ctx, state, "..")?;
            let fid = MountFid::child(&from.session, index, next, qid.path);
            return Ok((vec![Self::outer(index, qid)], Some(fid)));
        }
        let run = names.iter().position(|n| n == "..").unwrap_or(names.len());
        let walked = fs.walk(ctx, state, &names[..run])?;
        let last = walked.qids.last().map_or(path, |q| q.path);
        let qids = walked
            .qids
            .into_iter()
            .map(|q| Self::outer(index, q))
            .collect();
        let fid = walked
            .fid
            .map(|s| MountFid::child(&from.session, index, s, last));
        Ok((qids, fid))
    }

    /// Releases an intermediate fid of a walk.
    fn release(&self, ctx: &Ctx, fid: &MountFid) {
        if let Place::Child { index, state, .. } = &fid.at {
            let _ = self.mounts[*index].fs.clunk(ctx, state);
        }
    }

    /// Walks `names` from `fid` across mount boundaries (rules 2 and 3).
    fn walk_names(
        &self,
        ctx: &Ctx,
        fid: &MountFid,
        names: &[String],
    ) -> FsResult<Walked<MountFid>> {
        let mut qids = Vec::with_capacity(names.len());
        let mut current: Option<MountFid> = None;
        while qids.len() < names.len() {
            let from = current.as_ref().unwrap_or(fid);
            let (walked, next) = match self.step(ctx, from, &names[qids.len()..]) {
                Ok(step) => step,
                Err(e) if qids.is_empty() || e == FsError::WouldBlock => {
                    if let Some(done) = current.take() {
                        self.release(ctx, &done);
                    }
                    return Err(e);
                }
                Err(_) => break,
            };
            let progressed = !walked.is_empty();
            qids.extend(walked);
            match next {
                Some(next) => {
                    if let Some(done) = current.replace(next) {
                        self.release(ctx, &done);
                    }
                }
                None => break,
            }
            if !progressed {
                break;
            }
        }
        if qids.len() < names.len() {
            if let Some(done) = current.take() {
                self.release(ctx, &done);
            }
        }
        Ok(Walked { qids, fid: current })
    }

    /// The root's entries: `.`, `..` and one directory per mount.
    fn root_entries(&self) -> Vec<Dirent> {
        let dir = |name: &str, qid: Qid| Dirent {
            qid,
            offset: 0,
            dtype: Dirent::DT_DIR,
            name: name.to_string(),
        };
        let mut out = vec![dir(".", self.root_qid()), dir("..", self.root_qid())];
        for (i, m) in self.mounts.iter().enumerate() {
            let mut entry = dir(&m.name, Self::outer(i, m.root));
            if !m.root.ty.contains(QidType::DIR) {
                entry.dtype = Dirent::DT_REG;
            }
            out.push(entry);
        }
        out
    }
}

/// The names of a `/`-separated path (`.` and empty elements dropped).
pub(crate) fn split(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|n| !n.is_empty() && *n != ".")
        .map(str::to_string)
        .collect()
}

/// Attaches to `fs` for `session` (with an empty aname) and walks to `inside`.
fn attach_inside(
    fs: &DynFs,
    ctx: &Ctx,
    session: &Tattach,
    inside: &[String],
) -> FsResult<(Qid, AnyFid)> {
    let req = Tattach {
        aname: String::new(),
        ..session.clone()
    };
    let (r, root) = fs.attach(ctx, &req, None)?;
    if inside.is_empty() {
        return Ok((r.qid, root));
    }
    let walked = fs.walk(ctx, &root, inside);
    let _ = fs.clunk(ctx, &root);
    let walked = walked?;
    match (walked.fid, walked.qids.last()) {
        (Some(state), Some(qid)) => Ok((*qid, state)),
        _ => Err(FsError::Errno(ENOENT)),
    }
}
