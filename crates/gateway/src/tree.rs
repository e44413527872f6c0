//! The gateway's tree: its own directories, and members' trees passed through.
//!
//! ```text
//! /n/MEMBER/…          a member's whole tree (a node's, or a gateway's: gateways nest)
//! /status, /status.json
//! /xcpu/clone          a session placed on the member that fits; /xcpu/G its files
//! /xcpu/procs          the user's placed sessions
//! /views/NAME/…        the same shape (n/, status, status.json, xcpu/) for a view
//! /join                written by nodes registering themselves (not listed)
//! ```
//!
//! A fid is either *local* (a place in the gateway's own tree) or *remote* (a fid on a
//! member's connection, see [`crate::proxy`]). A walk runs the local names here and
//! hands each run of names below a member to the member in one `Twalk`; `..` at a
//! member's root comes back to the gateway's directory above it.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use nf_ninep::errno::{EACCES, EBADF, EHOSTDOWN, EINVAL, EIO, EISDIR, ENOENT, ENOTDIR};
use nf_ninep::message::*;
use nf_ninep::readdir::encode_dirents;
use nf_ninep::types::{Attr, Dirent, GetattrMask, Qid, QidType, Timespec};
use nf_ninep_server::{Ctx, Filesystem, FsError, FsResult, Walked};

use crate::access::{self, Who};
use crate::member::{lock, Conn, Dial, Member, Members};
use crate::proxy::{pass, reply, RemoteFid};
use crate::view::{self, Scope, View};
use crate::xcpu::{Hold, Sessions};

/// A place in the gateway's own tree.
#[derive(Clone, Debug)]
pub enum Local {
    /// The root of a scope (the gateway's root, or `/views/NAME`).
    Top(Scope),
    /// `/views`.
    Views,
    /// A scope's `n/`.
    N(Scope),
    /// A scope's `xcpu/`.
    Xcpu(Scope),
    /// A scope's `status`.
    Status(Scope),
    /// A scope's `status.json`.
    StatusJson(Scope),
    /// A scope's `xcpu/clone`.
    Clone(Scope),
    /// A scope's `xcpu/procs`.
    Procs(Scope),
    /// `/join`.
    Join,
}

impl Local {
    fn is_dir(&self) -> bool {
        matches!(
            self,
            Local::Top(_) | Local::Views | Local::N(_) | Local::Xcpu(_)
        )
    }

    /// The qid: paths below 2^40, one block of 16 per scope.
    fn qid(&self) -> Qid {
        let (scope, slot) = match self {
            Local::Top(s) => (s, 0),
            Local::Views => (&None, 1),
            Local::N(s) => (s, 2),
            Local::Xcpu(s) => (s, 3),
            Local::Status(s) => (s, 4),
            Local::StatusJson(s) => (s, 5),
            Local::Clone(s) => (s, 6),
            Local::Procs(s) => (s, 7),
            Local::Join => (&None, 8),
        };
        Qid {
            ty: if self.is_dir() {
                QidType::DIR
            } else {
                QidType::FILE
            },
            version: 0,
            path: 1 + u64::from(view::number(scope)) * 16 + slot,
        }
    }

    fn scope(&self) -> Scope {
        match self {
            Local::Top(s)
            | Local::N(s)
            | Local::Xcpu(s)
            | Local::Status(s)
            | Local::StatusJson(s)
            | Local::Clone(s)
            | Local::Procs(s) => s.clone(),
            Local::Views | Local::Join => None,
        }
    }

    /// The directory above.
    fn parent(&self) -> Local {
        match self {
            Local::Top(None) | Local::Views | Local::Join => Local::Top(None),
            Local::Top(Some(_)) => Local::Views,
            Local::N(s) | Local::Xcpu(s) | Local::Status(s) | Local::StatusJson(s) => {
                Local::Top(s.clone())
            }
            Local::Clone(s) | Local::Procs(s) => Local::Xcpu(s.clone()),
        }
    }
}

