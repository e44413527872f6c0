//! Writing behind: several `Twrite`s of one transfer in flight at once, so a copy to a
//! server over a link with latency (a gateway hop, a wide-area link) is not one round
//! trip per message — the write counterpart of reading ahead.
//!
//! Rules:
//!
//! 1. Only where a write lands at its offset whatever order the server takes it in:
//!    the file is regular (getattr), was not opened to append, and its qid lacks
//!    `QTAPPEND`, which a ninefold server sets on every file whose writes ignore their
//!    offset (pipes, job input, control files, synthetic files). Anything else is
//!    written one message at a time, in order, as before: a server may serve one
//!    connection's requests concurrently, so two writes in flight on a stream could
//!    land out of order.
//! 2. Replies are taken in the order the writes were sent. A reply that took less
//!    than its message (a full disk, a quota) ends the writing behind: the writes
//!    still in flight are collected, and everything from the first byte not known
//!    written is written again one message at a time — positional writes may be
//!    repeated, so nothing is lost or left as a hole — until the server takes none,
//!    which is [`ClientError::ShortWrite`] naming what was written.
//! 3. An error reply ends the copy with that error once the writes in flight are
//!    collected; the position stays after the last byte known written. An error of
//!    the input (a local read, or a read of the source of a remote → remote copy)
//!    does the same: no write starts after it, and the writes sent before it count
//!    where they were taken whole.
//! 4. A write's message is made from the buffer the input filled, which comes back
//!    once the write is sent, to be filled again: no copy, no allocation per message.

use std::collections::VecDeque;
use std::io::Read;

use nf_ninep::message::*;
use nf_ninep::types::QidType;
use nf_ninep::wire::Data;

use crate::copy::{CopyError, Input, Source};
use crate::error::ClientError;
use crate::open::File;
use crate::rpc::PendingCall;

/// Writes in flight unless the caller says otherwise.
pub const DEFAULT_DEPTH: usize = 4;

/// One write sent and not yet answered, with its bytes (kept for rule 2).
struct Sent {
    call: PendingCall,
    data: Vec<u8>,
}

impl File {
    /// Whether writes to this file may be kept in flight (rule 1); asks the server
    /// for the file's type unless its qid or open flags already say no.
    pub fn writes_positional(&self) -> Result<bool, ClientError> {
        if self.appends() || self.qid().ty.contains(QidType::APPEND) {
            return Ok(false);
        }
        Ok(self.stat()?.is_regular())
    }

    /// [`File::copy_from`] with up to `depth` writes in flight where the file allows
    /// it (see the module rules); `depth` 1 is `copy_from`. Returns the bytes copied.
    ///
    /// The first write goes out before the file's type is asked, and the question
    /// travels beside it, so a file of one message costs what it costs without
    /// writing behind.
    pub fn copy_from_behind(
        &mut self,
        input: &mut dyn Read,
        depth: usize,
    ) -> Result<u64, CopyError> {
        self.write_behind(&mut Input(input), depth)
    }

    /// Writes every piece `input` gives at the position with up to `depth` writes in
    /// flight (the module rules); returns the bytes copied.
    pub(crate) fn write_behind<S: Source>(
        &mut self,
        input: &mut S,
        depth: usize,
    ) -> Result<u64, S::Error> {
        if depth <= 1 {
            return self.write_in_order(input);
        }
        let mut flight = VecDeque::new();
        let mut total = 0;
        let copied = self.behind(input, depth, &mut flight, &mut total);
        if copied.is_err() {
            // Rule 3: the writes still in flight (all before the error) are collected;
            // the position moves past each taken whole, up to the first that was not.
            let mut whole = true;
            for sent in flight {
                let took = self.finish_write(sent.call);
                whole &= matches!(took, Ok(n) if n >= sent.data.len());
                if whole {
                    self.advance(sent.data.len() as u64);
                }
            }
        }
        copied.map(|()| total)
    }

    /// The loop of [`File::write_behind`], counting into `total`; on an error `flight`
    /// holds the writes sent before it and still unanswered.
    fn behind<S: Source>(
        &mut self,
        input: &mut S,
        depth: usize,
        flight: &mut VecDeque<Sent>,
        total: &mut u64,
    ) -> Result<(), S::Error> {
        let chunk = self.chunk() as usize;
        // Rule 1, asked once a second message is to be sent.
        let mut positional = None;
        // Buffers of answered writes, read into again (no allocation per message).
        let mut spare: Vec<Vec<u8>> = Vec::new();
        let mut next = self.position();
        let mut ended = false;
        loop {
            while !ended && flight.len() < depth {
                if !flight.is_empty() {
                    if positional.is_none() {
                        positional = Some(self.writes_positional()?);
                    }
                    if positional == Some(false) {
                        break;
                    }
                }
                let mut data = spare.pop().unwrap_or_default();
                input.next_into(&mut data, chunk)?;
                if data.is_empty() {
                    ended = true;
                    break;
                }
                let len = data.len() as u64;
                let (call, data) = self.send_write(next, data)?;
                next += len;
                flight.push_back(Sent { call, data });
            }
            let Some(sent) = flight.pop_front() else {
                return Ok(());
            };
            let took = match self.finish_write(sent.call) {
                Ok(took) => took.min(sent.data.len()),
                Err(e) => {
                    // Rule 3, past a hole: the later writes move the position no further.
                    for later in flight.drain(..) {
                        let _ = self.finish_write(later.call);
                    }
                    return Err(e.into());
                }
            };
            self.advance(took as u64);
            *total += took as u64;
            if took < sent.data.len() {
                // Rule 2: the rest of this message and every later one, in order.
                let mut rest = sent.data[took..].to_vec();
                for later in flight.drain(..) {
                    let _ = self.finish_write(later.call);
                    rest.extend_from_slice(&later.data);
                }
                self.write_all(&rest)?;
                *total += rest.len() as u64 + self.write_in_order(input)?;
                return Ok(());
            }
            spare.push(sent.data);
        }
    }

    /// Sends `data` (at most [`File::chunk`] bytes) as one `Twrite` at `offset` without
    /// copying it into a message of its own; hands the buffer back for reuse.
    fn send_write(
        &self,
        offset: u64,
        data: Vec<u8>,
    ) -> Result<(PendingCall, Vec<u8>), ClientError> {
        let msg = Tmessage::Twrite(Twrite {
            fid: self.number(),
            offset,
            data: Data(data),
        });
        let call = self
            .client()
            .start_message("write", &msg)
            .map_err(|e| e.at(self.path()))?;
        let Tmessage::Twrite(Twrite { data, .. }) = msg else {
            unreachable!("built as a Twrite above");
        };
        Ok((call, data.0))
    }

    /// Sends one `Twrite` of `data` (at most [`File::chunk`] bytes) at `offset` without
    /// waiting; [`File::finish_write`] takes the count the server wrote.
    pub fn start_write(&self, offset: u64, data: &[u8]) -> Result<PendingCall, ClientError> {
        let n = data.len().min(self.chunk() as usize);
        let msg = Twrite {
            fid: self.number(),
            offset,
            data: data[..n].into(),
        };
        self.client().start(msg).map_err(|e| e.at(self.path()))
    }

    /// Waits for a write [`File::start_write`] sent; the bytes the server took.
    pub fn finish_write(&self, call: PendingCall) -> Result<usize, ClientError> {
        let client = self.client();
        client
            .finish(
                "write",
                call,
                |r| match r {
                    Rmessage::Rwrite(r) => Some(r.count as usize),
                    _ => None,
                },
                client.reply_timeout(),
            )
            .map_err(|e| e.at(self.path()))
    }
}
