//! Calls over one connection: tags, the reader thread, and flushing a call.
//!
//! Many threads may call at once. Each call:
//!
//! 1. takes a free tag and registers a reply slot (`reply.rs`) under it;
//! 2. encodes and sends its request under the sending lock;
//! 3. waits for its reply. Whoever receives (below) decodes every reply and hands it to
//!    the slot registered under its tag (removing the registration).
//!
//! Receiving: where the transport can say when it is readable
//! ([`Transport::can_wait_readable`]), a waiting call that finds nobody receiving
//! receives itself — every reply that comes, until its own — so the common case of one
//! call at a time on a connection costs no thread hand-off (a scheduler wake-up per
//! reply: a third of the gateway's per request). The reader thread receives for the
//! others: it sleeps while no call waits or while a caller receives, and is woken by
//! a call that waits on its slot, by a receiving caller that leaves with other
//! calls still waiting, or by a read with a sink as it starts (pipelined reads: their
//! data should land while the caller computes, as before). It also looks every [`IDLE_CHECK`] whether an idle connection
//! was closed by the peer. Without that transport support the reader thread receives
//! everything, as it always did. One thread receives at a time (the `recv` lock).
//!
//! When the connection fails, whoever receives marks it closed and drops every
//! slot, so each waiting call returns [`ClientError::Disconnected`].
//!
//! A read may name what to do with its data ([`Sink`]): whoever receives then hands
//! the reply's data to it straight from its receive buffer (no allocation, one copy
//! fewer) and gives the call an `Rread` with no data.
//!
//! A call can be abandoned with [`PendingCall::flush`]: it sends `Tflush(tag)` and
//! waits for `Rflush`. As the server sends a reply it already had before the `Rflush`,
//! and replies are handed out in the order received, the call's own reply — if any — is in its
//! slot by then, and the tag can be forgotten safely.
//!
//! The locks come from `sync.rs`, so `loom_tests.rs` model-checks this handoff (callers
//! receiving, the reader thread, failure and close) over a model byte pipe.

use std::collections::HashMap;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, PoisonError, TryLockError};
use std::time::{Duration, Instant};

use crate::error::ClientError;
use crate::reply::{reply_slot, ReplyRx, ReplyTx};
use crate::sync::{lock, Condvar, Mutex};
use nf_link::Transport;
use nf_ninep::frame::{encode_frame_parts, FrameDecoder, HEADER_SIZE};
use nf_ninep::message::*;
use nf_ninep::types::NOTAG;

/// What the receiving thread does with one read reply's data, in place of decoding it
/// into a new buffer.
pub(crate) type Sink = Box<dyn FnOnce(&[u8]) + Send>;

/// Offset of an `Rread`'s data: size[4] type[1] tag[2] count[4].
const RREAD_DATA: usize = HEADER_SIZE + 4;

/// How often a sleeping reader thread looks whether its idle connection was closed by
/// the peer (then [`Rpc::is_closed`] turns true within this much).
const IDLE_CHECK: Duration = Duration::from_millis(100);

struct Table {
    waiting: HashMap<u16, ReplyTx>,
    sinks: HashMap<u16, Sink>,
    next_tag: u16,
    closed: Option<String>,
    /// A waiting call receives for itself now.
    caller_receives: bool,
    /// The reader thread sleeps on `wake`.
    reader_asleep: bool,
    /// [`Rpc::close`] was called: the reader thread receives (and sees the end) at once.
    closing: bool,
}

/// Received bytes not yet decoded: `buf[..filled]` (the receiving thread's).
struct Received {
    buf: Vec<u8>,
    filled: usize,
}

/// One multiplexed connection.
pub(crate) struct Rpc {
    transport: Arc<dyn Transport>,
    msize: u32,
    send: Mutex<Vec<u8>>,
    table: Mutex<Table>,
    /// The receiving side; whoever holds it receives.
    recv: Mutex<Received>,
    /// Wakes the sleeping reader thread (with `table`).
    wake: Condvar,
    /// [`Transport::can_wait_readable`]: callers may receive themselves.
    callers_receive: bool,
}

impl Rpc {
    pub fn new(transport: Arc<dyn Transport>, msize: u32) -> Arc<Self> {
        let callers_receive = transport.can_wait_readable();
        Arc::new(Rpc {
            transport,
            msize,
            send: Mutex::new(Vec::new()),
            table: Mutex::new(Table {
                waiting: HashMap::new(),
                sinks: HashMap::new(),
                next_tag: 0,
                closed: None,
                caller_receives: false,
                reader_asleep: false,
                closing: false,
            }),
            recv: Mutex::new(Received {
                buf: vec![0u8; (64 * 1024).min(msize as usize).max(HEADER_SIZE)],
                filled: 0,
            }),
            wake: Condvar::new(),
            callers_receive,
        })
    }