/// What an open local file reads.
#[derive(Debug)]
enum Opened {
    /// A snapshot taken at open.
    Bytes(Vec<u8>),
    /// A placed session, held while this stays open.
    Clone(Hold),
}

/// The gateway's state for one fid.
#[derive(Debug)]
pub struct GwFid {
    who: Arc<Who>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Local {
        place: Local,
        open: Mutex<Option<Opened>>,
    },
    Remote(RemoteFid),
}

impl GwFid {
    fn local(who: &Arc<Who>, place: Local) -> GwFid {
        GwFid {
            who: Arc::clone(who),
            kind: Kind::Local {
                place,
                open: Mutex::new(None),
            },
        }
    }

    fn remote(&self) -> FsResult<&RemoteFid> {
        match &self.kind {
            Kind::Remote(r) => Ok(r),
            Kind::Local { .. } => Err(FsError::Errno(EINVAL)),
        }
    }
}

/// The gateway's tree.
#[derive(Debug)]
pub struct GatewayTree {
    members: Arc<Members>,
    views: Vec<Arc<View>>,
    sessions: Sessions,
    trusted: Vec<String>,
    dial: Arc<Dial>,
    started: Timespec,
    monitors: Mutex<Vec<std::thread::JoinHandle<()>>>,
    stopping: AtomicBool,
}

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
    /// A tree over `members` and `views`, trusting `trusted` gateways, reaching members
    /// with `dial`.
    pub fn new(
        members: Arc<Members>,
        views: Vec<Arc<View>>,
        trusted: Vec<String>,
        dial: Arc<Dial>,
    ) -> GatewayTree {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        GatewayTree {
            members,
            views,
            sessions: Sessions::default(),
            trusted,
            dial,
            started: Timespec {
                sec: now.as_secs(),
                nsec: u64::from(now.subsec_nanos()),
            },
            monitors: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
        }
    }

    /// The members.
    pub fn members(&self) -> &Arc<Members> {
        &self.members
    }

    /// Starts `member`'s monitor thread.
    pub fn watch(&self, member: &Arc<Member>) {
        match member.start(Arc::clone(&self.dial)) {
            Ok(h) => lock(&self.monitors).push(h),
            Err(e) => {
                tracing::error!(member = %member.name, error = %e, "cannot start the member's monitor thread")
            }
        }
    }

    /// Stops every monitor (and with them every member connection).
    pub fn stop(&self) {
        self.stopping
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for m in self.members.all() {
            m.stop();
        }
        for h in lock(&self.monitors).drain(..) {
            let _ = h.join();
        }
    }

    fn scope_members(&self, scope: &Scope, who: &Who) -> Vec<Arc<Member>> {
        view::members_in(scope, self.members.all())
            .into_iter()
            .filter(|m| view::reaches(m, who))
            .collect()
    }

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

    fn user(who: &Who) -> FsResult<&Arc<str>> {
        match who {
            Who::User { name, .. } => Ok(name),
            Who::Node(_) => Err(FsError::Errno(EACCES)),
        }
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
        let conn = member.conn()?;
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
        s.member.current(&s.conn)?;
        let (root, _) = s.conn.root(ctx, user)?;
        let fid = s.conn.new_fid();
        let w = crate::proxy::walk(
            ctx,
            &s.conn,
            root,
            fid,
            &["xcpu".into(), s.remote.to_string()],
        )?;
        let [_, dir] = w[..] else {
            return Err(FsError::Errno(ENOENT));
        };
        let pos = Pos::Remote {
            member: Arc::clone(&s.member),
            conn: Arc::clone(&s.conn),
            fid,
            owned: true,
            depth: 0,
            up: Local::Xcpu(scope.clone()),
        };
        Ok((pos, crate::qid::remap(s.conn.stamp, dir)))
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

    fn listing(&self, who: &Arc<Who>, place: &Local) -> FsResult<Vec<(String, Qid)>> {
        let mut out: Vec<(String, Qid)> = Vec::new();
        let mut add = |name: &str, l: Local| out.push((name.to_string(), l.qid()));
        match place {
            Local::Top(s) => {
                add("n", Local::N(s.clone()));
                if s.is_none() {
                    add("views", Local::Views);
                }
                add("status", Local::Status(s.clone()));
                add("status.json", Local::StatusJson(s.clone()));
                add("xcpu", Local::Xcpu(s.clone()));
            }
            Local::Views => {
                for v in &self.views {
                    let scope = Some(Arc::clone(v));
                    if view::admits(&scope, who) {
                        add(&v.name, Local::Top(scope));
                    }
                }
            }
            Local::N(s) => {
                for m in self.scope_members(s, who) {
                    out.push((
                        m.name.clone(),
                        Qid {
                            ty: QidType::DIR,
                            version: 0,
                            path: (1 << 39) + u64::from(m.index),
                        },
                    ));
                }
            }
            Local::Xcpu(s) => {
                add("clone", Local::Clone(s.clone()));
                add("procs", Local::Procs(s.clone()));
                for sess in self.sessions.of(Self::user(who)?) {
                    out.push((
                        sess.id.to_string(),
                        Qid {
                            ty: QidType::DIR,
                            version: 0,
                            path: (1 << 38) + sess.id,
                        },
                    ));
                }
            }
            _ => return Err(FsError::Errno(ENOTDIR)),
        }
        Ok(out)
    }

    fn procs(&self, who: &Who) -> FsResult<Vec<u8>> {
        let mut out = String::new();
        for s in self.sessions.of(Self::user(who)?) {
            out.push_str(&format!("{} {} {}\n", s.id, s.member.name, s.remote));
        }
        Ok(out.into_bytes())
    }

    /// A node registering itself: `ADDR\n`, where ADDR's host is the node's name.
    fn join(&self, node: &str, text: &[u8]) -> FsResult<()> {
        let text = std::str::from_utf8(text).map_err(|_| FsError::Errno(EINVAL))?;
        let addr_text = text.trim();
        let addr = crate::config::member_addr(addr_text).map_err(|e| {
            tracing::warn!(node, error = %e, "join refused: bad address");
            FsError::Errno(EINVAL)
        })?;
        let host_ok = match &addr {
            nf_node::addr::Addr::Tls(hp) => {
                let host = hp.rsplit_once(':').map_or(hp.as_str(), |(h, _)| h);
                host.trim_start_matches('[').trim_end_matches(']') == node
            }
            _ => false,
        };
        if !host_ok || !crate::config::valid_name(node) {
            tracing::warn!(node, addr = addr_text, "join refused: a node registers a tls: address whose host is its certificate's name");
            return Err(FsError::Errno(EACCES));
        }
        let made = self.members.add(node, |index| {
            Member::new(
                index,
                node,
                addr.clone(),
                Vec::new(),
                Default::default(),
                true,
            )
        });
        match made {
            None => {
                tracing::warn!(node, "join refused: the gateway holds its most members");
                Err(FsError::Errno(nf_ninep::errno::ENOSPC))
            }
            Some((m, true)) => {
                tracing::info!(node, addr = addr_text, "node joined");
                if !self.stopping.load(std::sync::atomic::Ordering::SeqCst) {
                    self.watch(&m);
                }
                Ok(())
            }
            Some((m, false)) => {
                if m.joined {
                    m.set_addr(addr);
                }
                Ok(())
            }
        }
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

fn local_attr(place: &Local, t: Timespec) -> Attr {
    let mode = match place {
        l if l.is_dir() => 0o040_555,
        Local::Join => 0o100_222,
        _ => 0o100_444,
    };
    Attr {
        mode,
        nlink: if place.is_dir() { 2 } else { 1 },
        blksize: 4096,
        atime: t,
        mtime: t,
        ctime: t,
        ..Attr::default()
    }
}

/// `WouldBlock` on a reader thread: for requests that make more than one member call
/// or may wait otherwise (account lookups), which must start on a worker.
fn on_worker(ctx: &Ctx) -> FsResult<()> {
    if ctx.may_block() {
        Ok(())
    } else {
        Err(FsError::WouldBlock)
    }
}

/// True if walking `names` from `place` stays in the gateway's own tree (no member
/// call), judged without calling anyone.
fn stays_local(place: &Local, names: &[String]) -> bool {
    let mut at = place.clone();
    for n in names {
        at = match (&at, n.as_str()) {
            (_, ".") => at.clone(),
            (_, "..") => at.parent(),
            (Local::Top(s), "n") => Local::N(s.clone()),
            (Local::Top(s), "xcpu") => Local::Xcpu(s.clone()),
            (Local::Top(s), "status" | "status.json") => Local::Status(s.clone()),
            (Local::Top(None), "views") => Local::Views,
            (Local::Xcpu(s), "clone" | "procs") => Local::Clone(s.clone()),
            // Into a member, a session or a view (an account lookup): not here.
            _ => return false,
        };
    }
    true
}

impl Filesystem for GatewayTree {
    type Fid = GwFid;

    /// Requests that make one member call run on the client connection's reader
    /// thread while the member answers within [`crate::member::Conn::call`]'s wait;
    /// the rest go to workers.
    fn runs_inline(&self) -> bool {
        true
    }

    fn attach(
        &self,
        ctx: &Ctx,
        req: &Tattach,
        _afid: Option<&GwFid>,
    ) -> FsResult<(Rattach, GwFid)> {
        let who = Arc::new(access::check(&self.trusted, ctx, req)?);
        let root = GwFid::local(&who, Local::Top(None));
        let names: Vec<String> = req
            .aname
            .split('/')
            .filter(|n| !n.is_empty() && *n != ".")
            .map(str::to_string)
            .collect();
        if names.is_empty() {
            return Ok((
                Rattach {
                    qid: Local::Top(None).qid(),
                },
                root,
            ));
        }
        let mut at = root;
        let mut qid = Local::Top(None).qid();
        for chunk in names.chunks(nf_ninep::MAXWELEM) {
            let w = self.walk(ctx, &at, chunk)?;
            let Some(next) = w.fid.filter(|_| w.qids.len() == chunk.len()) else {
                return Err(FsError::Errno(ENOENT));
            };
            self.clunk(ctx, &at)?;
            qid = *w.qids.last().unwrap_or(&qid);
            at = next;
        }
        Ok((Rattach { qid }, at))
    }

    fn walk1(&self, ctx: &Ctx, dir: &GwFid, name: &str) -> FsResult<(Qid, GwFid)> {
        let w = self.walk(ctx, dir, &[name.to_string()])?;
        match (w.qids.first(), w.fid) {
            (Some(q), Some(f)) => Ok((*q, f)),
            _ => Err(FsError::Errno(ENOENT)),
        }
    }

    fn clone_fid(&self, ctx: &Ctx, fid: &GwFid) -> FsResult<GwFid> {
        match &fid.kind {
            Kind::Local { place, .. } => Ok(GwFid::local(&fid.who, place.clone())),
            Kind::Remote(r) => Ok(GwFid {
                who: Arc::clone(&fid.who),
                kind: Kind::Remote(r.clone_fid(ctx)?),
            }),
        }
    }

    fn walk(&self, ctx: &Ctx, fid: &GwFid, names: &[String]) -> FsResult<Walked<GwFid>> {
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

    fn getattr(&self, ctx: &Ctx, fid: &GwFid, req: &Tgetattr) -> FsResult<Rgetattr> {
        match &fid.kind {
            Kind::Local { place, .. } => Ok(Rgetattr {
                valid: GetattrMask::BASIC,
                qid: place.qid(),
                attr: local_attr(place, self.started),
            }),
            Kind::Remote(r) => {
                pass!(r, ctx, Tgetattr { fid: r.fid, ..req.clone() } => Rgetattr, stamped)
            }
        }
    }

    fn lopen(&self, ctx: &Ctx, fid: &GwFid, req: &Tlopen) -> FsResult<Rlopen> {
        let (place, open) = match &fid.kind {
            Kind::Remote(r) => {
                return pass!(r, ctx, Tlopen { fid: r.fid, ..req.clone() } => Rlopen, stamped)
            }
            Kind::Local { place, open } => (place, open),
        };
        let write = nf_ninep_trees::synthetic::wants_write(req.flags);
        let scope = place.scope();
        let opened = match place {
            l if l.is_dir() => None,
            Local::Join => match &*fid.who {
                Who::Node(_) if write => None,
                _ => return Err(FsError::Errno(EACCES)),
            },
            _ if write => return Err(FsError::Errno(EACCES)),
            Local::Status(_) => Some(Opened::Bytes(crate::status::text(&view::members_in(
                &scope,
                self.members.all(),
            )))),
            Local::StatusJson(_) => Some(Opened::Bytes(crate::status::json(&view::members_in(
                &scope,
                self.members.all(),
            )))),
            Local::Procs(_) => Some(Opened::Bytes(self.procs(&fid.who)?)),
            Local::Clone(_) => {
                on_worker(ctx)?;
                let user = Self::user(&fid.who)?;
                let candidates = self.scope_members(&scope, &fid.who);
                if candidates.iter().all(|m| m.conn().is_err()) {
                    tracing::info!(user = %user, "no member of the scope is up to place a session on");
                    return Err(FsError::Errno(EHOSTDOWN));
                }
                Some(Opened::Clone(self.sessions.place(ctx, user, candidates)?))
            }
            _ => return Err(FsError::Errno(EIO)),
        };
        *lock(open) = opened;
        Ok(Rlopen {
            qid: place.qid(),
            iounit: 0,
        })
    }

    fn read(&self, ctx: &Ctx, fid: &GwFid, req: &Tread) -> FsResult<Rread> {
        match &fid.kind {
            Kind::Remote(r) => pass!(r, ctx, Tread { fid: r.fid, ..req.clone() } => Rread),
            Kind::Local { open, .. } => {
                let open = lock(open);
                let data = match &*open {
                    Some(Opened::Bytes(b)) => {
                        nf_ninep_trees::synthetic::slice_at(b, req.offset, req.count)
                    }
                    Some(Opened::Clone(h)) => nf_ninep_trees::synthetic::slice_at(
                        format!("{}\n", h.session.id).as_bytes(),
                        req.offset,
                        req.count,
                    ),
                    None => return Err(FsError::Errno(EBADF)),
                };
                Ok(Rread { data: data.into() })
            }
        }
    }

    fn write(&self, ctx: &Ctx, fid: &GwFid, req: &Twrite) -> FsResult<Rwrite> {
        match &fid.kind {
            Kind::Remote(r) => {
                pass!(r, ctx, Twrite { fid: r.fid, offset: req.offset, data: req.data.clone() } => Rwrite)
            }
            Kind::Local {
                place: Local::Join, ..
            } => match &*fid.who {
                Who::Node(node) => {
                    self.join(node, &req.data.0)?;
                    Ok(Rwrite {
                        count: u32::try_from(req.data.len()).unwrap_or(u32::MAX),
                    })
                }
                Who::User { .. } => Err(FsError::Errno(EACCES)),
            },
            Kind::Local { place, .. } if place.is_dir() => Err(FsError::Errno(EISDIR)),
            Kind::Local { .. } => Err(FsError::Errno(EACCES)),
        }
    }

    fn readdir(&self, ctx: &Ctx, dir: &GwFid, req: &Treaddir) -> FsResult<Rreaddir> {
        match &dir.kind {
            Kind::Remote(r) => {
                let mut out = pass!(r, ctx, Treaddir { fid: r.fid, ..req.clone() } => Rreaddir)?;
                r.remap_listing(&mut out)?;
                Ok(out)
            }
            Kind::Local { place, .. } => {
                let entries: Vec<Dirent> = self
                    .listing(&dir.who, place)?
                    .into_iter()
                    .enumerate()
                    .map(|(k, (name, qid))| Dirent {
                        qid,
                        offset: k as u64 + 1,
                        dtype: if qid.ty == QidType::DIR {
                            Dirent::DT_DIR
                        } else {
                            Dirent::DT_REG
                        },
                        name,
                    })
                    .collect();
                let start = usize::try_from(req.offset)
                    .unwrap_or(usize::MAX)
                    .min(entries.len());
                let (data, _) = encode_dirents(&entries[start..], req.count)
                    .map_err(|_| FsError::Errno(EIO))?;
                Ok(Rreaddir { data })
            }
        }
    }

    fn lcreate(&self, ctx: &Ctx, dir: &GwFid, req: &Tlcreate) -> FsResult<(Rlcreate, GwFid)> {
        let r = dir.remote().map_err(|_| FsError::Errno(EACCES))?;
        let c: Rlcreate =
            pass!(r, ctx, Tlcreate { fid: r.fid, ..req.clone() } => Rlcreate, stamped)?;
        Ok((
            c,
            GwFid {
                who: Arc::clone(&dir.who),
                kind: Kind::Remote(r.moved_down()),
            },
        ))
    }

    fn mkdir(&self, ctx: &Ctx, dir: &GwFid, req: &Tmkdir) -> FsResult<Rmkdir> {
        let r = dir.remote().map_err(|_| FsError::Errno(EACCES))?;
        pass!(r, ctx, Tmkdir { dfid: r.fid, ..req.clone() } => Rmkdir, stamped)
    }

    fn mknod(&self, ctx: &Ctx, dir: &GwFid, req: &Tmknod) -> FsResult<Rmknod> {
        let r = dir.remote().map_err(|_| FsError::Errno(EACCES))?;
        pass!(r, ctx, Tmknod { dfid: r.fid, ..req.clone() } => Rmknod, stamped)
    }

    fn symlink(&self, ctx: &Ctx, dir: &GwFid, req: &Tsymlink) -> FsResult<Rsymlink> {
        let r = dir.remote().map_err(|_| FsError::Errno(EACCES))?;
        pass!(r, ctx, Tsymlink { fid: r.fid, ..req.clone() } => Rsymlink, stamped)
    }

    fn readlink(&self, ctx: &Ctx, fid: &GwFid, _req: &Treadlink) -> FsResult<Rreadlink> {
        let r = fid.remote()?;
        pass!(r, ctx, Treadlink { fid: r.fid } => Rreadlink)
    }

    fn link(&self, ctx: &Ctx, dir: &GwFid, fid: &GwFid, req: &Tlink) -> FsResult<Rlink> {
        let (d, f) = crate::proxy::same_member(dir.remote(), fid.remote())?;
        pass!(d, ctx, Tlink { dfid: d.fid, fid: f.fid, ..req.clone() } => Rlink)
    }

    fn rename(&self, ctx: &Ctx, fid: &GwFid, dir: &GwFid, req: &Trename) -> FsResult<Rrename> {
        let (f, d) = crate::proxy::same_member(fid.remote(), dir.remote())?;
        pass!(f, ctx, Trename { fid: f.fid, dfid: d.fid, ..req.clone() } => Rrename)
    }

    fn renameat(
        &self,
        ctx: &Ctx,
        olddir: &GwFid,
        newdir: &GwFid,
        req: &Trenameat,
    ) -> FsResult<Rrenameat> {
        let (o, n) = crate::proxy::same_member(olddir.remote(), newdir.remote())?;
        pass!(o, ctx, Trenameat { olddirfid: o.fid, newdirfid: n.fid, ..req.clone() } => Rrenameat)
    }

    fn unlinkat(&self, ctx: &Ctx, dir: &GwFid, req: &Tunlinkat) -> FsResult<Runlinkat> {
        let r = dir.remote().map_err(|_| FsError::Errno(EACCES))?;
        pass!(r, ctx, Tunlinkat { dirfid: r.fid, ..req.clone() } => Runlinkat)
    }

    fn remove(&self, ctx: &Ctx, fid: &GwFid) -> FsResult<Rremove> {
        let r = fid.remote().map_err(|_| FsError::Errno(EACCES))?;
        // The member releases the fid whatever the outcome; so must we.
        let out = r.call(ctx, Tremove { fid: r.fid });
        r.forget();
        reply!(out?, Rremove)
    }

    fn setattr(&self, ctx: &Ctx, fid: &GwFid, req: &Tsetattr) -> FsResult<Rsetattr> {
        let r = fid.remote().map_err(|_| FsError::Errno(EACCES))?;
        pass!(r, ctx, Tsetattr { fid: r.fid, ..req.clone() } => Rsetattr)
    }

    fn statfs(&self, ctx: &Ctx, fid: &GwFid, _req: &Tstatfs) -> FsResult<Rstatfs> {
        match &fid.kind {
            Kind::Remote(r) => pass!(r, ctx, Tstatfs { fid: r.fid } => Rstatfs),
            Kind::Local { .. } => Ok(nf_ninep_server::synthetic_statfs()),
        }
    }

    fn fsync(&self, ctx: &Ctx, fid: &GwFid, req: &Tfsync) -> FsResult<Rfsync> {
        match &fid.kind {
            Kind::Remote(r) => pass!(r, ctx, Tfsync { fid: r.fid, ..req.clone() } => Rfsync),
            Kind::Local { .. } => Ok(Rfsync),
        }
    }

    fn xattrwalk(&self, ctx: &Ctx, fid: &GwFid, req: &Txattrwalk) -> FsResult<(Rxattrwalk, GwFid)> {
        let r = fid
            .remote()
            .map_err(|_| FsError::Errno(nf_ninep::errno::EOPNOTSUPP))?;
        let newfid = r.conn.fid_for(ctx);
        let out = pass!(r, ctx, Txattrwalk { fid: r.fid, newfid, ..req.clone() } => Rxattrwalk)?;
        Ok((
            out,
            GwFid {
                who: Arc::clone(&fid.who),
                kind: Kind::Remote(r.sibling(newfid)?),
            },
        ))
    }

    fn xattrcreate(
        &self,
        ctx: &Ctx,
        fid: &GwFid,
        req: &Txattrcreate,
    ) -> FsResult<(Rxattrcreate, GwFid)> {
        let r = fid
            .remote()
            .map_err(|_| FsError::Errno(nf_ninep::errno::EOPNOTSUPP))?;
        let out = pass!(r, ctx, Txattrcreate { fid: r.fid, ..req.clone() } => Rxattrcreate)?;
        Ok((
            out,
            GwFid {
                who: Arc::clone(&fid.who),
                kind: Kind::Remote(r.moved_here()),
            },
        ))
    }

    fn lock(&self, ctx: &Ctx, fid: &GwFid, req: &Tlock) -> FsResult<Rlock> {
        let r = fid
            .remote()
            .map_err(|_| FsError::Errno(nf_ninep::errno::ENOLCK))?;
        pass!(r, ctx, Tlock { fid: r.fid, ..req.clone() } => Rlock)
    }

    fn getlock(&self, ctx: &Ctx, fid: &GwFid, req: &Tgetlock) -> FsResult<Rgetlock> {
        let r = fid
            .remote()
            .map_err(|_| FsError::Errno(nf_ninep::errno::ENOLCK))?;
        pass!(r, ctx, Tgetlock { fid: r.fid, ..req.clone() } => Rgetlock)
    }

    fn clunk(&self, _ctx: &Ctx, fid: &GwFid) -> FsResult<()> {
        match &fid.kind {
            Kind::Remote(r) => r.release(),
            Kind::Local { open, .. } => {
                lock(open).take();
            }
        }
        Ok(())
    }
}
