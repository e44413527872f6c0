//! Reading ahead: several `Tread`s of one transfer in flight at once, so a copy over a
//! link with latency (a gateway hop, a wide-area link) is not one round trip per
//! message.
//!
//! Rules:
//!
//! 1. Only up to the size the file had when the copy started is read ahead: reads
//!    there are positional on every file that reports a size (host files, `/mem`
//!    segments, snapshots). Streams (pipes, job output, logs) report 0 and are read
//!    one message at a time, in order, as before — two reads in flight on a stream
//!    could be answered out of order.
//! 2. Replies are used in the order they were asked; a short one (the file shrank)
//!    ends the read-ahead: the replies still to come are collected and dropped, and the
//!    copy goes on one message at a time from where the data ended.
//! 3. Past the starting size the copy goes on one message at a time until end of
//!    file, so a file that grew is copied whole.
//! 4. Each reply's data is copied by the connection's reader thread straight into a
//!    buffer of the copy's own (no allocation per message); the buffers go round
//!    between the reads in flight and whoever takes the pieces (a local writer, or
//!    the writes of a remote → remote copy).
//! 5. A copy that stops early (an error on either side) leaves the reads still in
//!    flight unwaited: their replies are dropped as they come, and the connection goes
//!    on.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use nf_ninep::message::*;

use crate::copy::{CopyError, FileCopyError, Source};
use crate::error::ClientError;
use crate::open::File;
use crate::rpc::PendingCall;

/// Reads in flight unless the caller says otherwise.
pub const DEFAULT_DEPTH: usize = 4;

impl File {
    /// [`File::copy_to`] with up to `depth` reads in flight (see the module rules);
    /// `depth` 1 is one message at a time. `out` is flushed after every message.
    pub fn copy_to_ahead(&mut self, out: &mut dyn Write, depth: usize) -> Result<u64, CopyError> {
        let local = |source| CopyError::Local {
            what: "writing the output",
            source,
        };
        let chunk = self.chunk();
        let mut ahead = ReadAhead::new(self, depth, chunk)?;
        let mut buf = Vec::new();
        let mut total = 0;
        loop {
            ahead.piece(&mut buf)?;
            if buf.is_empty() {
                out.flush().map_err(local)?;
                return Ok(total);
            }
            total += buf.len() as u64;
            out.write_all(&buf).map_err(local)?;
            out.flush().map_err(local)?;
        }
    }

    /// Sends one `Tread` of `count` bytes (at most [`File::chunk`]) at `offset` without
    /// waiting; [`File::finish_read`] takes its data.
    pub fn start_read(&self, offset: u64, count: u32) -> Result<PendingCall, ClientError> {
        let msg = Tread {
            fid: self.number(),
            offset,
            count: count.min(self.chunk()),
        };
        self.client().start(msg).map_err(|e| e.at(self.path()))
    }

    /// Waits for a read [`File::start_read`] sent; its data (empty at end of file).
    pub fn finish_read(&self, call: PendingCall) -> Result<Vec<u8>, ClientError> {
        let client = self.client();
        client
            .finish(
                "read",
                call,
                |r| match r {
                    Rmessage::Rread(r) => Some(r.data.0),
                    _ => None,
                },
                client.reply_timeout(),
            )
            .map_err(|e| e.at(self.path()))
    }
}

/// One read sent: its call, the buffer its data lands in (rule 4), the bytes asked.
struct Sent {
    call: PendingCall,
    slot: Arc<Mutex<Vec<u8>>>,
    asked: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A file read from its position to end of file in pieces, with up to `depth` reads
/// in flight (the module rules); the file's position moves past each piece taken.
pub(crate) struct ReadAhead<'f> {
    file: &'f mut File,
    depth: usize,
    /// Bytes one read asks for: the file's chunk, or less if the taker's is less.
    piece: u64,
    flight: VecDeque<Sent>,
    /// Where the next read ahead starts.
    next: u64,
    /// Reads ahead stop here (rule 1: the size at the start; 0 once a read came short).
    until: u64,
    /// Buffers to read into again.
    spare: Vec<Vec<u8>>,
}

