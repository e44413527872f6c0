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

use std::collections::VecDeque;
use std::io::Write;

use nf_ninep::message::*;

use crate::copy::CopyError;
use crate::error::ClientError;
use crate::open::File;
use crate::rpc::PendingCall;

/// Reads in flight unless the caller says otherwise.
pub const DEFAULT_DEPTH: usize = 4;

impl File {
    /// [`File::copy_to`] with up to `depth` reads in flight (see the module rules);
    /// `depth` 1 is `copy_to`.
    pub fn copy_to_ahead(&mut self, out: &mut dyn Write, depth: usize) -> Result<u64, CopyError> {
        let local = |source| CopyError::Local {
            what: "writing the output",
            source,
        };
        if depth <= 1 {
            return self.copy_to(out);
        }
        let chunk = u64::from(self.chunk().max(1));
        let mut total = 0;
        let mut next = self.position();
        let mut flight: VecDeque<(PendingCall, u64)> = VecDeque::new();
        // The first read goes out before the size is asked, so a file of one message
        // costs one round trip, as without read-ahead (one read in flight is in order
        // on a stream too).
        flight.push_back((self.start_read(next, chunk as u32)?, chunk));
        next += chunk;
        let size = self.stat()?.size();
        loop {
            while flight.len() < depth && next < size {
                let count = chunk.min(size - next);
                flight.push_back((self.start_read(next, count as u32)?, count));
                next += count;
            }
            let Some((call, asked)) = flight.pop_front() else {
                break;
            };
            let data = self.finish_read(call)?;
            out.write_all(&data).map_err(local)?;
            self.advance(data.len() as u64);
            total += data.len() as u64;
            if (data.len() as u64) < asked {
                // Rule 2: drain, then go on from where the data ended.
                for (call, _) in flight.drain(..) {
                    let _ = self.finish_read(call);
                }
                break;
            }
        }
        out.flush().map_err(local)?;
        Ok(total + self.copy_to(out)?)
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
