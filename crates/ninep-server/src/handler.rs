//! The [`Filesystem`] trait: what a tree implements, one method per 9P2000.L request.
//!
//! See [`Filesystem`] for the defaults and the rules.

use crate::budget::{Account, Charge};
use crate::cancel::{Cancel, Monitor};
use crate::creds::Creds;
use crate::error::{FsError, FsResult};
use nf_ninep::errno::{EACCES, EINVAL, EMFILE, ENOENT, ENOMEM, ENOTDIR, EOPNOTSUPP, EROFS};
use nf_ninep::message::*;
use nf_ninep::types::{GetattrMask, LockStatus, LockType, Qid, NOFID};

/// Filesystem magic of 9P (`V9FS_MAGIC`), the default `Rstatfs.fs_type`.
pub const V9FS_MAGIC: u32 = 0x0102_1997;

/// `Rstatfs` of a tree with no storage figures: `V9FS_MAGIC`, block size 4096, names
/// up to 255 bytes.
pub fn synthetic_statfs() -> Rstatfs {
    Rstatfs {
        fs_type: V9FS_MAGIC,
        bsize: 4096,
        blocks: 0,
        bfree: 0,
        bavail: 0,
        files: 0,
        ffree: 0,
        fsid: 0,
        namelen: 255,
    }
}

/// What one request may know about its context.
#[derive(Clone, Debug)]
pub struct Ctx {
    cancel: Cancel,
    msize: u32,
    conn: u64,
    tag: u16,
    may_block: bool,
    user: Option<std::sync::Arc<str>>,
    peer_uid: Option<u32>,
    creds: Option<Creds>,
    memory: Option<std::sync::Arc<Account>>,
    fds: Option<std::sync::Arc<Account>>,
}

impl Ctx {
    /// A context for request `tag` on connection `conn`.
    pub fn new(cancel: Cancel, msize: u32, conn: u64, tag: u16) -> Self {
        Ctx {
            cancel,
            msize,
            conn,
            tag,
            may_block: true,
            user: None,
            peer_uid: None,
            creds: None,
            memory: None,
            fds: None,
        }
    }

    /// This context for a request run on the connection's reader thread, where the
    /// tree must not wait (see [`Filesystem::runs_inline`]).
    pub(crate) fn inline(&self) -> Ctx {
        Ctx {
            may_block: false,
            ..self.clone()
        }
    }

    /// False while the request runs on the connection's reader thread: a tree that
    /// would have to wait (for a lease break, a stream, …) must return
    /// [`FsError::WouldBlock`] at once instead; the server retries it on a worker.
    pub fn may_block(&self) -> bool {
        self.may_block
    }

    /// Waits until `ready` gives a result (see [`Cancel::wait`]), honouring both ways a
    /// request stops waiting: cancellation (`EINTR`) and, where the request may not
    /// block, [`FsError::WouldBlock`] at once if `ready` has nothing yet — the server
    /// then runs the request again on a worker. `ready` has consumed nothing when it
    /// returns `None`, so the second run starts afresh.
    pub fn wait<T, R>(
        &self,
        monitor: &std::sync::Arc<Monitor<T>>,
        mut ready: impl FnMut(&mut T) -> Option<R>,
    ) -> FsResult<R>
    where
        T: Send + 'static,
    {
        if !self.may_block {
            return ready(&mut monitor.lock()).ok_or(FsError::WouldBlock);
        }
        Ok(self.cancel.wait(monitor, ready)?)
    }

    /// This context, charging the memory budgets of `account`.
    pub(crate) fn with_memory(mut self, account: std::sync::Arc<Account>) -> Self {
        self.memory = Some(account);
        self
    }

    /// Charges `bytes` that the tree keeps or allocates for this request to the
    /// connection's, its user's and the server's memory budgets, as long as the
    /// returned [`Charge`] lives (keep it with what it pays for). Past a budget:
    /// `ENOMEM`, and the server logs which setting to raise. Outside a connection
    /// ([`Ctx::background`]) nothing is charged.
    pub fn charge(&self, bytes: usize) -> FsResult<Charge> {
        match &self.memory {
            Some(account) => account.charge(bytes).map_err(|_| FsError::Errno(ENOMEM)),
            None => Ok(Charge::free(bytes)),
        }
    }

