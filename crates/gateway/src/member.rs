//! Members: the nodes and clusters behind the gateway, a few long connections each.
//!
//! A member's life:
//!
//! 1. **Down** until its monitor thread connects (as the gateway: its certificate over
//!    TLS) and attaches as the probe user; whether the member is a node or another
//!    gateway is read from its root (a gateway has `status.json`).
//! 2. **Up** over [`Dial::lanes`] connections (lanes): each client connection of the
//!    gateway is bound to one lane (by its number), so many clients are spread over
//!    several member connections — each served by its own threads here and on the
//!    member — instead of queueing on one, while a client's fids all stay on the lane
//!    they were made on. Users' requests are multiplexed over a lane, each under its
//!    own tag; each user gets one attach (a root fid) per lane, made the first
//!    time they walk into the member, in their own name (the member applies its own
//!    checks). Every [`PROBE_INTERVAL`] the monitor reads the member's status on the
//!    first lane; a probe that fails or takes longer than [`PROBE_TIMEOUT`] (walk, open
//!    and reads in all), or any lane lost, closes every lane, which fails every request
//!    in flight at once with `EHOSTDOWN` (nothing waits for a member that stopped
//!    answering).
//! 3. **Down** again: requests on fids of the lost connection answer `EHOSTDOWN` while
//!    the member is down and `ESTALE` once it is back (the file must be walked to and
//!    opened again); the monitor reconnects every [`RETRY_INTERVAL`].
//!
//! A member that is down answers new walks `EHOSTDOWN`, unless it refused the
//! gateway's attach (a node that does not trust this gateway): then `EACCES`, since
//! it is there and says no.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nf_link::addr::Addr;
use nf_link::tls::TlsFiles;
use nf_ninep::errno::{EACCES, EAGAIN, EHOSTDOWN, EINTR, EIO, EMFILE, ESTALE};
use nf_ninep::message::*;
use nf_ninep::types::{LOpenFlags, Qid, NOFID};
use nf_ninep::NONUNAME;
use nf_ninep_client::connect::{connect, ConnectError, ConnectOptions};
use nf_ninep_client::{Client, ClientError, Root};
use nf_ninep_server::{Ctx, FsError, FsResult, Monitor, Tally};

use crate::config::Allow;
use crate::status::Figures;

/// How often an up member's status is read.
pub const PROBE_INTERVAL: Duration = Duration::from_secs(2);
/// Fids one user may hold on one member connection: the connection is shared by every
/// user of the gateway, and the member's own limit (`nf serve --max-fids`, 16384) is
/// per connection, so no user may take it all.
pub const FIDS_PER_USER: usize = 2048;
/// Requests one user may have waiting on one member connection (the member's
/// `--max-in-flight`, 256, is per connection; blocked pipe reads count). More wait
/// their turn at the gateway, up to [`QUEUE_WAIT`].
pub const CALLS_PER_USER: usize = 32;
/// How long a request waits at the gateway for one of its user's
/// [`CALLS_PER_USER`] before `EAGAIN`: long enough that an ordinary job of many
/// clients (64 ranks reading at once) only queues, short enough that a user whose own
/// calls all wait for something (32 blocked pipe reads, the writer queued behind them)
/// hears about it instead of hanging.
pub const QUEUE_WAIT: Duration = Duration::from_secs(10);
/// How long connecting to a member or reading its status may take.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often a down member is tried again.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);
/// The most a member's status file may hold (a gateway's `status.json` lists every
/// member it holds).
const STATUS_LIMIT: usize = 16 << 20;
/// How often a request waiting on a member looks whether it was flushed.
const FLUSH_POLL: Duration = Duration::from_millis(20);
/// How long a request run on the client connection's reader thread waits for the
/// member's answer before it moves to a worker (see [`Conn::call`]).
const INLINE_WAIT: Duration = Duration::from_millis(5);

/// A request run on a reader thread: the fid it made for the member (if any), and,
/// once it moved to a worker, its call and what it asked (so a re-run of a different
/// request under a reused tag never takes it).
#[derive(Default)]
struct Inline {
    newfid: Option<u32>,
    parked: Option<(u64, nf_ninep_client::PendingCall)>,
}

