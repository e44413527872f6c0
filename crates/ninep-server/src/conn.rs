//! One connection: the reader loop, `Tversion` and `Tflush`, and sending replies.
//!
//! The reader thread owns the receiving side. It splits frames, decodes them, answers
//! `Tversion` and `Tflush` itself, checks every other request ([`check`]) and hands it
//! to a worker. Workers call the tree ([`apply`]), record the outcome ([`record`]) and
//! send the reply ([`Conn::finish`]). The steps and the ordering rules are written out
//! in the [server module documentation](crate::server).
//!
//! Locks: `state` (fid table, pending table, msize) and then `send` (the transport's
//! writing side), never the other way round. A reply that must not overtake another
//! (a reply before its `Rflush`) takes `send` before letting go of `state`.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use crate::apply::{apply, Done};
use crate::budget::{Account, Charge};
use crate::cancel::lock;
use crate::check::{check, Job, E2BIG};
use crate::error::FsError;
use crate::fid::FidTable;
use crate::handler::{Ctx, Filesystem};
use crate::pending::{FlushOutcome, PendingTable};
use crate::reply::record;
use crate::slots::{Owner, Slot};
use crate::srv::Shared;
use crate::tally::{Tallies, Tally};
use nf_link::Transport;
use nf_ninep::errno::{EAGAIN, EIO, EMFILE, ENOMEM, EPROTO};
use nf_ninep::frame::{encode_frame, encode_frame_parts, FrameDecoder, RawFrame, HEADER_SIZE};
use nf_ninep::message::*;
use nf_ninep::types::NOTAG;
use nf_ninep::version::{negotiate, VERSION};
use nf_ninep::DecodeError;

/// Receive buffer to start with; it grows up to msize for large frames.
const INITIAL_BUFFER: usize = 64 * 1024;

/// The sending side's scratch buffer and what it is charged (`budget` rule 2).
struct SendBuf {
    buf: Vec<u8>,
    charge: Charge,
}

/// Who a connection's peer is, as far as its transport knows: what its requests'
/// [`Ctx`] say, and whose slots and memory it counts against ([`Owner::of`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Identity {
    /// Authenticated by name (TLS).
    User(Arc<str>),
    /// A local peer's uid, from the kernel.
    Uid(u32),
    /// Nobody the transport can name.
    Unknown,
}

impl Identity {
    /// What `transport` knows of its peer (asked once: a loopback tcp peer costs a
    /// netlink round trip).
    pub fn of(transport: &dyn Transport) -> Identity {
        match (transport.authenticated_user(), transport.peer_uid()) {
            (Some(user), _) => Identity::User(Arc::from(user)),
            (None, Some(uid)) => Identity::Uid(uid),
            (None, None) => Identity::Unknown,
        }
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::User(user) => write!(f, "user {user:?}"),
            Identity::Uid(uid) => write!(f, "uid {uid}"),
            Identity::Unknown => f.write_str("unidentified peers"),
        }
    }
}

struct ConnState<S> {
    /// Negotiated msize; `None` until a `Tversion` succeeds.
    msize: Option<u32>,
    fids: FidTable<S>,
    pending: PendingTable,
}

/// One client connection.
pub(crate) struct Conn<F: Filesystem> {
    id: u64,
    shared: Arc<Shared<F>>,
    transport: Arc<dyn Transport>,
    peer: String,
    /// Who the transport says the peer is, given to every request's [`Ctx`].
    who: Identity,
    /// Whose slots and memory the connection counts against (`slots` rule 1).
    owner: Owner,
    /// The memory budgets it charges (`budget`).
    account: Arc<Account>,
    /// The descriptor budgets its requests charge (`budget`, `nofile`).
    fds: Arc<Account>,
    state: Mutex<ConnState<F::Fid>>,
    /// Signalled when the last request in flight finishes.
    idle: Condvar,
    /// The sending side, with a scratch buffer for encoding.
    send: Mutex<SendBuf>,
    /// Frames received so far, and whether a frame is partly received: what the
    /// deadline watcher reads ([`crate::watch`]).
    frames: AtomicU64,
    partial: AtomicBool,
    /// The server's coarse clock at the last frame (or at admission): for admission.
    active: AtomicU64,
}