    /// This context, charging the descriptor budgets of `account`.
    pub(crate) fn with_fds(mut self, account: std::sync::Arc<Account>) -> Self {
        self.fds = Some(account);
        self
    }

    /// Charges one descriptor that the tree keeps open for this request's fid (an open
    /// host file or directory) to the connection's, its user's and the server's
    /// descriptor budgets, as long as the returned [`Charge`] lives (keep it with the
    /// descriptor). Past a budget: `EMFILE`, and the server logs which setting to
    /// raise; ask before opening, so that a refusal opens nothing. Outside a
    /// connection ([`Ctx::background`]) nothing is charged.
    pub fn charge_fd(&self) -> FsResult<Charge> {
        match &self.fds {
            Some(account) => account.charge(1).map_err(|_| FsError::Errno(EMFILE)),
            None => Ok(Charge::free(1)),
        }
    }

    /// This context, for a connection whose transport authenticated `user`.
    pub fn with_user(mut self, user: Option<std::sync::Arc<str>>) -> Self {
        self.user = user;
        self
    }

    /// The user the connection's transport authenticated (a TLS client certificate's
    /// name), or `None` for a transport that authenticates nobody.
    pub fn user(&self) -> Option<&str> {
        self.user.as_deref()
    }

    /// This context, for a local connection whose peer process runs as `uid`.
    pub fn with_peer_uid(mut self, uid: Option<u32>) -> Self {
        self.peer_uid = uid;
        self
    }

    /// The uid of the process at the other end of a local connection (unix socket,
    /// shared-memory channel), as the kernel recorded it (`SO_PEERCRED`); `None` where
    /// the transport cannot know (tcp, TLS).
    pub fn peer_uid(&self) -> Option<u32> {
        self.peer_uid
    }

    /// This context, for a request done for `creds` (the identity its fid's attach
    /// stands for; see `nf_ninep_trees::MountTable`).
    pub fn acting_as(&self, creds: &Creds) -> Ctx {
        Ctx {
            creds: Some(creds.clone()),
            ..self.clone()
        }
    }

    /// Who the request is done for, where the tree above knows (a mount table,
    /// `nf_ninep_trees::MountTable`, with an attach check); `None` outside one. The
    /// calling thread already acts as this identity on host files ([`Creds::assume`]);
    /// in-memory trees use it for ownership and permission checks of their own.
    pub fn creds(&self) -> Option<&Creds> {
        self.creds.as_ref()
    }

    /// Who owns what this request makes: [`Ctx::creds`], else the server itself.
    pub fn maker(&self) -> &Creds {
        self.creds.as_ref().unwrap_or_else(|| Creds::server())
    }

    /// `EACCES` unless the request's user (where the tree above names one) may access
    /// a file of `owner` (uid, gid) and permission bits `mode` for `want` (4 read,
    /// 2 write, 1 execute or search; see [`Creds::may`]).
    pub fn permit(&self, owner: (u32, u32), mode: u32, want: u32) -> FsResult<()> {
        match &self.creds {
            Some(c) if !c.may(owner.0, owner.1, mode, want) => Err(FsError::Errno(EACCES)),
            _ => Ok(()),
        }
    }

    /// A context outside any request (releasing fids of a closed connection, tests).
    pub fn background(msize: u32) -> Self {
        Ctx::new(Cancel::new(), msize, 0, nf_ninep::NOTAG)
    }

    /// The token cancelled when the request is flushed, the session reset or the
    /// connection closed. A tree that blocks must wait on it.
    pub fn cancel(&self) -> &Cancel {
        &self.cancel
    }

    /// Shorthand for `self.cancel().is_cancelled()`.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The connection's negotiated msize.
    pub fn msize(&self) -> u32 {
        self.msize
    }

    /// A number identifying the connection within its server.
    pub fn conn_id(&self) -> u64 {
        self.conn
    }