/// A fingerprint of a request (its debug form: type, fids, offsets, counts, names
/// and the first bytes of data).
fn fingerprint(msg: &Tmessage) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{msg:?}").hash(&mut h);
    h.finish()
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How the gateway reaches members.
#[derive(Clone, Debug)]
pub struct Dial {
    /// The gateway's certificate, key and CA, for `tls:` members.
    pub tls: Option<TlsFiles>,
    /// The msize asked of members.
    pub msize: u32,
    /// The account the gateway reads members' status as.
    pub probe_user: String,
    /// Connections to each member (at least 1); clients are spread over them.
    pub lanes: usize,
}

/// [`Dial::lanes`] unless configured: enough that 16 busy clients are not queued on
/// one connection, few enough that a member's connection limit is not a concern.
pub const DEFAULT_LANES: usize = 4;

/// One connection to a member.
pub struct Conn {
    client: Client,
    /// Bits stamped into this member's qids ([`crate::qid`]).
    pub stamp: u64,
    /// True if the member is another gateway.
    pub cluster: bool,
    /// Users' root fids on this connection.
    roots: Mutex<HashMap<Arc<str>, (u32, Qid)>>,
    next_fid: AtomicU32,
    probe: Root,
    /// Requests started inline, by (client connection, tag).
    inline: Mutex<HashMap<(u64, u16), Inline>>,
    /// Each user's fids and waiting requests here; requests queued for a share wait
    /// on it.
    usage: Arc<Monitor<HashMap<Arc<str>, Usage>>>,
    /// Requests that waited [`QUEUE_WAIT`] in vain (a line per 10 s).
    queue_timeouts: Tally,
}

/// One user's share of a member connection.
#[derive(Debug, Default)]
struct Usage {
    fids: usize,
    calls: usize,
}

/// A request counted against its user's [`CALLS_PER_USER`] until dropped.
pub struct Busy<'a> {
    conn: &'a Conn,
    user: &'a Arc<str>,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.conn.settle(self.user, |u| u.calls -= 1);
    }
}

impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Conn")
            .field("cluster", &self.cluster)
            .finish()
    }
}

impl Conn {
    /// A fid number unused on this connection (the probe's own come from the client's
    /// counter, which counts up from 0; ours count down from the top).
    pub fn new_fid(&self) -> u32 {
        loop {
            let n = self.next_fid.fetch_sub(1, Ordering::Relaxed);
            if n != NOFID {
                return n;
            }
        }
    }

    /// The fid number a request makes on the member: a fresh one, or — for a request
    /// moved from a reader thread to a worker — the one its first run used.
    pub fn fid_for(&self, ctx: &Ctx) -> u32 {
        let key = (ctx.conn_id(), ctx.tag());
        let mut inline = lock(&self.inline);
        if ctx.may_block() {
            if let Some(fid) = inline.get(&key).and_then(|i| i.newfid) {
                return fid;
            }
            return self.new_fid();
        }
        let fid = self.new_fid();
        inline.entry(key).or_default().newfid = Some(fid);
        fid
    }

    /// Counts a new fid of `user`'s: `EMFILE` beyond [`FIDS_PER_USER`].
    pub fn charge(&self, user: &Arc<str>) -> FsResult<()> {
        let mut usage = self.usage.lock();
        let u = usage.entry(Arc::clone(user)).or_default();
        if u.fids >= FIDS_PER_USER {
            tracing::warn!(user = %user, limit = FIDS_PER_USER, "a user holds the most fids one member connection allows them (FIDS_PER_USER); answering EMFILE");
            return Err(FsError::Errno(EMFILE));
        }
        u.fids += 1;
        Ok(())
    }

    /// Uncounts a fid of `user`'s.
    pub fn discharge(&self, user: &Arc<str>) {
        self.settle(user, |u| u.fids -= 1);
    }

