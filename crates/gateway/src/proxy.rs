//! Fids below a member: requests passed through on the member's connection.
//!
//! A [`RemoteFid`] is a fid number on one member connection. Each request on it is the
//! client's request with the fid numbers replaced (tags are the connection's own: the
//! client multiplexes); replies come back with their qids stamped ([`crate::qid`]).
//! A fid of a connection that has since been lost answers `EHOSTDOWN` (the member is
//! down) or `ESTALE` (it is back: walk again), and is never sent on the new one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nf_ninep::errno::{EIO, EXDEV};
use nf_ninep::message::*;
use nf_ninep::readdir::{decode_dirents, encode_dirents};
use nf_ninep::types::Qid;
use nf_ninep_server::{Ctx, FsError, FsResult};

use crate::member::{Conn, Member};
use crate::tree::Local;

/// Picks reply variant `$v` out of `$r`, else `EIO` (a member answering out of turn).
macro_rules! reply {
    ($r:expr, $v:ident) => {
        match $r {
            nf_ninep::message::Rmessage::$v(x) => Ok(x),
            _ => Err(nf_ninep_server::FsError::Errno(nf_ninep::errno::EIO)),
        }
    };
}
pub(crate) use reply;

/// Passes `$msg` on through remote fid `$r` and picks reply `$v`; with `stamped`, its
/// qid is stamped as the gateway shows it.
macro_rules! pass {
    ($r:expr, $ctx:expr, $msg:expr => $v:ident) => {
        $crate::proxy::reply!($r.call($ctx, $msg)?, $v)
    };
    ($r:expr, $ctx:expr, $msg:expr => $v:ident, stamped) => {{
        let mut out: nf_ninep::message::$v = $crate::proxy::reply!($r.call($ctx, $msg)?, $v)?;
        out.qid = $r.remap(out.qid);
        nf_ninep_server::FsResult::Ok(out)
    }};
}
pub(crate) use pass;

/// A fid on a member's connection.
#[derive(Debug)]
pub struct RemoteFid {
    /// The member.
    pub member: Arc<Member>,
    /// The connection the fid belongs to.
    pub conn: Arc<Conn>,
    /// The fid number there.
    pub fid: u32,
    /// Names below the member's entry (`..` from 0 leaves the member).
    pub depth: usize,
    /// Where `..` from depth 0 leads.
    pub up: Local,
    /// Whose it is (counted against their share of the connection).
    pub user: Arc<str>,
    /// Set once the fid number passed to another state or the member let it go.
    gone: AtomicBool,
}

impl RemoteFid {
    /// A state for `user`'s new fid `fid` on `conn`, counted against their share
    /// ([`Conn::charge`]); over it, the fid is clunked and `EMFILE` answered.
    pub fn adopt(
        member: Arc<Member>,
        conn: Arc<Conn>,
        fid: u32,
        depth: usize,
        up: Local,
        user: &Arc<str>,
    ) -> FsResult<RemoteFid> {
        if let Err(e) = conn.charge(user) {
            conn.clunk(fid);
            return Err(e);
        }
        Ok(RemoteFid {
            member,
            conn,
            fid,
            depth,
            up,
            user: Arc::clone(user),
            gone: AtomicBool::new(false),
        })
    }

    /// `EHOSTDOWN` / `ESTALE` unless the fid's connection is the member's current one.
    pub fn check(&self) -> FsResult<()> {
        self.member.current(&self.conn)
    }

    /// Sends `msg` (which names this fid) on the fid's connection, counted against
    /// the user's share while it waits.
    pub fn call(&self, ctx: &Ctx, msg: impl Into<Tmessage>) -> FsResult<Rmessage> {
        let admitted = self.conn.is_parked(ctx);
        if let Err(e) = self.check() {
            if admitted {
                self.conn.abandon(ctx);
            }
            return Err(e);
        }
        let _busy = self.conn.busy(ctx, &self.user, admitted)?;
        self.conn.call(ctx, msg.into())
    }

    /// `qid` as the gateway shows it.
    pub fn remap(&self, qid: Qid) -> Qid {
        crate::qid::remap(self.conn.stamp, qid)
    }

