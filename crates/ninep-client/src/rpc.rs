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
//! A call can be abandoned with [`PendingCall::flush`]: it sends `Tflush(tag)` and
//! waits for `Rflush`. As the server sends a reply it already had before the `Rflush`,
//! and the reader hands out replies in order, the call's own reply — if any — is in its
//! channel by then, and the tag can be forgotten safely.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::error::ClientError;
use nf_ninep::frame::{encode_frame, FrameDecoder, HEADER_SIZE};
use nf_ninep::message::*;
use nf_ninep::transport::Transport;
use nf_ninep::types::NOTAG;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Table {
    waiting: HashMap<u16, SyncSender<Rmessage>>,
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
            lock(&self.table).waiting.remove(&tag);
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
        match lock(&self.table).waiting.remove(&tag) {
            Some(tx) => {
                let _ = tx.send(msg);
            }
            None => tracing::debug!(tag, "9P reply for a tag nobody waits on (flushed?)"),
        }
    }

    fn forget(&self, tag: u16) {
        lock(&self.table).waiting.remove(&tag);
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