impl<F: Filesystem> Conn<F> {
    pub fn new(
        id: u64,
        shared: Arc<Shared<F>>,
        transport: Arc<dyn Transport>,
        who: Identity,
        owner: Owner,
        account: Arc<Account>,
        fds: Arc<Account>,
    ) -> Arc<Self> {
        let peer = transport.peer();
        let max_fids = shared.config.max_fids;
        let now = shared.clock.coarse();
        Arc::new(Conn {
            id,
            shared,
            transport,
            peer,
            who,
            owner,
            state: Mutex::new(ConnState {
                msize: None,
                fids: FidTable::new(max_fids),
                pending: PendingTable::default(),
            }),
            idle: Condvar::new(),
            send: Mutex::new(SendBuf {
                buf: Vec::new(),
                charge: account.force(0),
            }),
            account,
            fds,
            frames: AtomicU64::new(0),
            partial: AtomicBool::new(false),
            active: AtomicU64::new(now),
        })
    }

    /// Whose slots and memory the connection counts against.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The memory budgets the connection charges.
    pub fn account(&self) -> &Arc<Account> {
        &self.account
    }

    /// The descriptor budgets the connection's requests charge.
    pub fn fds(&self) -> &Arc<Account> {
        &self.fds
    }

    /// Logs `what` happened on this connection through the tally `kind` picks:
    /// at most a line per 10 s of each kind, for all connections together (`tally`).
    pub fn warn(&self, kind: impl FnOnce(&Tallies) -> &Tally, what: impl FnOnce() -> String) {
        kind(&self.shared.tallies).hit(|| {
            format!(
                "9P connection {} ({:?}, {}): {}",
                self.id,
                self.peer,
                self.owner,
                what()
            )
        });
    }

    /// What admission needs to know of this connection, at coarse time `now`.
    pub fn slot(&self, now: u64) -> Slot {
        let (fids, in_flight) = self.counts();
        let since = now.saturating_sub(self.active.load(Ordering::Relaxed));
        Slot {
            id: self.id,
            owner: self.owner.clone(),
            fids,
            in_flight,
            silent: Duration::from_millis(since),
        }
    }

    /// The peer, as logs name it.
    pub fn peer(&self) -> &str {
        &self.peer
    }