    pub fn msize(&self) -> u32 {
        self.msize
    }

    pub fn close(&self) {
        self.transport.close();
        lock(&self.table).closing = true;
        self.wake.notify_all();
    }

    pub fn is_closed(&self) -> bool {
        lock(&self.table).closed.is_some()
    }

    /// Sends `msg` and returns the call to wait on.
    pub fn start(
        self: &Arc<Self>,
        op: &'static str,
        msg: &Tmessage,
    ) -> Result<PendingCall, ClientError> {
        self.start_with(op, msg, None)
    }

    /// Sends `msg` and returns the call to wait on; a read's data goes to `sink`.
    pub fn start_with(
        self: &Arc<Self>,
        op: &'static str,
        msg: &Tmessage,
        sink: Option<Sink>,
    ) -> Result<PendingCall, ClientError> {
        let (tx, rx) = reply_slot();
        let sinks = sink.is_some();
        let tag = {
            let mut t = lock(&self.table);
            if let Some(reason) = &t.closed {
                return Err(ClientError::Disconnected {
                    reason: reason.clone(),
                });
            }
            let mut tag = None;
            for _ in 0..=u16::MAX {
                let candidate = t.next_tag;
                t.next_tag = t.next_tag.wrapping_add(1);
                if candidate != NOTAG && !t.waiting.contains_key(&candidate) {
                    tag = Some(candidate);
                    break;
                }
            }
            let tag = tag.ok_or(ClientError::NoFreeTag)?;
            t.waiting.insert(tag, tx);
            if let Some(sink) = sink {
                t.sinks.insert(tag, sink);
            }
            tag
        };
        let sent = {
            let mut buf = lock(&self.send);
            buf.clear();
            // A write's data goes from the caller's buffer behind the frame's head,
            // not copied into the send buffer first.
            match encode_frame_parts(tag, msg, self.msize, &mut buf) {
                Ok(data) => self
                    .transport
                    .send_parts(&[&buf, data])
                    .map_err(ClientError::Io),
                Err(e) => Err(ClientError::Encode { op, source: e }),
            }
        };
        if let Err(e) = sent {
            self.forget(tag);
            return Err(e);
        }
        if sinks {
            // Pipelined reads: their data lands while the caller does other work, so
            // the reader thread receives them now, not when the caller comes to wait.
            self.wake_reader();
        }
        Ok(PendingCall {
            rpc: Arc::clone(self),
            tag,
            rx,
        })
    }

    /// The reader thread's loop: hands each reply to its waiting call (module docs:
    /// it sleeps while nothing is to be received or a caller receives).
    pub fn read_replies(&self) {
        let reason = loop {
            let Some(readable) = self.reader_has_work() else {
                break None;
            };
            let mut r = lock(&self.recv);
            // A caller may have received meanwhile what was waited for, or what the
            // idle check saw arrive: receiving then would block with the lock held,
            // and the next calls could not receive for themselves.
            if self.callers_receive
                && !self.reader_should_receive(&lock(&self.table))
                && !(readable && self.readable_now())
            {
                continue;
            }
            if let Err(reason) = self.receive(&mut r) {
                break Some(reason);
            }
        };
        if let Some(reason) = reason {
            self.fail(reason);
        }
    }

    /// Whether the reader thread should receive now: a call waits and no caller
    /// receives, or the connection is closing.
    fn reader_should_receive(&self, t: &Table) -> bool {
        t.closing || (!t.waiting.is_empty() && !t.caller_receives)
    }

    /// Sleeps the reader thread until it should receive, or the connection failed
    /// (`None`). While idle it looks every [`IDLE_CHECK`] whether the peer closed the
    /// connection (or sent anything): `Some(true)`, receive whatever.
    fn reader_has_work(&self) -> Option<bool> {
        if !self.callers_receive {
            return lock(&self.table).closed.is_none().then_some(false);
        }
        let mut t = lock(&self.table);
        loop {
            if t.closed.is_some() {
                return None;
            }
            if self.reader_should_receive(&t) {
                return Some(false);
            }
            t.reader_asleep = true;
            let (guard, waited) = self
                .wake
                .wait_timeout(t, IDLE_CHECK)
                .unwrap_or_else(PoisonError::into_inner);
            t = guard;
            t.reader_asleep = false;
            if waited.timed_out() && !t.caller_receives {
                drop(t);
                if self.readable_now() {
                    return Some(true);
                }
                t = lock(&self.table);
            }
        }
    }

