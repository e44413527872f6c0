//! Walking across the gateway: its own names here, each run of names below a member
//! in one `Twalk` there.
//!
//! 1. From a local place, each name is one [`GatewayTree::step`]; a step into a
//!    member (`n/NAME`) or a session (`xcpu/G`) lands on the user's root fid there or
//!    on the session's directory.
//! 2. Below a member, the names up to a `..` that would climb out of it go to the
//!    member in one walk; that `..` comes back to the place above the member.
//! 3. Fids made on the way and left behind are clunked; a partial walk answers the
//!    qids walked, as 9P asks.

use std::sync::Arc;

use nf_ninep::errno::{EACCES, ENOENT, ENOTDIR};
use nf_ninep::types::Qid;
use nf_ninep_server::{Ctx, Filesystem, FsError, FsResult, Walked};

use super::{on_worker, stays_local, GatewayTree, GwFid, Kind, Local};
use crate::access::Who;
use crate::member::{Conn, Member};
use crate::proxy::RemoteFid;
use crate::view::{self, Scope};

/// Where a walk is.
enum Pos {
    Local(Local),
    /// Below a member: the fid there (owned: made during this walk, to be released
    /// when the walk moves on), the depth below the member's entry, and where `..`
    /// from depth 0 leads.
    Remote {
        member: Arc<Member>,
        conn: Arc<Conn>,
        fid: u32,
        owned: bool,
        depth: usize,
        up: Local,
    },
}

impl GatewayTree {
    /// One local step: `name` inside `place`, and the qid shown for it.
    fn step(&self, ctx: &Ctx, who: &Arc<Who>, place: &Local, name: &str) -> FsResult<(Pos, Qid)> {
        let local = |l: Local| {
            let q = l.qid();
            Ok((Pos::Local(l), q))
        };
        if let Who::Node(_) = &**who {
            return match (place, name) {
                (Local::Top(None), "join") => local(Local::Join),
                _ => Err(FsError::Errno(EACCES)),
            };
        }
        if name == "." {
            return local(place.clone());
        }
        if name == ".." {
            return local(place.parent());
        }
        let next = match place {
            Local::Top(s) => match name {
                "n" => Local::N(s.clone()),
                "status" => Local::Status(s.clone()),
                "status.json" => Local::StatusJson(s.clone()),
                "xcpu" => Local::Xcpu(s.clone()),
                "views" if s.is_none() => Local::Views,
                _ => return Err(FsError::Errno(ENOENT)),
            },
            Local::Views => {
                let v = self
                    .views
                    .iter()
                    .find(|v| v.name == name)
                    .ok_or(FsError::Errno(ENOENT))?;
                let scope = Some(Arc::clone(v));
                if !view::admits(&scope, who) {
                    tracing::info!(view = %v.name, who = ?who, "view refused: not in its users or groups");
                    return Err(FsError::Errno(EACCES));
                }
                Local::Top(scope)
            }
            Local::N(s) => return self.enter_member(ctx, who, s, name),
            Local::Xcpu(s) => match name {
                "clone" => Local::Clone(s.clone()),
                "procs" => Local::Procs(s.clone()),
                _ => return self.enter_session(ctx, who, s, name),
            },
            _ => return Err(FsError::Errno(ENOTDIR)),
        };
        local(next)
    }

    /// `/n/NAME` in `scope`: the member's root, as the user.
    fn enter_member(
        &self,
        ctx: &Ctx,
        who: &Arc<Who>,
        scope: &Scope,
        name: &str,
    ) -> FsResult<(Pos, Qid)> {
        let member = self.members.get(name).ok_or(FsError::Errno(ENOENT))?;
        if let Some(v) = scope {
            if !v.holds(&member) {
                return Err(FsError::Errno(ENOENT));
            }
        }
        if !view::reaches(&member, who) {
            tracing::info!(member = %member.name, who = ?who, "member refused: not in its users or groups");
            return Err(FsError::Errno(EACCES));
        }
        let conn = member.conn_for(ctx)?;
        let (fid, qid) = conn.root(ctx, Self::user(who)?)?;
        let pos = Pos::Remote {
            member,
            conn,
            fid,
            owned: false,
            depth: 0,
            up: Local::N(scope.clone()),
        };
        Ok((pos, qid))
    }

    /// `/xcpu/G`: the member's `/xcpu/M`.
    fn enter_session(
        &self,
        ctx: &Ctx,
        who: &Arc<Who>,
        scope: &Scope,
        name: &str,
    ) -> FsResult<(Pos, Qid)> {
        let user = Self::user(who)?;
        let id: u64 = name.parse().map_err(|_| FsError::Errno(ENOENT))?;
        let s = self.sessions.get(id, user).ok_or(FsError::Errno(ENOENT))?;
        // The member's connection now: a session outlives a reconnect (its hold on
        // the lost connection is gone, and it lingers on the member as usual).
        let conn = s.member.conn_for(ctx)?;
        let (root, _) = conn.root(ctx, user)?;
        let fid = conn.new_fid();
        let names = ["xcpu".into(), s.remote.to_string()];
        let walked = match crate::proxy::walk(ctx, &conn, root, fid, &names) {
            Err(FsError::Errno(ENOENT)) => Vec::new(),
            other => other?,
        };
        let [_, dir] = walked[..] else {
            // Ended on the member: forget it here too.
            self.sessions.forget(id);
            return Err(FsError::Errno(ENOENT));
        };
        let pos = Pos::Remote {
            member: Arc::clone(&s.member),
            conn: Arc::clone(&conn),
            fid,
            owned: true,
            depth: 0,
            up: Local::Xcpu(scope.clone()),
        };
        Ok((pos, crate::qid::remap(conn.stamp, dir)))
    }