    /// Counts a request of `user`'s until the guard drops. Beyond [`CALLS_PER_USER`]
    /// it waits its turn (on a worker: a request on the reader thread is handed to one
    /// with `WouldBlock`, nothing taken), `EINTR` if flushed meanwhile, `EAGAIN` after
    /// [`QUEUE_WAIT`]. An `admitted` request (one that already started, taken over by
    /// a worker) is never turned back halfway.
    pub fn busy<'a>(&'a self, ctx: &Ctx, user: &'a Arc<str>, admitted: bool) -> FsResult<Busy<'a>> {
        let take = |usage: &mut HashMap<Arc<str>, Usage>| {
            let full = usage.get(user).is_some_and(|u| u.calls >= CALLS_PER_USER);
            if full && !admitted {
                return None;
            }
            usage.entry(Arc::clone(user)).or_default().calls += 1;
            Some(Busy { conn: self, user })
        };
        if let Some(busy) = take(&mut self.usage.lock()) {
            return Ok(busy);
        }
        if !ctx.may_block() {
            return Err(FsError::WouldBlock);
        }
        match ctx.cancel().wait_timeout(&self.usage, QUEUE_WAIT, take)? {
            Some(busy) => Ok(busy),
            None => {
                self.queue_timeouts.hit(|| {
                    format!(
                        "user {user:?} waited {}s for one of their {CALLS_PER_USER} requests \
                         on a member connection (all wait on the member, e.g. blocked pipe \
                         reads); answering EAGAIN",
                        QUEUE_WAIT.as_secs()
                    )
                });
                Err(FsError::Errno(EAGAIN))
            }
        }
    }

    fn settle(&self, user: &Arc<str>, change: impl FnOnce(&mut Usage)) {
        self.usage.update(|usage| {
            if let Some(u) = usage.get_mut(user) {
                change(u);
                if u.fids == 0 && u.calls == 0 {
                    usage.remove(user);
                }
            }
        });
    }

    /// True if this request (`ctx`) started its member call on a reader thread and a
    /// worker now runs it again.
    pub fn is_parked(&self, ctx: &Ctx) -> bool {
        ctx.may_block()
            && lock(&self.inline)
                .get(&(ctx.conn_id(), ctx.tag()))
                .is_some_and(|i| i.parked.is_some())
    }

    /// Drops this request's parked call (its re-run failed before taking it over),
    /// flushing it on the member so nothing is left waiting there.
    pub fn abandon(&self, ctx: &Ctx) {
        let parked = lock(&self.inline).remove(&(ctx.conn_id(), ctx.tag()));
        if let Some((_, call)) = parked.and_then(|i| i.parked) {
            let _ = call.flush_within(Some(PROBE_TIMEOUT));
        }
    }

    /// True once the connection failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// The negotiated msize.
    pub fn msize(&self) -> u32 {
        self.client.msize()
    }

    /// Sends `msg` and waits for the answer; a flush of the request (`ctx`) is passed
    /// on. `Rlerror` becomes its errno, a lost connection `EHOSTDOWN`.
    ///
    /// On a client connection's reader thread (`!ctx.may_block()`) the answer is
    /// awaited for `INLINE_WAIT` only, received by this thread itself from the member's
    /// connection (no hand-off from that connection's reader thread): most come
    /// sooner, sparing the hand-offs to and from a worker; otherwise the call is parked and [`FsError::WouldBlock`] sends the
    /// request to a worker, whose run of the same method takes the parked call over
    /// instead of sending it again. Methods that make more than one call must
    /// therefore not run inline ([`crate::tree`] sends them to a worker first).
    pub fn call(&self, ctx: &Ctx, msg: Tmessage) -> FsResult<Rmessage> {
        let key = (ctx.conn_id(), ctx.tag());
        let call = if ctx.may_block() {
            let parked = lock(&self.inline).remove(&key).and_then(|i| i.parked);
            match parked {
                Some((was, call)) if was == fingerprint(&msg) => call,
                stale => {
                    if let Some((_, call)) = stale {
                        let _ = call.flush_within(Some(PROBE_TIMEOUT));
                    }
                    self.client.start(msg).map_err(|e| self.lost(&e))?
                }
            }
        } else {
            let asked = fingerprint(&msg);
            let started = self.client.start(msg).map_err(|e| self.lost(&e));
            // The call receives its answer itself (nf_ninep_client's rpc): no hand-off
            // from the connection's reader thread.
            let waited = started.and_then(|call| match call.wait_timeout(INLINE_WAIT) {
                Ok(reply) => Ok((call, reply)),
                Err(e) => Err(self.lost(&e)),
            });
            let mut inline = lock(&self.inline);
            return match waited {
                Ok((call, None)) => {
                    inline.entry(key).or_default().parked = Some((asked, call));
                    Err(FsError::WouldBlock)
                }
                Ok((_, Some(reply))) => {
                    inline.remove(&key);
                    Self::answer(reply)
                }
                Err(e) => {
                    inline.remove(&key);
                    Err(e)
                }
            };
        };
        let reply = loop {
            match call.wait_timeout(FLUSH_POLL) {
                Ok(Some(reply)) => break reply,
                Ok(None) if ctx.is_cancelled() => match call.flush() {
                    Ok(Some(reply)) => break reply,
                    Ok(None) => return Err(FsError::Errno(EINTR)),
                    Err(e) => return Err(self.lost(&e)),
                },
                Ok(None) => {}
                Err(e) => return Err(self.lost(&e)),
            }
        };
        Self::answer(reply)
    }