    /// Frames received so far, and whether one is partly received now.
    pub fn progress(&self) -> (u64, bool) {
        (
            self.frames.load(Ordering::Relaxed),
            self.partial.load(Ordering::Relaxed),
        )
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// Fids held and requests in flight.
    pub fn counts(&self) -> (usize, usize) {
        let st = lock(&self.state);
        (st.fids.len(), st.pending.len())
    }

    /// Closes the transport; the reader loop then ends and releases everything.
    pub fn close(&self) {
        self.transport.close();
    }

    /// Serves the connection until it closes, then releases its fids.
    pub fn run(self: &Arc<Self>) {
        let reason = self.read_loop();
        tracing::debug!(conn = self.id, peer = ?self.peer, %reason, "9P connection ends");
        self.reset();
        self.transport.close();
    }

    fn read_loop(self: &Arc<Self>) -> String {
        let max = self.shared.config.max_msize.max(HEADER_SIZE as u32) as usize;
        let mut buf = vec![0u8; INITIAL_BUFFER.min(max)];
        let mut charged = self.account.force(buf.len());
        let mut filled = 0;
        loop {
            let mut start = 0;
            loop {
                let decoder = FrameDecoder::new(self.frame_limit());
                match decoder.split(&buf[start..filled]) {
                    Ok(Some(raw)) => {
                        start += raw.size();
                        self.frames.fetch_add(1, Ordering::Relaxed);
                        self.active
                            .store(self.shared.clock.coarse(), Ordering::Relaxed);
                        self.handle_raw(raw);
                    }
                    Ok(None) => break,
                    Err(e) => {
                        self.warn(|t| &t.frames, || format!("closed: unreadable frame: {e}"));
                        return format!("unreadable frame: {e}");
                    }
                }
            }
            buf.copy_within(start..filled, 0);
            filled -= start;
            self.partial.store(filled > 0, Ordering::Relaxed);
            if filled == buf.len() {
                buf.resize((buf.len() * 2).clamp(HEADER_SIZE, max), 0);
                charged.set_forced(buf.len());
            }
            match self.transport.recv(&mut buf[filled..]) {
                Ok(0) => return String::from("peer closed the connection"),
                Ok(n) => filled += n,
                Err(e) => return format!("receive failed: {e}"),
            }
        }
    }

    /// Largest frame accepted now: the negotiated msize, or the server's maximum.
    fn frame_limit(&self) -> u32 {
        lock(&self.state)
            .msize
            .unwrap_or(self.shared.config.max_msize)
    }

    fn handle_raw(self: &Arc<Self>, raw: RawFrame<'_>) {
        match raw.decode::<Tmessage>() {
            Ok(frame) => match frame.body {
                Tmessage::Tversion(req) => self.version(frame.tag, req),
                Tmessage::Tflush(req) => self.flush(frame.tag, req.oldtag),
                other => self.request(frame.tag, other, raw.size()),
            },
            Err(e) => {
                let ecode = match e {
                    DecodeError::TooManyElements { .. } => E2BIG,
                    _ => EPROTO,
                };
                self.warn(
                    |t| &t.protocol,
                    || format!("undecodable request (tag {}): {e}", raw.tag),
                );
                self.send_now(raw.tag, Rlerror::new(ecode).into());
            }
        }
    }

    /// `Tversion`: reset the session, then negotiate. version(5) says the tag *should*
    /// be `NOTAG`; clients that use an ordinary tag (Go's hugelgupf/p9) are answered
    /// under it.
    fn version(&self, tag: u16, req: Tversion) {
        if tag != NOTAG {
            tracing::debug!(conn = self.id, tag, "Tversion with a tag other than NOTAG");
        }
        self.reset();
        let reply = negotiate(&req, self.shared.config.max_msize);
        if reply.version == VERSION {
            lock(&self.state).msize = Some(reply.msize);
        } else {
            // The version string is the client's: quoted and escaped (`tally` rule 3).
            self.warn(
                |t| &t.versions,
                || {
                    format!(
                        "refused 9P version {:?} (msize {}); this server speaks {VERSION}",
                        req.version, req.msize
                    )
                },
            );
        }
        self.send_now(tag, reply.into());
    }

    /// Aborts every request, waits for them, and clunks every fid.
    fn reset(&self) {
        let mut st = lock(&self.state);
        st.pending.abort_all();
        while !st.pending.is_empty() {
            let (guard, waited) = self
                .idle
                .wait_timeout(st, Duration::from_secs(5))
                .unwrap_or_else(PoisonError::into_inner);
            st = guard;
            if waited.timed_out() && !st.pending.is_empty() {
                tracing::warn!(
                    conn = self.id,
                    in_flight = st.pending.len(),
                    "still waiting for cancelled requests: a tree ignores its Cancel token"
                );
            }
        }
        let entries = st.fids.drain();
        st.msize = None;
        drop(st);
        let ctx = Ctx::background(self.shared.config.max_msize);
        for entry in entries {
            let _ = self.shared.fs.clunk(&ctx, &entry.state);
        }
    }

    /// `Tflush`: answer now, or once the target finishes (see [`PendingTable::flush`]).
    fn flush(&self, tag: u16, oldtag: u16) {
        let mut st = lock(&self.state);
        let Some(msize) = st.msize else {
            drop(st);
            self.send_now(tag, Rlerror::new(EPROTO).into());
            return;
        };
        if st.pending.in_use(tag) {
            drop(st);
            self.warn(
                |t| &t.protocol,
                || format!("Tflush reuses tag {tag}, in flight"),
            );
            self.send_now(tag, Rlerror::new(EPROTO).into());
            return;
        }
        if st.pending.flush(tag, oldtag) == FlushOutcome::AnswerNow {
            let mut out = lock(&self.send);
            drop(st);
            self.write(&mut out, tag, &Rflush.into(), msize);
        }
    }

    /// Any other request: charge it, check it, register it, and hand it to a worker.
    fn request(self: &Arc<Self>, tag: u16, msg: Tmessage, frame: usize) {
        let ty = msg.msg_type();
        let mut st = lock(&self.state);
        let limit = self.shared.config.max_in_flight;
        let refusal = if st.msize.is_none() {
            self.warn(
                |t| &t.protocol,
                || format!("{} before a successful Tversion", ty.name()),
            );
            Some(EPROTO)
        } else if st.pending.in_use(tag) {
            self.warn(
                |t| &t.protocol,
                || format!("{} with tag {tag}, already in flight", ty.name()),
            );
            Some(EPROTO)
        } else if st.pending.len() >= limit {
            self.warn(
                |t| &t.in_flight,
                || format!("refusing a request with EAGAIN: {limit} in flight (max_in_flight; nf serve --max-in-flight)"),
            );
            Some(EAGAIN)
        } else {
            None
        };
        if let Some(ecode) = refusal {
            drop(st);
            self.send_now(tag, Rlerror::new(ecode).into());
            return;
        }
        let msize = st.msize.unwrap_or(self.shared.config.max_msize);
        // Charged before the check reserves any fid, so a refusal undoes nothing.
        let Ok(charge) = self.account.charge(frame + reply_data(&msg, msize)) else {
            drop(st);
            self.send_now(tag, Rlerror::new(ENOMEM).into());
            return;
        };
        let job = match check(&mut st.fids, msize, msg) {
            Ok(job) => job,
            Err(e) => {
                drop(st);
                if e.ecode == EMFILE {
                    let limit = self.shared.config.max_fids;
                    self.warn(
                        |t| &t.fids,
                        || format!("refusing a request with EMFILE: {limit} fids held (max_fids; nf serve --max-fids)"),
                    );
                }
                self.send_now(tag, e.into());
                return;
            }
        };
        let cancel = st.pending.start(tag);
        drop(st);
        let ctx = Ctx::new(cancel.clone(), msize, self.id, tag)
            .with_memory(Arc::clone(&self.account))
            .with_fds(Arc::clone(&self.fds))
            .with_user(match &self.who {
                Identity::User(user) => Some(Arc::clone(user)),
                _ => None,
            })
            .with_peer_uid(match self.who {
                Identity::Uid(uid) => Some(uid),
                _ => None,
            });
        if self.shared.fs.runs_inline() {
            // Step 5 on this thread: no hand-off, unless the tree would have to wait.
            let done = self.apply(&ctx.inline(), &job);
            if !done.would_block() {
                return self.finish(&ctx, done, charge);
            }
        }
        let conn = Arc::clone(self);
        self.shared.pool.submit(
            self.owner.clone(),
            &cancel,
            Box::new(move || conn.work(ctx, job, charge)),
        );
    }

    /// Calls the tree; a panic becomes `EIO`, and so does an
    /// [`FsError::WouldBlock`](crate::FsError::WouldBlock) from a context that may block
    /// (a tree bug: there is nowhere else to run the request).
    fn apply(&self, ctx: &Ctx, job: &Job<F::Fid>) -> Done<F::Fid> {
        let fs = &*self.shared.fs;
        let done =
            panic::catch_unwind(AssertUnwindSafe(|| apply(fs, ctx, job))).unwrap_or_else(|_| {
                tracing::error!(
                    conn = self.id,
                    tag = ctx.tag(),
                    "a tree method panicked; answering EIO"
                );
                Done::Reply(Err(FsError::Errno(EIO)))
            });
        if ctx.may_block() && done.would_block() {
            tracing::error!(
                conn = self.id,
                tag = ctx.tag(),
                "a tree answered WouldBlock where it may block; answering EIO"
            );
            return Done::Reply(Err(FsError::Errno(EIO)));
        }
        done
    }

    /// Worker side: call the tree, then finish.
    fn work(&self, ctx: Ctx, job: Job<F::Fid>, charge: Charge) {
        let done = self.apply(&ctx, &job);
        self.finish(&ctx, done, charge);
    }

    /// Records the outcome, then sends the reply and any `Rflush`es queued on it; the
    /// request's memory `charge` is given back once the reply is out.
    fn finish(&self, ctx: &Ctx, done: Done<F::Fid>, charge: Charge) {
        let tag = ctx.tag();
        let mut released = Vec::new();
        let mut st = lock(&self.state);
        let result = record(&mut st.fids, done, &mut released);
        let pending = st.pending.finish(tag);
        let msize = st.msize.unwrap_or(ctx.msize());
        if st.pending.is_empty() {
            self.idle.notify_all();
        }
        let mut out = lock(&self.send);
        drop(st);
        // Released states go before the reply: once a client has its Rclunk (or
        // Rremove), what the fid held is gone — a pipe has one reader fewer.
        let release = Ctx::background(msize);
        for entry in released {
            let _ = self.shared.fs.clunk(&release, &entry.state);
        }
        if let Some(p) = pending {
            // A flushed request is answered only if it did its work (flush(5): the
            // client must honour a reply that comes before the Rflush).
            if !p.aborted && (p.flushers.is_empty() || result.is_ok()) {
                let reply = result.unwrap_or_else(|e| e.to_wire().into());
                self.write(&mut out, tag, &reply, msize);
            }
            for flush in p.flushers {
                self.write(&mut out, flush, &Rflush.into(), msize);
            }
        }
        drop(out);
        drop(charge);
    }

    /// Sends a reply that no flush can race with (checks failed, version, early errors).
    fn send_now(&self, tag: u16, msg: Rmessage) {
        let msize = self.frame_limit();
        let mut out = lock(&self.send);
        self.write(&mut out, tag, &msg, msize);
    }

    fn write(&self, out: &mut SendBuf, tag: u16, msg: &Rmessage, msize: u32) {
        let buf = &mut out.buf;
        buf.clear();
        // A read's data is sent from where the tree put it, behind the frame's head:
        // not copied into the send buffer first (a copy per reply of every byte read;
        // through a gateway, the second one per hop).
        let sent = match encode_frame_parts(tag, msg, msize, buf) {
            Ok(data) => self.transport.send_parts(&[buf, data]),
            Err(e) => {
                tracing::error!(conn = self.id, tag, error = %e, "reply cannot be encoded; sending EIO instead");
                buf.clear();
                let fallback = Rmessage::from(Rlerror::new(EIO));
                if encode_frame(tag, &fallback, msize, buf).is_err() {
                    return;
                }
                self.transport.send(buf)
            }
        };
        if let Err(e) = sent {
            tracing::debug!(conn = self.id, error = %e, "send failed; closing the connection");
            self.transport.close();
        }
        if buf.capacity() > 4 * INITIAL_BUFFER && buf.len() < INITIAL_BUFFER {
            buf.shrink_to(INITIAL_BUFFER);
        }
        out.charge.set_forced(buf.capacity());
    }
}

/// Bytes of reply data a request may bring (`budget` rule 2): a read's or readdir's
/// count as the check will cut it; nothing for the others, whose replies are small.
fn reply_data(msg: &Tmessage, msize: u32) -> usize {
    let count = match msg {
        Tmessage::Tread(r) => r.count,
        Tmessage::Treaddir(r) => r.count,
        _ => return 0,
    };
    nf_ninep::frame::io_count_limit(msize, count) as usize
}
