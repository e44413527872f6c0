//! `/xcpu` at the gateway: a job request redirected to the member that fits.
//!
//! Opening a scope's `xcpu/clone`:
//!
//! 1. **Place**: among the scope's members that are up and that the user may reach,
//!    prefer those with a free core (cores less the larger of the load and the
//!    sessions present, less the sessions the gateway placed since it last read the
//!    member's status), and among them the one with the most; with none free, the
//!    least busy. Ties go to the member placed on least, then by name.
//! 2. **Open** the member's own `/xcpu/clone` in the user's name and read its session
//!    number `M` (a cluster member places again below). A member that refuses (down,
//!    full, no account) is skipped for the next best.
//! 3. **Number** the session `G` at the gateway; reading the gateway's `clone` gives
//!    `G`, and `xcpu/G/` is the member's `/xcpu/M/`, passed through. The open `clone`
//!    holds the member's session as its own `clone` open does.
//!
//! The gateway remembers at most [`SESSIONS_PER_USER`] sessions per user (the oldest
//! is forgotten first; the member keeps it until it ends, as always), and forgets one
//! as soon as a walk to it finds it ended on the member. `xcpu/procs` lists the
//! user's: `G member M`.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use nf_ninep::errno::{EAGAIN, EIO, EPROTO};
use nf_ninep::message::*;
use nf_ninep::types::LOpenFlags;
use nf_ninep_server::{Ctx, FsError, FsResult};

use crate::member::{lock, Conn, Member};

/// Sessions remembered per user.
pub const SESSIONS_PER_USER: usize = 256;

/// A session the gateway placed.
#[derive(Debug)]
pub struct Session {
    /// Its number at the gateway.
    pub id: u64,
    /// Where it runs.
    pub member: Arc<Member>,
    /// The connection it was made over.
    pub conn: Arc<Conn>,
    /// Its number on the member.
    pub remote: u64,
    /// Whose it is.
    pub owner: Arc<str>,
}

/// The open member `clone` that holds a placed session.
#[derive(Debug)]
pub struct Hold {
    /// The session.
    pub session: Arc<Session>,
    /// The member's open `clone` fid.
    pub fid: u32,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.session.conn.clunk(self.fid);
    }
}

/// Every placed session, by gateway number.
#[derive(Debug, Default)]
pub struct Sessions {
    map: Mutex<BTreeMap<u64, Arc<Session>>>,
    next: std::sync::atomic::AtomicU64,
}

impl Sessions {
    /// Session `id` if it is `user`'s.
    pub fn get(&self, id: u64, user: &str) -> Option<Arc<Session>> {
        lock(&self.map)
            .get(&id)
            .filter(|s| &*s.owner == user)
            .cloned()
    }

    /// Forgets session `id` (it ended on its member).
    pub fn forget(&self, id: u64) {
        lock(&self.map).remove(&id);
    }

    /// `user`'s sessions, oldest first.
    pub fn of(&self, user: &str) -> Vec<Arc<Session>> {
        lock(&self.map)
            .values()
            .filter(|s| &*s.owner == user)
            .cloned()
            .collect()
    }

    fn remember(
        &self,
        member: &Arc<Member>,
        conn: &Arc<Conn>,
        remote: u64,
        owner: &Arc<str>,
    ) -> Arc<Session> {
        // Numbered from 1, as a node numbers its own.
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let s = Arc::new(Session {
            id,
            member: Arc::clone(member),
            conn: Arc::clone(conn),
            remote,
            owner: Arc::clone(owner),
        });
        let mut map = lock(&self.map);
        let mine: Vec<u64> = map
            .values()
            .filter(|x| x.owner == *owner)
            .map(|x| x.id)
            .collect();
        for old in mine
            .iter()
            .take((mine.len() + 1).saturating_sub(SESSIONS_PER_USER))
        {
            map.remove(old);
        }
        map.insert(id, Arc::clone(&s));
        s
    }

    /// Steps 1–3 for `user` among `candidates`.
    pub fn place(
        &self,
        ctx: &Ctx,
        user: &Arc<str>,
        mut candidates: Vec<Arc<Member>>,
    ) -> FsResult<Hold> {
        candidates.retain(|m| m.conn().is_ok());
        candidates.sort_by(|a, b| {
            rank(a).total_cmp(&rank(b)).then_with(|| {
                let pa = a.placed.load(Ordering::Relaxed);
                let pb = b.placed.load(Ordering::Relaxed);
                pa.cmp(&pb).then_with(|| a.name.cmp(&b.name))
            })
        });
        let mut last = FsError::Errno(EAGAIN);
        for m in candidates {
            match open_clone(ctx, user, &m) {
                Ok((conn, fid, remote)) => {
                    m.placed.fetch_add(1, Ordering::Relaxed);
                    let session = self.remember(&m, &conn, remote, user);
                    tracing::info!(user = %user, member = %m.name, remote, gateway = session.id, "session placed");
                    return Ok(Hold { session, fid });
                }
                Err(e) => {
                    tracing::info!(user = %user, member = %m.name, error = ?e, "placing a session there failed; trying the next");
                    if ctx.is_cancelled() {
                        return Err(e);
                    }
                    last = e;
                }
            }
        }
        Err(last)
    }
}

/// Sort key: lower is better (negated free cores; no figures yet: last).
fn rank(m: &Member) -> f64 {
    match m.figures() {
        Some(f) => -f.free_cores(m.placed.load(Ordering::Relaxed)),
        None => f64::MAX,
    }
}

/// Opens `member`'s `/xcpu/clone` as `user`: the connection, the open fid, the
/// member's session number.
fn open_clone(ctx: &Ctx, user: &Arc<str>, member: &Member) -> FsResult<(Arc<Conn>, u32, u64)> {
    let conn = member.conn_for(ctx)?;
    let (root, _) = conn.root(ctx, user)?;
    let fid = conn.new_fid();
    let walk = Twalk {
        fid: root,
        newfid: fid,
        wnames: vec!["xcpu".into(), "clone".into()],
    };
    match conn.call(ctx, walk.into())? {
        Rmessage::Rwalk(w) if w.wqids.len() == 2 => {}
        Rmessage::Rwalk(_) => return Err(FsError::Errno(nf_ninep::errno::ENOENT)),
        _ => return Err(FsError::Errno(EIO)),
    }
    let read = (|| {
        conn.call(
            ctx,
            Tlopen {
                fid,
                flags: LOpenFlags::RDONLY,
            }
            .into(),
        )?;
        match conn.call(
            ctx,
            Tread {
                fid,
                offset: 0,
                count: 64,
            }
            .into(),
        )? {
            Rmessage::Rread(r) => String::from_utf8_lossy(&r.data.0)
                .trim()
                .parse::<u64>()
                .map_err(|_| FsError::Errno(EPROTO)),
            _ => Err(FsError::Errno(EIO)),
        }
    })();
    match read {
        Ok(remote) => Ok((conn, fid, remote)),
        Err(e) => {
            conn.clunk(fid);
            Err(e)
        }
    }
}