    /// Stamps every qid of a directory listing.
    pub fn remap_listing(&self, out: &mut Rreaddir) -> FsResult<()> {
        if self.conn.stamp == 0 || out.data.is_empty() {
            return Ok(());
        }
        let mut entries = decode_dirents(&out.data.0).map_err(|_| FsError::Errno(EIO))?;
        crate::qid::remap_dirents(self.conn.stamp, &mut entries);
        let count = u32::try_from(out.data.len()).unwrap_or(u32::MAX);
        out.data = encode_dirents(&entries, count)
            .map_err(|_| FsError::Errno(EIO))?
            .0;
        Ok(())
    }

    /// A second fid on the same file (a walk with no names).
    pub fn clone_fid(&self, ctx: &Ctx) -> FsResult<RemoteFid> {
        self.check()?;
        let newfid = self.conn.fid_for(ctx);
        walk(ctx, &self.conn, self.fid, newfid, &[])?;
        self.sibling(newfid)
    }

    /// A state for `fid`, a new fid of the same user at the same place.
    pub fn sibling(&self, fid: u32) -> FsResult<RemoteFid> {
        RemoteFid::adopt(
            Arc::clone(&self.member),
            Arc::clone(&self.conn),
            fid,
            self.depth,
            self.up.clone(),
            &self.user,
        )
    }

    /// This state's fid number in a new state, `depth` below the entry; this one
    /// lets go of it without clunking or uncounting it.
    fn moved(&self, depth: usize) -> RemoteFid {
        self.gone.store(true, Ordering::SeqCst);
        RemoteFid {
            member: Arc::clone(&self.member),
            conn: Arc::clone(&self.conn),
            fid: self.fid,
            depth,
            up: self.up.clone(),
            user: Arc::clone(&self.user),
            gone: AtomicBool::new(false),
        }
    }

    /// This fid number, now naming a file created in this directory (`Tlcreate`).
    pub fn moved_down(&self) -> RemoteFid {
        self.moved(self.depth + 1)
    }

    /// This fid number, in a new state at the same place (`Txattrcreate`).
    pub fn moved_here(&self) -> RemoteFid {
        self.moved(self.depth)
    }

    /// The member has let go of the fid (`Tremove`).
    pub fn forget(&self) {
        if !self.gone.swap(true, Ordering::SeqCst) {
            self.conn.discharge(&self.user);
        }
    }

    /// Clunks the fid on the member, unless it moved on or its connection is gone.
    pub fn release(&self) {
        if !self.gone.swap(true, Ordering::SeqCst) {
            self.conn.discharge(&self.user);
            if !self.conn.is_closed() {
                self.conn.clunk(self.fid);
            }
        }
    }
}

/// `Twalk` from `from` to `newfid` on `conn`, 16 names per message: the member's qids
/// (unstamped), fewer than `names` when a later name failed (then `newfid` is not
/// made), or the error of the first.
pub fn walk(
    ctx: &Ctx,
    conn: &Conn,
    from: u32,
    newfid: u32,
    names: &[String],
) -> FsResult<Vec<Qid>> {
    let mut qids = Vec::with_capacity(names.len());
    let mut at = from;
    let chunks: Vec<&[String]> = if names.is_empty() {
        vec![&[]]
    } else {
        names.chunks(nf_ninep::MAXWELEM).collect()
    };
    for chunk in chunks {
        let msg = Twalk {
            fid: at,
            newfid,
            wnames: chunk.to_vec(),
        };
        let got = match conn.call(ctx, msg.into()) {
            Ok(Rmessage::Rwalk(w)) => w.wqids,
            Ok(_) => Err(FsError::Errno(EIO))?,
            Err(e) if qids.is_empty() => return Err(e),
            Err(_) => {
                conn.clunk(newfid);
                return Ok(qids);
            }
        };
        let full = got.len() == chunk.len();
        qids.extend(got);
        if !full {
            if at == newfid {
                conn.clunk(newfid);
            }
            return Ok(qids);
        }
        at = newfid;
    }
    Ok(qids)
}

/// Both fids, if they are on the same member connection (`EXDEV` otherwise: a rename
/// or link cannot cross members).
pub fn same_member<'a>(
    a: FsResult<&'a RemoteFid>,
    b: FsResult<&'a RemoteFid>,
) -> FsResult<(&'a RemoteFid, &'a RemoteFid)> {
    match (a, b) {
        (Ok(a), Ok(b)) if Arc::ptr_eq(&a.conn, &b.conn) => Ok((a, b)),
        _ => Err(FsError::Errno(EXDEV)),
    }
}