    fn answer(reply: Rmessage) -> FsResult<Rmessage> {
        match reply {
            Rmessage::Rlerror(Rlerror { ecode }) => Err(FsError::Errno(ecode)),
            other => Ok(other),
        }
    }

    fn lost(&self, e: &ClientError) -> FsError {
        match e {
            ClientError::Disconnected { .. } | ClientError::Io(_) => FsError::Errno(EHOSTDOWN),
            other => {
                tracing::warn!(error = %other, "a request to a member failed");
                FsError::Errno(EIO)
            }
        }
    }

    /// `user`'s root fid on this connection and its qid (stamped), attaching in their
    /// name the first time.
    pub fn root(&self, ctx: &Ctx, user: &Arc<str>) -> FsResult<(u32, Qid)> {
        if let Some(root) = lock(&self.roots).get(user) {
            return Ok(*root);
        }
        let fid = self.new_fid();
        let attach = Tattach {
            fid,
            afid: NOFID,
            uname: user.to_string(),
            aname: String::new(),
            n_uname: NONUNAME,
        };
        let qid = match self.call(ctx, attach.into())? {
            Rmessage::Rattach(a) => crate::qid::remap(self.stamp, a.qid),
            _ => return Err(FsError::Errno(EIO)),
        };
        let mut roots = lock(&self.roots);
        if let Some(other) = roots.get(user) {
            // Another request attached meanwhile: keep one.
            let other = *other;
            drop(roots);
            self.clunk(fid);
            return Ok(other);
        }
        roots.insert(Arc::clone(user), (fid, qid));
        Ok((fid, qid))
    }

    /// Releases `fid` on the member (errors ignored: the member forgets it either way
    /// when the connection ends).
    pub fn clunk(&self, fid: u32) {
        if let Ok(call) = self.client.start(Tclunk { fid }) {
            let _ = call.wait_timeout(PROBE_TIMEOUT);
        }
    }

    /// The member's status file, read as the probe user within [`PROBE_TIMEOUT`] in
    /// all.
    fn read_status(&self) -> Result<Figures, String> {
        let name = if self.cluster {
            "status.json"
        } else {
            "status"
        };
        let deadline = Instant::now() + PROBE_TIMEOUT;
        let fid = self.new_fid();
        let walk = Twalk {
            fid: self.probe.number(),
            newfid: fid,
            wnames: vec![name.to_string()],
        };
        match self.probe_call(walk.into(), deadline) {
            Ok(Rmessage::Rwalk(w)) if w.wqids.len() == 1 => {}
            Ok(_) => return Err(format!("walk /{name}: unexpected reply")),
            Err(e) => return Err(format!("walk /{name}: {e}")),
        }
        let bytes = self.probe_read(fid, deadline);
        if !self.is_closed() {
            self.clunk(fid);
        }
        let bytes = bytes.map_err(|e| format!("read /{name}: {e}"))?;
        let text = String::from_utf8_lossy(&bytes);
        if self.cluster {
            Figures::from_gateway_json(&text)
        } else {
            Ok(Figures::from_node_status(&text))
        }
    }

