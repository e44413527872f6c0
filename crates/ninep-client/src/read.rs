//! Reading: one message at an offset, a whole file in msize-sized chunks, or a range
//! with every message of it in flight at once ([`File::start_read_into`]).
//!
//! Pipelined reads overlap I/O with computation, in the client's own API: the caller
//! starts the reads of the next block, computes on the current one while the
//! connection's reader thread copies the replies into place, and then waits. One call
//! per message, each with its own tag, so the server may answer them in any order.

use std::io;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use bytemuck::Pod;

use crate::error::ClientError;
use crate::open::File;
use crate::rpc::PendingCall;
use nf_ninep::message::*;

impl File {
    /// One `Tread` of at most `count` bytes (capped at [`File::chunk`]) at `offset`;
    /// empty at end of file.
    pub fn read_chunk(&self, offset: u64, count: u32) -> Result<Vec<u8>, ClientError> {
        let msg = Tread {
            fid: self.number(),
            offset,
            count: count.min(self.chunk()),
        };
        self.client()
            .request("read", msg, |r| match r {
                Rmessage::Rread(r) => Some(r.data.0),
                _ => None,
            })
            .map_err(|e| e.at(self.path()))
    }

    /// Reads into `buf` at `offset` with one message; returns the bytes read.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> Result<usize, ClientError> {
        let count = u32::try_from(buf.len()).unwrap_or(u32::MAX);
        let data = self.read_chunk(offset, count)?;
        buf[..data.len()].copy_from_slice(&data);
        Ok(data.len())
    }

    /// Reads from the current position to end of file.
    pub fn read_to_end(&mut self) -> Result<Vec<u8>, ClientError> {
        let mut out = Vec::new();
        loop {
            let data = self.read_chunk(self.position(), self.chunk())?;
            if data.is_empty() {
                return Ok(out);
            }
            self.advance(data.len() as u64);
            out.extend_from_slice(&data);
        }
    }
}

/// Reads of one byte range into a shared buffer, sent and not all answered yet
/// ([`File::start_read_into`]).
#[must_use = "the reads are only checked by wait"]
pub struct PendingReads<'f> {
    file: &'f File,
    /// Each message's call, with where its byte count will be and what it asked.
    calls: Vec<(PendingCall, Arc<AtomicUsize>, usize)>,
}

impl std::fmt::Debug for PendingReads<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingReads")
            .field("path", &self.file.path())
            .field("calls", &self.calls.len())
            .finish()
    }
}

/// Not a count: no reply yet.
const NO_REPLY: usize = usize::MAX;

impl File {
    /// Sends every `Tread` that reading `len` bytes from `offset` takes (one per
    /// [`File::chunk`]) and returns without waiting for any reply. The connection's
    /// reader thread copies each reply's data into its place in the first `len` bytes
    /// of `buf` as it arrives, straight from what it received.
    ///
    /// Fails at once if `buf` holds fewer than `len` bytes.
    pub fn start_read_into<T: Pod + Send>(
        &self,
        offset: u64,
        buf: &Arc<Mutex<Vec<T>>>,
        len: usize,
    ) -> Result<PendingReads<'_>, ClientError> {
        let room = std::mem::size_of_val(lock(buf).as_slice());
        if len > room {
            return Err(ClientError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a read of {len} bytes into a buffer of {room}"),
            )));
        }
        let chunk = self.chunk().max(1) as usize;
        let mut calls = Vec::with_capacity(len.div_ceil(chunk));
        let mut at = 0;
        while at < len {
            let asked = chunk.min(len - at);
            let msg = Tread {
                fid: self.number(),
                offset: offset + at as u64,
                count: asked as u32,
            };
            let got = Arc::new(AtomicUsize::new(NO_REPLY));
            let (dst, count) = (Arc::clone(buf), Arc::clone(&got));
            let sink = Box::new(move |data: &[u8]| {
                let n = data.len().min(asked);
                let mut v = lock(&dst);
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(v.as_mut_slice());
                if let Some(place) = bytes.get_mut(at..at + n) {
                    place.copy_from_slice(&data[..n]);
                }
                count.store(data.len(), Ordering::Release);
            });
            // On an error, the calls already sent are answered into `buf` and dropped.
            let call = self
                .client()
                .start_into(msg, sink)
                .map_err(|e| e.at(self.path()))?;
            calls.push((call, got, asked));
            at += asked;
        }
        Ok(PendingReads { file: self, calls })
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Dropped before [`PendingReads::wait`]: the replies still to come are decoded and
/// discarded instead of copied into the buffer, which the caller may reuse at once (a
/// reply the reader thread is copying at that moment still lands).
impl Drop for PendingReads<'_> {
    fn drop(&mut self) {
        let client = self.file.client();
        for (call, _, _) in &self.calls {
            client.unsink(call.tag());
        }
    }
}

impl PendingReads<'_> {
    /// The file read.
    pub fn path(&self) -> &str {
        self.file.path()
    }

    /// Waits for every reply. A reply shorter than asked (the file ended, or shrank)
    /// is [`ClientError::ShortRead`], with what did arrive in place; the remaining
    /// replies are still collected, so the connection stays usable.
    pub fn wait(mut self) -> Result<(), ClientError> {
        let client = self.file.client();
        let mut first_err = None;
        let mut at = 0u64;
        for (call, got, asked) in std::mem::take(&mut self.calls) {
            let reply = client.finish(
                "read",
                call,
                |r| match r {
                    Rmessage::Rread(r) => Some(r.data.0.len()),
                    _ => None,
                },
                client.reply_timeout(),
            );
            let err = match reply {
                Ok(_) => match got.load(Ordering::Acquire) {
                    n if n == asked => None,
                    NO_REPLY => Some(ClientError::ShortRead {
                        path: String::new(),
                        offset: at,
                        got: 0,
                        asked: asked as u64,
                    }),
                    n => Some(ClientError::ShortRead {
                        path: String::new(),
                        offset: at,
                        got: n as u64,
                        asked: asked as u64,
                    }),
                },
                Err(e) => Some(e),
            };
            if let Some(e) = err {
                first_err.get_or_insert(e.at(self.file.path()));
            }
            at += asked as u64;
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl io::Read for File {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(buf, self.position())?;
        self.advance(n as u64);
        Ok(n)
    }
}