    /// The request's tag.
    pub fn tag(&self) -> u16 {
        self.tag
    }
}

/// The outcome of a walk: one qid per name walked, and the new fid state when every
/// name was walked.
pub struct Walked<F> {
    /// Qids of the names walked, in order (empty for a clone).
    pub qids: Vec<Qid>,
    /// The state for `newfid`; `Some` exactly when every name was walked.
    pub fid: Option<F>,
}

/// A 9P2000.L file tree: one method per request a tree may answer.
///
/// As in Plan 9's lib9p (`struct Srv`), every method but four has a default answer, so a
/// tree implements only what it supports:
///
/// | method | default |
/// |---|---|
/// | `attach`, `walk1`, `clone_fid`, `getattr` | required |
/// | `walk` | `clone_fid` for no names, else `walk1` name by name |
/// | `auth` | `ENOENT` (no authentication scheme: attach without one, as diod says) |
/// | `lopen` | success: the qid from `getattr`, iounit 0 |
/// | `read` | `EOPNOTSUPP` |
/// | `write` | `EROFS` |
/// | `readdir` | `ENOTDIR` |
/// | `lcreate`, `mkdir`, `mknod`, `symlink`, `link`, `rename`, `renameat`, `unlinkat`, `remove`, `setattr` | `EROFS` |
/// | `readlink` | `EINVAL` (not a symlink) |
/// | `statfs` | success: `V9FS_MAGIC`, block size 4096, names up to 255 bytes, no figures |
/// | `fsync`, `clunk` | success (nothing to do) |
/// | `xattrwalk`, `xattrcreate` | `EOPNOTSUPP` |
/// | `lock` / `getlock` | success / no conflicting lock (nothing is shared to lock) |
///
/// The server checks every request before calling a method (fid exists and is of the
/// right kind, open mode allows the operation, names are single path elements, counts fit
/// msize): methods see only well-formed requests and never touch the fid table.
///
/// A tree keeps its own per-fid state in [`Filesystem::Fid`]. The server creates one
/// from `attach`, `auth`, `walk`, `xattrwalk`, `lcreate` and `xattrcreate` (the last two
/// replace the fid's state), and calls [`Filesystem::clunk`] exactly once for every
/// state it drops: on `Tclunk`, `Tremove`, replacement, `Tversion` and disconnect. States
/// are shared (`&Self::Fid`) because several requests may use one fid at once; a tree
/// changes them through interior mutability.
///
/// Methods receive the decoded request (`req`); its fid numbers are the client's and can
/// be ignored, as the server passes the states they name.
#[allow(unused_variables)]
pub trait Filesystem: Send + Sync + 'static {
    /// The tree's state for one fid.
    type Fid: Send + Sync + 'static;

    /// True if every method either returns promptly or, when [`Ctx::may_block`] is
    /// false, returns [`FsError::WouldBlock`] instead of waiting. The server then
    /// runs requests on the connection's reader thread, one at a time, sparing a thread
    /// hand-off per request; those that would block go to a worker. Default false: every
    /// request runs on a worker.
    fn runs_inline(&self) -> bool {
        false
    }

    /// `Tattach`: the root of the tree named `req.aname` for user `req.uname`. `afid` is
    /// the state of an authenticated afid, or `None` for `NOFID`.
    fn attach(
        &self,
        ctx: &Ctx,
        req: &Tattach,
        afid: Option<&Self::Fid>,
    ) -> FsResult<(Rattach, Self::Fid)>;

    /// `Tauth`: a state over which the client runs an authentication protocol with
    /// reads and writes. The default, `ENOENT`, says no authentication scheme is
    /// offered (attach with `afid = NOFID`), as diod answers and as its clients expect.
    fn auth(&self, ctx: &Ctx, req: &Tauth) -> FsResult<(Rauth, Self::Fid)> {
        Err(FsError::Errno(ENOENT))
    }

    /// One step of a walk: `name` (never empty, never containing `/`; may be `.` or
    /// `..`) inside directory `dir`.
    fn walk1(&self, ctx: &Ctx, dir: &Self::Fid, name: &str) -> FsResult<(Qid, Self::Fid)>;

    /// A second state naming the same file as `fid` (a walk with no names).
    fn clone_fid(&self, ctx: &Ctx, fid: &Self::Fid) -> FsResult<Self::Fid>;

    /// `Twalk`: walks `names` (at most 16) from `fid`. If the first name fails, return
    /// its error; if a later one fails, return the qids walked so far and no state —
    /// except for [`FsError::WouldBlock`], which is the walk's answer wherever it comes
    /// (the server runs the walk again on a worker).
    fn walk(&self, ctx: &Ctx, fid: &Self::Fid, names: &[String]) -> FsResult<Walked<Self::Fid>> {
        if names.is_empty() {
            return Ok(Walked {
                qids: Vec::new(),
                fid: Some(self.clone_fid(ctx, fid)?),
            });
        }
        let mut qids = Vec::with_capacity(names.len());
        let mut current: Option<Self::Fid> = None;
        for name in names {
            let from = current.as_ref().unwrap_or(fid);
            match self.walk1(ctx, from, name) {
                Ok((qid, next)) => {
                    qids.push(qid);
                    if let Some(done) = current.replace(next) {
                        let _ = self.clunk(ctx, &done);
                    }
                }
                Err(e) if qids.is_empty() || e == FsError::WouldBlock => {
                    if let Some(done) = current.take() {
                        let _ = self.clunk(ctx, &done);
                    }
                    return Err(e);
                }
                Err(_) => break,
            }
        }
        if qids.len() < names.len() {
            if let Some(done) = current.take() {
                let _ = self.clunk(ctx, &done);
            }
        }
        Ok(Walked { qids, fid: current })
    }

    /// `Tgetattr`: the file's qid and attributes.
    fn getattr(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tgetattr) -> FsResult<Rgetattr>;

    /// `Tlopen`: opens the file. The server has checked that the fid is not open and
    /// that a directory is not opened for writing.
    fn lopen(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tlopen) -> FsResult<Rlopen> {
        let attr = self.getattr(
            ctx,
            fid,
            &Tgetattr {
                fid: NOFID,
                request_mask: GetattrMask::INO,
            },
        )?;
        Ok(Rlopen {
            qid: attr.qid,
            iounit: 0,
        })
    }

    /// `Tlcreate`: creates and opens `req.name` in directory `dir`. The returned state
    /// replaces the fid's (the server releases the directory's state).
    fn lcreate(
        &self,
        ctx: &Ctx,
        dir: &Self::Fid,
        req: &Tlcreate,
    ) -> FsResult<(Rlcreate, Self::Fid)> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tread`: at most `req.count` bytes (already capped at msize − IOHDRSZ) from an
    /// open, readable, non-directory fid. May block; must then honour `ctx.cancel()`.
    fn read(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tread) -> FsResult<Rread> {
        Err(FsError::Errno(EOPNOTSUPP))
    }

    /// `Twrite`: writes to an open, writable, non-directory fid. May block; must then
    /// honour `ctx.cancel()`.
    fn write(&self, ctx: &Ctx, fid: &Self::Fid, req: &Twrite) -> FsResult<Rwrite> {
        Err(FsError::Errno(EROFS))
    }

    /// `Treaddir`: entries of an open directory, at most `req.count` bytes (capped).
    fn readdir(&self, ctx: &Ctx, dir: &Self::Fid, req: &Treaddir) -> FsResult<Rreaddir> {
        Err(FsError::Errno(ENOTDIR))
    }

    /// `Tmkdir`: creates directory `req.name` in `dir`.
    fn mkdir(&self, ctx: &Ctx, dir: &Self::Fid, req: &Tmkdir) -> FsResult<Rmkdir> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tmknod`: creates a device node, fifo or socket in `dir`.
    fn mknod(&self, ctx: &Ctx, dir: &Self::Fid, req: &Tmknod) -> FsResult<Rmknod> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tsymlink`: creates symlink `req.name` → `req.symtgt` in `dir`.
    fn symlink(&self, ctx: &Ctx, dir: &Self::Fid, req: &Tsymlink) -> FsResult<Rsymlink> {
        Err(FsError::Errno(EROFS))
    }

    /// `Treadlink`: the target of a symlink.
    fn readlink(&self, ctx: &Ctx, fid: &Self::Fid, req: &Treadlink) -> FsResult<Rreadlink> {
        Err(FsError::Errno(EINVAL))
    }

    /// `Tlink`: hard link `req.name` in `dir` to the file `fid` names.
    fn link(&self, ctx: &Ctx, dir: &Self::Fid, fid: &Self::Fid, req: &Tlink) -> FsResult<Rlink> {
        Err(FsError::Errno(EROFS))
    }

    /// `Trename`: moves the file `fid` names to `req.name` in `dir`.
    fn rename(
        &self,
        ctx: &Ctx,
        fid: &Self::Fid,
        dir: &Self::Fid,
        req: &Trename,
    ) -> FsResult<Rrename> {
        Err(FsError::Errno(EROFS))
    }

    /// `Trenameat`: renames `req.oldname` in `olddir` to `req.newname` in `newdir`.
    fn renameat(
        &self,
        ctx: &Ctx,
        olddir: &Self::Fid,
        newdir: &Self::Fid,
        req: &Trenameat,
    ) -> FsResult<Rrenameat> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tunlinkat`: removes `req.name` from `dir`.
    fn unlinkat(&self, ctx: &Ctx, dir: &Self::Fid, req: &Tunlinkat) -> FsResult<Runlinkat> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tremove`: removes the file `fid` names. The server clunks the fid afterwards,
    /// whatever the outcome.
    fn remove(&self, ctx: &Ctx, fid: &Self::Fid) -> FsResult<Rremove> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tsetattr`: changes the attributes `req.valid` selects.
    fn setattr(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tsetattr) -> FsResult<Rsetattr> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tstatfs`: figures of the file system holding `fid`.
    fn statfs(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tstatfs) -> FsResult<Rstatfs> {
        Ok(synthetic_statfs())
    }

    /// `Tfsync`: flushes an open fid's data to stable storage.
    fn fsync(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tfsync) -> FsResult<Rfsync> {
        Ok(Rfsync)
    }

    /// `Txattrwalk`: a state from which the value of attribute `req.name` (or the list
    /// of names, for an empty name) is read.
    fn xattrwalk(
        &self,
        ctx: &Ctx,
        fid: &Self::Fid,
        req: &Txattrwalk,
    ) -> FsResult<(Rxattrwalk, Self::Fid)> {
        Err(FsError::Errno(EOPNOTSUPP))
    }

    /// `Txattrcreate`: a state to which the value of `req.name` is written; it replaces
    /// the fid's state, and the value is set at clunk.
    fn xattrcreate(
        &self,
        ctx: &Ctx,
        fid: &Self::Fid,
        req: &Txattrcreate,
    ) -> FsResult<(Rxattrcreate, Self::Fid)> {
        Err(FsError::Errno(EOPNOTSUPP))
    }

    /// `Tlock`: takes or releases a POSIX record lock on an open fid.
    fn lock(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tlock) -> FsResult<Rlock> {
        Ok(Rlock {
            status: LockStatus::SUCCESS,
        })
    }

    /// `Tgetlock`: the lock that would conflict with `req`, if any.
    fn getlock(&self, ctx: &Ctx, fid: &Self::Fid, req: &Tgetlock) -> FsResult<Rgetlock> {
        Ok(Rgetlock {
            lock_type: LockType::UNLCK,
            start: req.start,
            length: req.length,
            proc_id: req.proc_id,
            client_id: req.client_id.clone(),
        })
    }

    /// Releases a state the server no longer holds (`Tclunk`, `Tremove`, replacement,
    /// `Tversion`, disconnect). Called exactly once per state; an error is reported to
    /// the client for `Tclunk` only.
    fn clunk(&self, ctx: &Ctx, fid: &Self::Fid) -> FsResult<()> {
        Ok(())
    }
}