    /// Opens the walked `fid` and reads it to its end, by `deadline`.
    fn probe_read(&self, fid: u32, deadline: Instant) -> Result<Vec<u8>, String> {
        let open = Tlopen {
            fid,
            flags: LOpenFlags::RDONLY,
        };
        self.probe_call(open.into(), deadline)?;
        let count = self.msize().saturating_sub(nf_ninep::IOHDRSZ);
        let mut bytes = Vec::new();
        loop {
            let read = Tread {
                fid,
                offset: bytes.len() as u64,
                count,
            };
            match self.probe_call(read.into(), deadline)? {
                Rmessage::Rread(r) if r.data.0.is_empty() => return Ok(bytes),
                Rmessage::Rread(r) => bytes.extend_from_slice(&r.data.0),
                _ => return Err(String::from("unexpected reply")),
            }
            if bytes.len() > STATUS_LIMIT {
                return Err(format!("more than {STATUS_LIMIT} bytes"));
            }
        }
    }

    /// Sends the probe's `msg` and waits for the answer until `deadline`. A member that
    /// has not answered by then has its connection closed (every request waiting there
    /// fails at once) rather than the request flushed, which could wait as long again.
    fn probe_call(&self, msg: Tmessage, deadline: Instant) -> Result<Rmessage, String> {
        let call = self.client.start(msg).map_err(|e| e.to_string())?;
        match call.wait_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Some(Rmessage::Rlerror(Rlerror { ecode }))) => {
                let errno = i32::try_from(ecode).unwrap_or(i32::MAX);
                Err(std::io::Error::from_raw_os_error(errno).to_string())
            }
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => {
                self.client.close();
                Err(format!("no answer within {PROBE_TIMEOUT:?}"))
            }
            Err(e) => Err(e.to_string()),
        }
    }
}

/// Whether a member can be reached now.
#[derive(Clone, Debug)]
pub enum Link {
    /// Not connected: why, and since when.
    Down {
        /// The last failure.
        reason: String,
        /// When it went down (or the gateway started).
        since: Instant,
    },
    /// Connected.
    Up(Lanes),
}

/// A member's connections while it is up (rule 2).
#[derive(Clone, Debug)]
pub struct Lanes(Arc<[Arc<Conn>]>);

impl Lanes {
    /// The first lane: the monitor's probes, and what describes the member.
    pub fn first(&self) -> &Arc<Conn> {
        &self.0[0]
    }

    /// The lane client connection `client` uses.
    pub fn for_client(&self, client: u64) -> &Arc<Conn> {
        &self.0[(client % self.0.len() as u64) as usize]
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never: an up member has at least one lane.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether any lane was lost (then all are dropped).
    pub fn is_closed(&self) -> bool {
        self.0.iter().any(|c| c.is_closed())
    }

    fn holds(&self, conn: &Arc<Conn>) -> bool {
        self.0.iter().any(|c| Arc::ptr_eq(c, conn))
    }

    fn close(&self) {
        for c in self.0.iter() {
            c.client.close();
        }
    }
}

/// A node or cluster behind the gateway.
#[derive(Debug)]
pub struct Member {
    /// Its number (1-based, stamped into its qids).
    pub index: u16,
    /// Its name under `/n`.
    pub name: String,
    addr: Mutex<Addr>,
    /// Labels from the config.
    pub labels: Vec<String>,
    /// Who may reach it.
    pub allow: Allow,
    /// True if it registered itself rather than being configured.
    pub joined: bool,
    link: Mutex<Link>,
    figures: Mutex<Option<Figures>>,
    /// Sessions the gateway placed here since its status was last read.
    pub placed: AtomicU32,
    wake: Condvar,
    stopped: AtomicBool,
    /// True while the last try to connect was refused at attach (`EACCES`).
    refused: AtomicBool,
}

impl Member {
    /// A member, down until its monitor connects.
    pub fn new(
        index: u16,
        name: &str,
        addr: Addr,
        labels: Vec<String>,
        allow: Allow,
        joined: bool,
    ) -> Member {
        Member {
            index,
            name: name.to_string(),
            addr: Mutex::new(addr),
            labels,
            allow,
            joined,
            link: Mutex::new(Link::Down {
                reason: String::from("not connected yet"),
                since: Instant::now(),
            }),
            figures: Mutex::new(None),
            placed: AtomicU32::new(0),
            wake: Condvar::new(),
            stopped: AtomicBool::new(false),
            refused: AtomicBool::new(false),
        }
    }

    /// Where it is reached.
    pub fn addr(&self) -> Addr {
        lock(&self.addr).clone()
    }

