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
use nf_ninep::types::{Dirent, GetattrMask, Qid, QidType, Timespec};
use nf_ninep_server::{Ctx, Filesystem, FsError, FsResult, Walked};

use crate::access::{self, Who};
use crate::member::{lock, Dial, Member, Members};
use crate::proxy::{pass, reply, RemoteFid};
use crate::view::{self, Scope, View};
use crate::xcpu::{Hold, Sessions};

mod local;
mod walk;

pub use local::Local;
use local::{local_attr, stays_local};

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

    fn user(who: &Who) -> FsResult<&Arc<str>> {
        match who {
            Who::User { name, .. } => Ok(name),
            Who::Node(_) => Err(FsError::Errno(EACCES)),
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
            nf_link::addr::Addr::Tls(hp) => {
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

/// `WouldBlock` on a reader thread: for requests that make more than one member call
/// or may wait otherwise (account lookups), which must start on a worker.
fn on_worker(ctx: &Ctx) -> FsResult<()> {
    if ctx.may_block() {
        Ok(())
    } else {
        Err(FsError::WouldBlock)
    }
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
        // An account lookup (NSS may ask a directory server) and, with an aname,
        // member calls: not on a reader thread.
        on_worker(ctx)?;
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
        self.walk_names(ctx, fid, names)
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