    /// Whether bytes (or the end) wait to be received now, without waiting; an error
    /// counts as readable, so that receiving reports it.
    fn readable_now(&self) -> bool {
        !matches!(
            self.transport.wait_readable(Some(Duration::ZERO)),
            Ok(false)
        )
    }

    /// Wakes the reader thread if it sleeps and calls wait that no caller receives.
    fn wake_reader(&self) {
        let t = lock(&self.table);
        if t.reader_asleep && self.reader_should_receive(&t) {
            self.wake.notify_one();
        }
    }

    /// Receives once into `r` and hands on every whole reply; the reason the
    /// connection ends, if it does.
    fn receive(&self, r: &mut Received) -> Result<(), String> {
        if r.filled == r.buf.len() {
            let grown = (r.buf.len() * 2).min(self.msize as usize);
            r.buf.resize(grown.max(r.buf.len() + 1), 0);
        }
        let filled = r.filled;
        match self.transport.recv(&mut r.buf[filled..]) {
            Ok(0) => return Err(String::from("the server closed the connection")),
            Ok(n) => r.filled += n,
            Err(e) => return Err(format!("receive failed: {e}")),
        }
        let decoder = FrameDecoder::new(self.msize);
        let mut start = 0;
        loop {
            if let Some(used) = self.sink_read(&r.buf[start..r.filled]) {
                start += used;
                continue;
            }
            match decoder.decode::<Rmessage>(&r.buf[start..r.filled]) {
                Ok(Some((frame, used))) => {
                    start += used;
                    self.deliver(frame.tag, frame.body);
                }
                Ok(None) => break,
                Err(e) => return Err(format!("undecodable reply: {e}")),
            }
        }
        r.buf.copy_within(start..r.filled, 0);
        r.filled -= start;
        Ok(())
    }

    /// The connection ended (`reason`): every call waiting and every later one fails.
    fn fail(&self, reason: String) {
        tracing::debug!(%reason, "9P client connection closed");
        let mut t = lock(&self.table);
        if t.closed.is_none() {
            t.closed = Some(reason);
        }
        // Hang up in tag order: the map's own order is random, and the loom models
        // replay each schedule exactly.
        let mut gone: Vec<_> = t.waiting.drain().collect();
        gone.sort_unstable_by_key(|&(tag, _)| tag);
        drop(gone);
        t.sinks.clear();
        drop(t);
        self.wake.notify_all();
        self.transport.close();
    }

    fn deliver(&self, tag: u16, msg: Rmessage) {
        let mut t = lock(&self.table);
        // A read answered otherwise than with data it could sink (an error): its sink
        // goes with the call, before the tag can be taken again.
        t.sinks.remove(&tag);
        match t.waiting.remove(&tag) {
            Some(tx) => {
                tx.send(msg);
            }
            None => tracing::debug!(tag, "9P reply for a tag nobody waits on (flushed?)"),
        }
    }

    /// If `b` starts with a whole, well-formed `Rread` for a call with a sink: copies
    /// its data there, hands the call an empty `Rread`, and returns the frame's
    /// length. Anything else is left to the decoder (which reports malformed frames).
    fn sink_read(&self, b: &[u8]) -> Option<usize> {
        let head = b.get(..RREAD_DATA)?;
        let size = u32::from_le_bytes(head[..4].try_into().ok()?) as usize;
        let count = u32::from_le_bytes(head[HEADER_SIZE..].try_into().ok()?) as usize;
        if head[4] != MsgType::Rread as u8
            || size > b.len()
            || size > self.msize as usize
            || RREAD_DATA.checked_add(count) != Some(size)
        {
            return None;
        }
        let tag = u16::from_le_bytes([head[5], head[6]]);
        let (sink, tx) = {
            let mut t = lock(&self.table);
            let sink = t.sinks.remove(&tag)?;
            (sink, t.waiting.remove(&tag))
        };
        sink(&b[RREAD_DATA..size]);
        if let Some(tx) = tx {
            tx.send(Rmessage::Rread(Rread {
                data: Vec::new().into(),
            }));
        }
        Some(size)
    }

    /// Removes the sink of `tag`, if it is still registered (a reply arriving later is
    /// decoded as usual, and dropped).
    pub fn unsink(&self, tag: u16) {
        lock(&self.table).sinks.remove(&tag);
    }