    /// Points a joined member at a new address (it re-registered from elsewhere).
    pub fn set_addr(&self, addr: Addr) {
        let mut a = lock(&self.addr);
        if *a != addr {
            *a = addr;
            drop(a);
            self.drop_link("it registered a new address");
        }
    }

    /// Its link now.
    pub fn link(&self) -> Link {
        lock(&self.link).clone()
    }

    /// The first connection, or `EHOSTDOWN` (`EACCES` if the member refused the
    /// gateway).
    pub fn conn(&self) -> FsResult<Arc<Conn>> {
        self.lanes().map(|l| Arc::clone(l.first()))
    }

    /// The connection the request's client uses (rule 2), or as [`Member::conn`].
    pub fn conn_for(&self, ctx: &Ctx) -> FsResult<Arc<Conn>> {
        self.lanes()
            .map(|l| Arc::clone(l.for_client(ctx.conn_id())))
    }

    fn lanes(&self) -> FsResult<Lanes> {
        match &*lock(&self.link) {
            Link::Up(l) if !l.is_closed() => Ok(l.clone()),
            _ if self.refused.load(Ordering::Relaxed) => Err(FsError::Errno(EACCES)),
            _ => Err(FsError::Errno(EHOSTDOWN)),
        }
    }

    /// `conn` if it is still one of this member's connections; else `EHOSTDOWN`
    /// (down) or `ESTALE` (up again on new connections: walk to the file again).
    pub fn current(&self, conn: &Arc<Conn>) -> FsResult<()> {
        match &*lock(&self.link) {
            Link::Up(l) if l.holds(conn) && !l.is_closed() => Ok(()),
            Link::Up(l) if !l.is_closed() => Err(FsError::Errno(ESTALE)),
            _ => Err(FsError::Errno(EHOSTDOWN)),
        }
    }

    /// Its last status, if it is up and has been read.
    pub fn figures(&self) -> Option<Figures> {
        lock(&self.figures).clone()
    }

    /// Every label: the config's and those the member reports.
    pub fn all_labels(&self) -> Vec<String> {
        let mut all = self.labels.clone();
        if let Some(f) = self.figures() {
            all.extend(f.labels.into_iter().filter(|l| !self.labels.contains(l)));
        }
        all
    }

    fn drop_link(&self, why: &str) {
        let mut link = lock(&self.link);
        if let Link::Up(lanes) = &*link {
            lanes.close();
            tracing::warn!(member = %self.name, why, "member down");
            *link = Link::Down {
                reason: why.to_string(),
                since: Instant::now(),
            };
            *lock(&self.figures) = None;
        }
        self.wake.notify_all();
    }

    /// Asks the monitor to stop.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.drop_link("the gateway is stopping");
        self.wake.notify_all();
    }

    /// Waits `d` or until woken.
    fn pause(&self, d: Duration) {
        let link = lock(&self.link);
        if !self.stopped.load(Ordering::SeqCst) {
            let _ = self.wake.wait_timeout(link, d);
        }
    }

    /// Starts the monitor thread (connect, probe, reconnect).
    pub fn start(self: &Arc<Self>, dial: Arc<Dial>) -> std::io::Result<JoinHandle<()>> {
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name(format!("gw-{}", self.name))
            .spawn(move || me.monitor(&dial))
    }

    fn monitor(&self, dial: &Dial) {
        let mut last_error = String::new();
        while !self.stopped.load(Ordering::SeqCst) {
            match self.link() {
                Link::Down { .. } => match self.open_lanes(dial) {
                    Ok(lanes) => {
                        let figures = lanes.first().read_status();
                        let mut link = lock(&self.link);
                        if self.stopped.load(Ordering::SeqCst) {
                            lanes.close();
                            break;
                        }
                        let cluster = lanes.first().cluster;
                        tracing::info!(member = %self.name, cluster, lanes = lanes.len(), "member up");
                        *link = Link::Up(lanes);
                        drop(link);
                        *lock(&self.figures) = figures.ok();
                        self.refused.store(false, Ordering::Relaxed);
                        last_error.clear();
                    }
                    Err(Unreachable { why: e, refused }) => {
                        self.refused.store(refused, Ordering::Relaxed);
                        if e != last_error {
                            tracing::warn!(member = %self.name, error = %e, "member unreachable; retrying every second");
                        }
                        let mut link = lock(&self.link);
                        if let Link::Down { reason, .. } = &mut *link {
                            reason.clone_from(&e);
                        }
                        last_error = e;
                        drop(link);
                        self.pause(RETRY_INTERVAL);
                    }
                },
                Link::Up(lanes) => {
                    if lanes.is_closed() {
                        self.drop_link("a connection was lost");
                        continue;
                    }
                    match lanes.first().read_status() {
                        Ok(f) => {
                            *lock(&self.figures) = Some(f);
                            self.placed.store(0, Ordering::Relaxed);
                        }
                        Err(e) => {
                            self.drop_link(&format!("reading its status failed: {e}"));
                            continue;
                        }
                    }
                    self.pause(PROBE_INTERVAL);
                }
            }
        }
    }