    /// Lets go of a fid the walk made.
    fn release(pos: &Pos) {
        if let Pos::Remote {
            conn,
            fid,
            owned: true,
            ..
        } = pos
        {
            conn.clunk(*fid);
        }
    }

    /// `Twalk`, the steps in the module docs.
    pub(super) fn walk_names(
        &self,
        ctx: &Ctx,
        fid: &GwFid,
        names: &[String],
    ) -> FsResult<Walked<GwFid>> {
        if names.is_empty() {
            return Ok(Walked {
                qids: Vec::new(),
                fid: Some(self.clone_fid(ctx, fid)?),
            });
        }
        let who = &fid.who;
        let mut pos = match &fid.kind {
            Kind::Local { place, .. } => {
                if !stays_local(place, names) {
                    on_worker(ctx)?;
                }
                Pos::Local(place.clone())
            }
            Kind::Remote(r) => {
                if let Err(e) = r.check() {
                    r.conn.abandon(ctx);
                    return Err(e);
                }
                if leaves_member(r.depth, names) {
                    on_worker(ctx)?;
                }
                Pos::Remote {
                    member: Arc::clone(&r.member),
                    conn: Arc::clone(&r.conn),
                    fid: r.fid,
                    owned: false,
                    depth: r.depth,
                    up: r.up.clone(),
                }
            }
        };
        let mut qids = Vec::with_capacity(names.len());
        let mut i = 0;
        let mut failed: Option<FsError> = None;
        while i < names.len() {
            match &pos {
                Pos::Local(place) => match self.step(ctx, who, place, &names[i]) {
                    Ok((next, qid)) => {
                        qids.push(qid);
                        pos = next;
                        i += 1;
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                },
                Pos::Remote {
                    member,
                    conn,
                    fid: from,
                    depth,
                    up,
                    ..
                } => {
                    let mut run = Vec::new();
                    let mut d = *depth;
                    while i + run.len() < names.len() {
                        let n = &names[i + run.len()];
                        if n == ".." {
                            if d == 0 {
                                break;
                            }
                            d -= 1;
                        } else if n != "." {
                            d += 1;
                        }
                        run.push(n.clone());
                    }
                    if run.is_empty() {
                        // `..` at the member's entry: back to the gateway.
                        let back = up.clone();
                        qids.push(back.qid());
                        Self::release(&pos);
                        pos = Pos::Local(back);
                        i += 1;
                        continue;
                    }
                    let newfid = conn.fid_for(ctx);
                    match crate::proxy::walk(ctx, conn, *from, newfid, &run) {
                        Ok(wq) => {
                            let full = wq.len() == run.len();
                            qids.extend(wq.into_iter().map(|q| crate::qid::remap(conn.stamp, q)));
                            if !full {
                                failed = Some(FsError::Errno(ENOENT));
                                break;
                            }
                            let next = Pos::Remote {
                                member: Arc::clone(member),
                                conn: Arc::clone(conn),
                                fid: newfid,
                                owned: true,
                                depth: d,
                                up: up.clone(),
                            };
                            Self::release(&pos);
                            pos = next;
                            i += run.len();
                        }
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
            }
        }
        if let Some(e) = failed {
            Self::release(&pos);
            if qids.is_empty() || e == FsError::WouldBlock {
                return Err(e);
            }
            return Ok(Walked { qids, fid: None });
        }
        let fid = match pos {
            Pos::Local(place) => GwFid::local(who, place),
            Pos::Remote {
                member,
                conn,
                fid: remote,
                owned,
                depth,
                up,
            } => {
                // A walk that ended on a fid it did not make (only `.`s, or a
                // member's entry reached through its user root) needs its own.
                let remote = if owned {
                    remote
                } else {
                    let copy = conn.new_fid();
                    crate::proxy::walk(ctx, &conn, remote, copy, &[])?;
                    copy
                };
                GwFid {
                    who: Arc::clone(who),
                    kind: Kind::Remote(RemoteFid::adopt(
                        member,
                        conn,
                        remote,
                        depth,
                        up,
                        Self::user(who)?,
                    )?),
                }
            }
        };
        Ok(Walked {
            qids,
            fid: Some(fid),
        })
    }
}

/// True if `names` walked from `depth` below a member's entry climb out of it.
fn leaves_member(depth: usize, names: &[String]) -> bool {
    let mut d = depth;
    for n in names {
        match n.as_str() {
            ".." if d == 0 => return true,
            ".." => d -= 1,
            "." => {}
            _ => d += 1,
        }
    }
    false
}