    fn forget(&self, tag: u16) {
        let mut t = lock(&self.table);
        t.waiting.remove(&tag);
        t.sinks.remove(&tag);
    }

    fn closed_reason(&self) -> String {
        lock(&self.table)
            .closed
            .clone()
            .unwrap_or_else(|| String::from("the connection closed"))
    }
}

/// A request sent and not answered yet.
pub struct PendingCall {
    rpc: Arc<Rpc>,
    tag: u16,
    rx: ReplyRx,
}

impl PendingCall {
    /// The request's tag.
    pub fn tag(&self) -> u16 {
        self.tag
    }

    /// Waits for the reply (an `Rlerror` is returned as a reply, not an error).
    pub fn wait(self) -> Result<Rmessage, ClientError> {
        self.wait_for(None)?
            .ok_or_else(|| ClientError::Disconnected {
                reason: self.rpc.closed_reason(),
            })
    }

    /// Waits up to `timeout`; `Ok(None)` if no reply came in time.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<Option<Rmessage>, ClientError> {
        self.wait_for(Some(timeout))
    }

    /// Waits until the reply or `timeout` (`None`: as long as it takes): receiving
    /// itself if nobody else does, else on its slot (module docs).
    fn wait_for(&self, timeout: Option<Duration>) -> Result<Option<Rmessage>, ClientError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        if let Some(reply) = self.receive_own(deadline)? {
            return Ok(Some(reply));
        }
        self.rpc.wake_reader();
        let disconnected = || ClientError::Disconnected {
            reason: self.rpc.closed_reason(),
        };
        match self.rx.recv_until(deadline) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(disconnected()),
        }
    }

    /// Receives for itself until its reply comes or `deadline` passes, if the
    /// transport allows it and nobody else receives now; `Ok(None)` otherwise (the
    /// reply may still come in the slot).
    fn receive_own(&self, deadline: Option<Instant>) -> Result<Option<Rmessage>, ClientError> {
        let rpc = &*self.rpc;
        if !rpc.callers_receive {
            return Ok(None);
        }
        let mut r = match rpc.recv.try_lock() {
            Ok(r) => r,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(None),
        };
        {
            let mut t = lock(&rpc.table);
            if t.closed.is_some() || t.closing {
                return Ok(None);
            }
            t.caller_receives = true;
        }
        let outcome = loop {
            if let Some(reply) = self.rx.try_recv() {
                break Ok(Some(reply));
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            match rpc.transport.wait_readable(left) {
                Ok(false) => break Ok(None),
                Ok(true) => {}
                Err(e) => break Err(format!("receive failed: {e}")),
            }
            if let Err(reason) = rpc.receive(&mut r) {
                break Err(reason);
            }
        };
        lock(&rpc.table).caller_receives = false;
        drop(r);
        match outcome {
            Ok(reply) => {
                // Other calls (or this one, out of time) wait: the reader receives.
                rpc.wake_reader();
                Ok(reply)
            }
            Err(reason) => {
                rpc.fail(reason);
                Err(ClientError::Disconnected {
                    reason: rpc.closed_reason(),
                })
            }
        }
    }

    /// Abandons the call: sends `Tflush` and waits for `Rflush`. Returns the call's
    /// reply if the server answered it before the flush (it must then be honoured).
    pub fn flush(self) -> Result<Option<Rmessage>, ClientError> {
        self.flush_within(None)
    }

    /// [`PendingCall::flush`], waiting at most `limit` for `Rflush` (`None`: as long as
    /// it takes). A server that answers neither the call nor the flush in time has
    /// stopped: [`ClientError::TimedOut`], and the connection is of no further use.
    pub fn flush_within(self, limit: Option<Duration>) -> Result<Option<Rmessage>, ClientError> {
        let flush = self
            .rpc
            .start("flush", &Tflush { oldtag: self.tag }.into())?;
        let reply = match limit {
            None => flush.wait()?,
            Some(after) => flush.wait_timeout(after)?.ok_or(ClientError::TimedOut {
                what: "flush",
                after,
            })?,
        };
        let original = self.rx.try_recv();
        self.rpc.forget(self.tag);
        match reply {
            Rmessage::Rflush(_) => Ok(original),
            Rmessage::Rlerror(e) => Err(ClientError::Remote {
                op: "flush",
                path: String::new(),
                errno: e.ecode,
            }),
            other => Err(ClientError::UnexpectedReply {
                op: "flush",
                got: other.msg_type().name(),
            }),
        }
    }
}

impl std::fmt::Debug for PendingCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingCall")
            .field("tag", &self.tag)
            .finish()
    }
}
