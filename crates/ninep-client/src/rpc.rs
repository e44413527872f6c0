//! Calls over one connection: tags, the reader thread, and flushing a call.
//!
//! Many threads may call at once. Each call:
//!
//! 1. takes a free tag and registers a one-slot channel under it;
//! 2. encodes and sends its request under the sending lock;
//! 3. waits on its channel. The reader thread decodes every reply and hands it to the
//!    channel registered under its tag (removing the registration).
//!
//! When the connection fails, the reader marks it closed and drops every channel, so
//! each waiting call returns [`ClientError::Disconnected`].
//!
//! A read may name what to do with its data ([`Sink`]): the reader thread then hands
//! the reply's data to it straight from its receive buffer (no allocation, one copy
//! fewer) and gives the call an `Rread` with no data.
//!
//! A call can be abandoned with [`PendingCall::flush`]: it sends `Tflush(tag)` and
//! waits for `Rflush`. As the server sends a reply it already had before the `Rflush`,
//! and the reader hands out replies in order, the call's own reply — if any — is in its
//! channel by then, and the tag can be forgotten safely.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::error::ClientError;
use nf_link::Transport;
use nf_ninep::frame::{encode_frame, FrameDecoder, HEADER_SIZE};
use nf_ninep::message::*;
use nf_ninep::types::NOTAG;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the reader thread does with one read reply's data, in place of decoding it
/// into a new buffer.
pub(crate) type Sink = Box<dyn FnOnce(&[u8]) + Send>;

/// Offset of an `Rread`'s data: size[4] type[1] tag[2] count[4].
const RREAD_DATA: usize = HEADER_SIZE + 4;

struct Table {
    waiting: HashMap<u16, SyncSender<Rmessage>>,
    sinks: HashMap<u16, Sink>,
    next_tag: u16,
    closed: Option<String>,
}

/// One multiplexed connection.
pub(crate) struct Rpc {
    transport: Arc<dyn Transport>,
    msize: u32,
    send: Mutex<Vec<u8>>,
    table: Mutex<Table>,
}

impl Rpc {
    pub fn new(transport: Arc<dyn Transport>, msize: u32) -> Arc<Self> {
        Arc::new(Rpc {
            transport,
            msize,
            send: Mutex::new(Vec::new()),
            table: Mutex::new(Table {
                waiting: HashMap::new(),
                sinks: HashMap::new(),
                next_tag: 0,
                closed: None,
            }),
        })
    }

    pub fn msize(&self) -> u32 {
        self.msize
    }

    pub fn close(&self) {
        self.transport.close();
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
        let (tx, rx) = sync_channel(1);
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
            encode_frame(tag, msg, self.msize, &mut buf)
                .map_err(|source| ClientError::Encode { op, source })
                .and_then(|_| self.transport.send(&buf).map_err(ClientError::Io))
        };
        if let Err(e) = sent {
            self.forget(tag);
            return Err(e);
        }
        Ok(PendingCall {
            rpc: Arc::clone(self),
            tag,
            rx,
        })
    }

    /// The reader thread's loop: hands each reply to its waiting call.
    pub fn read_replies(&self) {
        let reason = self.read_loop();
        tracing::debug!(%reason, "9P client connection closed");
        let mut t = lock(&self.table);
        t.closed = Some(reason);
        t.waiting.clear();
        t.sinks.clear();
        drop(t);
        self.transport.close();
    }

    fn read_loop(&self) -> String {
        let decoder = FrameDecoder::new(self.msize);
        let mut buf = vec![0u8; (64 * 1024).min(self.msize as usize).max(HEADER_SIZE)];
        let mut filled = 0;
        loop {
            let mut start = 0;
            loop {
                if let Some(used) = self.sink_read(&buf[start..filled]) {
                    start += used;
                    continue;
                }
                match decoder.decode::<Rmessage>(&buf[start..filled]) {
                    Ok(Some((frame, used))) => {
                        start += used;
                        self.deliver(frame.tag, frame.body);
                    }
                    Ok(None) => break,
                    Err(e) => return format!("undecodable reply: {e}"),
                }
            }
            buf.copy_within(start..filled, 0);
            filled -= start;
            if filled == buf.len() {
                let grown = (buf.len() * 2).min(self.msize as usize);
                buf.resize(grown.max(buf.len() + 1), 0);
            }
            match self.transport.recv(&mut buf[filled..]) {
                Ok(0) => return String::from("the server closed the connection"),
                Ok(n) => filled += n,
                Err(e) => return format!("receive failed: {e}"),
            }
        }
    }

    fn deliver(&self, tag: u16, msg: Rmessage) {
        let mut t = lock(&self.table);
        // A read answered otherwise than with data it could sink (an error): its sink
        // goes with the call, before the tag can be taken again.
        t.sinks.remove(&tag);
        match t.waiting.remove(&tag) {
            Some(tx) => {
                let _ = tx.send(msg);
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
            let _ = tx.send(Rmessage::Rread(Rread {
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
    rx: Receiver<Rmessage>,
}

impl PendingCall {
    /// The request's tag.
    pub fn tag(&self) -> u16 {
        self.tag
    }

    /// Waits for the reply (an `Rlerror` is returned as a reply, not an error).
    pub fn wait(self) -> Result<Rmessage, ClientError> {
        self.rx.recv().map_err(|_| ClientError::Disconnected {
            reason: self.rpc.closed_reason(),
        })
    }

    /// Waits up to `timeout`; `Ok(None)` if no reply came in time.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<Option<Rmessage>, ClientError> {
        match self.rx.recv_timeout(timeout) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(ClientError::Disconnected {
                reason: self.rpc.closed_reason(),
            }),
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
        let original = self.rx.try_recv().ok();
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