    /// Opens [`Dial::lanes`] connections; past the first, one that cannot be made
    /// leaves the member up on fewer (said once).
    fn open_lanes(&self, dial: &Dial) -> Result<Lanes, Unreachable> {
        let mut lanes = vec![Arc::new(self.open(dial)?)];
        for _ in 1..dial.lanes.max(1) {
            match self.open(dial) {
                Ok(c) => lanes.push(Arc::new(c)),
                Err(e) => {
                    tracing::warn!(member = %self.name, error = %e.why, lanes = lanes.len(), "member: an extra connection failed; serving on fewer");
                    break;
                }
            }
        }
        Ok(Lanes(lanes.into()))
    }

    fn open(&self, dial: &Dial) -> Result<Conn, Unreachable> {
        let opts = ConnectOptions {
            user: dial.probe_user.clone(),
            msize: dial.msize,
            tls: dial.tls.clone(),
            timeout: Some(PROBE_TIMEOUT),
        };
        let addr = self.addr();
        let client = connect(&addr, &opts).map_err(|e| Unreachable {
            why: match e {
                // The library's hint names the client commands' flags; the gateway's
                // certificate comes from its own.
                ConnectError::NoCertificate { addr } => format!(
                    "{addr} is a TLS member and the gateway has no certificate to present: \
                     start nf gateway with --tls-cert FILE --tls-key FILE --tls-client-ca FILE"
                ),
                e => e.to_string(),
            },
            refused: false,
        })?;
        let probe = client
            .attach(&dial.probe_user, "")
            .map_err(|e| Unreachable {
                why: format!("attaching as the probe user {}: {e}", dial.probe_user),
                refused: e.errno() == Some(EACCES),
            })?;
        let cluster = probe.walk("/status.json").is_ok();
        Ok(Conn {
            stamp: crate::qid::stamp(self.index, cluster),
            cluster,
            roots: Mutex::new(HashMap::new()),
            next_fid: AtomicU32::new(NOFID - 1),
            probe,
            inline: Mutex::new(HashMap::new()),
            usage: Arc::new(Monitor::new(HashMap::new())),
            queue_timeouts: Tally::new(),
            client,
        })
    }
}

/// Why a member could not be reached.
struct Unreachable {
    /// What failed.
    why: String,
    /// True if it answered the gateway's attach with `EACCES` (it does not trust the
    /// gateway, or has no account for the probe user).
    refused: bool,
}

/// Every member, by name, in the order they were added.
#[derive(Debug, Default)]
pub struct Members {
    list: RwLock<Vec<Arc<Member>>>,
}

impl Members {
    /// Every member now.
    pub fn all(&self) -> Vec<Arc<Member>> {
        self.list
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The member named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Member>> {
        self.list
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|m| m.name == name)
            .cloned()
    }

    /// Adds a member made by `make` from the next number, unless one of that name
    /// exists (returned instead) or the gateway is full (`None`).
    pub fn add(&self, name: &str, make: impl FnOnce(u16) -> Member) -> Option<(Arc<Member>, bool)> {
        let mut list = self.list.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(m) = list.iter().find(|m| m.name == name) {
            return Some((Arc::clone(m), false));
        }
        if list.len() >= crate::config::MAX_MEMBERS {
            return None;
        }
        let index = u16::try_from(list.len() + 1).ok()?;
        let m = Arc::new(make(index));
        list.push(Arc::clone(&m));
        Some((m, true))
    }
}
