//! Bookkeeping when a request completes (lib9p's `rFOO` half).
//!
//! [`record`] runs under the connection lock when a worker has a [`Done`]. It changes
//! the fid table as the outcome says — fills or drops reservations, marks fids open,
//! swaps replaced states — and returns the reply. It never calls the tree: states the
//! server lets go of are pushed onto `released`, and the caller clunks them after the
//! lock is dropped.
//!
//! | outcome | bookkeeping |
//! |---|---|
//! | attach / auth / xattrwalk ok | reserved number becomes ready |
//! | … failed | reservation dropped |
//! | walk of every name | `newfid` ready (or `fid` replaced, for `newfid == fid`) with the last qid |
//! | walk stopped early / failed | reservation dropped; any state returned is released |
//! | lopen ok | fid marked open with its flags and qid |
//! | lcreate / xattrcreate ok | the fid's state replaced, old one released |
//!
//! Outcomes are recorded even for flushed or aborted requests: a request that did its
//! work changed the server's state, whether or not the client hears about it.

use std::sync::Arc;

use crate::apply::Done;
use crate::check::FidRef;
use crate::error::{FsError, FsResult};
use crate::fid::{FidEntry, FidKind, FidMeta, FidTable};
use nf_ninep::errno::{EIO, ENOENT};
use nf_ninep::message::*;

/// Records `done` in `fids` and returns the reply; states to release go to `released`.
pub(crate) fn record<S>(
    fids: &mut FidTable<S>,
    done: Done<S>,
    released: &mut Vec<FidRef<S>>,
) -> FsResult<Rmessage> {
    match done {
        Done::Reply(result) => result,
        Done::NewFid { fid, result } => match result {
            Ok((reply, state, meta)) => {
                if let Err(orphan) = fids.fill(fid, FidEntry::new(state, meta)) {
                    released.push(orphan);
                }
                Ok(reply)
            }
            Err(e) => {
                fids.unreserve(fid);
                Err(e)
            }
        },
        Done::Opened { fid, flags, result } => {
            if let Ok(r) = &result {
                fid.set_meta(|m| {
                    m.open = Some(flags);
                    m.qid = r.qid;
                });
            }
            result.map(Into::into)
        }
        Done::Replaced { fid, old, result } => result.map(|(reply, state, meta)| {
            match fids.replace(fid, &old, FidEntry::new(state, meta)) {
                Ok(()) => released.push(old),
                Err(orphan) => released.push(orphan),
            }
            reply
        }),
        Done::Walk {
            from,
            fid,
            newfid,
            nwname,
            result,
        } => record_walk(fids, from, fid, newfid, nwname, result, released),
    }
}

fn record_walk<S>(
    fids: &mut FidTable<S>,
    from: FidRef<S>,
    fid: u32,
    newfid: u32,
    nwname: usize,
    result: FsResult<crate::handler::Walked<S>>,
    released: &mut Vec<FidRef<S>>,
) -> FsResult<Rmessage> {
    let drop_reservation = |fids: &mut FidTable<S>| {
        if newfid != fid {
            fids.unreserve(newfid);
        }
    };
    let walked = match result {
        Ok(w) => w,
        Err(e) => {
            drop_reservation(fids);
            return Err(e);
        }
    };
    let n = walked.qids.len();
    let complete = walked.fid.is_some() && n == nwname;
    let bad = n > nwname || (nwname > 0 && n == 0);
    if !complete || bad {
        drop_reservation(fids);
        if let Some(state) = walked.fid {
            released.push(FidEntry::new(state, from.meta()));
        }
        if n > nwname {
            tracing::error!(nwname, qids = n, "tree walk returned more qids than names");
            return Err(FsError::Errno(EIO));
        }
        if n == 0 && nwname > 0 {
            return Err(FsError::Errno(ENOENT));
        }
        return Ok(Rwalk { wqids: walked.qids }.into());
    }
    let qid = walked.qids.last().copied().unwrap_or(from.meta().qid);
    let state = walked.fid.expect("complete walk has a state");
    let entry = FidEntry::new(state, FidMeta::new(qid, FidKind::File));
    let placed = if newfid == fid {
        fids.replace(fid, &from, entry)
            .map(|()| released.push(Arc::clone(&from)))
    } else {
        fids.fill(newfid, entry)
    };
    if let Err(orphan) = placed {
        released.push(orphan);
    }
    Ok(Rwalk { wqids: walked.qids }.into())
}