impl<'f> ReadAhead<'f> {
    /// Starts reading `file` ahead, in pieces of at most `most` bytes.
    pub(crate) fn new(
        file: &'f mut File,
        depth: usize,
        most: u32,
    ) -> Result<ReadAhead<'f>, ClientError> {
        let piece = u64::from(file.chunk().min(most).max(1));
        let next = file.position();
        let mut ahead = ReadAhead {
            file,
            depth: depth.max(1),
            piece,
            flight: VecDeque::new(),
            next,
            until: 0,
            spare: Vec::new(),
        };
        if ahead.depth > 1 {
            // The first read goes out before the size is asked, so a file of one
            // message costs one round trip, as without read-ahead (one read in flight
            // is in order on a stream too).
            ahead.send(piece)?;
            ahead.until = ahead.file.stat()?.size();
        }
        Ok(ahead)
    }

    /// Sends a read of `count` bytes at `next`, its data to land in a spare buffer.
    fn send(&mut self, count: u64) -> Result<(), ClientError> {
        let slot = Arc::new(Mutex::new(self.spare.pop().unwrap_or_default()));
        let into = Arc::clone(&slot);
        let msg = Tread {
            fid: self.file.number(),
            offset: self.next,
            count: count as u32,
        };
        let sink = Box::new(move |data: &[u8]| {
            let mut buf = lock(&into);
            buf.clear();
            buf.extend_from_slice(data);
        });
        let call = self
            .file
            .client()
            .start_into(msg, sink)
            .map_err(|e| e.at(self.file.path()))?;
        self.next += count;
        self.flight.push_back(Sent {
            call,
            slot,
            asked: count,
        });
        Ok(())
    }

    /// Leaves `buf` holding the next piece, empty at end of file; `buf`'s old
    /// allocation is kept to read into again.
    pub(crate) fn piece(&mut self, buf: &mut Vec<u8>) -> Result<(), ClientError> {
        while self.flight.len() < self.depth && self.next < self.until {
            self.send(self.piece.min(self.until - self.next))?;
        }
        if self.flight.is_empty() {
            // Rules 1 and 3: one message at a time, from where the data ended.
            self.next = self.file.position();
            self.send(self.piece)?;
        }
        let Some(sent) = self.flight.pop_front() else {
            unreachable!("a read was just sent");
        };
        let data = self.file.finish_read(sent.call)?;
        let mut got = std::mem::take(&mut *lock(&sent.slot));
        if !data.is_empty() {
            // A reply the reader thread decoded instead (one it could not sink).
            got = data;
        }
        std::mem::swap(buf, &mut got);
        self.spare.push(got);
        self.file.advance(buf.len() as u64);
        if (buf.len() as u64) < sent.asked {
            // Rule 2: the rest is collected and dropped; reading goes on in order.
            for later in self.flight.drain(..) {
                let _ = self.file.finish_read(later.call);
            }
            self.until = 0;
        }
        Ok(())
    }
}

/// A remote → remote copy's source: the file read ahead, its errors the source's.
impl Source for ReadAhead<'_> {
    type Error = FileCopyError;

    fn next_into(&mut self, buf: &mut Vec<u8>, _max: usize) -> Result<(), FileCopyError> {
        // `max` was the taker's chunk at construction: every piece fits it.
        self.piece(buf).map_err(FileCopyError::Source)
    }
}

/// Rule 5: the reads still in flight are abandoned (their sinks removed, so nothing
/// lands in buffers already dropped; the replies are discarded as they come).
impl Drop for ReadAhead<'_> {
    fn drop(&mut self) {
        let client = self.file.client();
        for sent in self.flight.drain(..) {
            client.unsink(sent.call.tag());
        }
    }
}
