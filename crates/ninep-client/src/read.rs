//! Reading: one message at an offset, a whole file in msize-sized chunks, or a range
//! with every message of it in flight at once ([`File::start_read_exact`]).
//!
//! Pipelined reads are seed 000's overlap, in the client's own API: the caller starts
//! the reads of the next block, computes on the current one while the connection's
//! reader thread collects the replies, and then waits. One call per message, each
//! with its own tag, so the server may answer them in any order.

use std::io;

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

/// Reads of one byte range, sent and not all answered yet ([`File::start_read_exact`]).
#[must_use = "the reads are only checked and copied out by wait_into"]
#[derive(Debug)]
pub struct PendingReads<'f> {
    file: &'f File,
    /// Each message's call, with its offset into the range and its length.
    calls: Vec<(PendingCall, usize, usize)>,
    len: usize,
}

impl File {
    /// Sends every `Tread` that `len` bytes from `offset` take (one per
    /// [`File::chunk`]) and returns without waiting for any reply.
    pub fn start_read_exact(
        &self,
        offset: u64,
        len: usize,
    ) -> Result<PendingReads<'_>, ClientError> {
        let chunk = self.chunk().max(1) as usize;
        let mut calls = Vec::with_capacity(len.div_ceil(chunk));
        let mut at = 0;
        while at < len {
            let count = chunk.min(len - at);
            let msg = Tread {
                fid: self.number(),
                offset: offset + at as u64,
                count: count as u32,
            };
            let call = self.client().start(msg).map_err(|e| e.at(self.path()))?;
            calls.push((call, at, count));
            at += count;
        }
        Ok(PendingReads {
            file: self,
            calls,
            len,
        })
    }
}

impl PendingReads<'_> {
    /// The file read.
    pub fn path(&self) -> &str {
        self.file.path()
    }

    /// Bytes the reads cover.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Waits for every reply and copies the range into `buf` (exactly [`Self::len`]
    /// bytes). A reply shorter than asked (the file ended, or shrank) is
    /// [`ClientError::ShortRead`], with what did arrive copied; the remaining replies
    /// are still collected, so the connection stays usable.
    pub fn wait_into(self, buf: &mut [u8]) -> Result<(), ClientError> {
        assert_eq!(
            buf.len(),
            self.len,
            "wait_into needs a buffer of the range's length"
        );
        let client = self.file.client();
        let mut first_err = None;
        for (call, at, count) in self.calls {
            let got = client.finish(
                "read",
                call,
                |r| match r {
                    Rmessage::Rread(r) => Some(r.data.0),
                    _ => None,
                },
                client.reply_timeout(),
            );
            let err = match got {
                Ok(data) if data.len() == count => {
                    buf[at..at + count].copy_from_slice(&data);
                    continue;
                }
                Ok(data) => {
                    // What did come is still copied: the caller may use it.
                    let got = data.len().min(count);
                    buf[at..at + got].copy_from_slice(&data[..got]);
                    ClientError::ShortRead {
                        path: String::new(),
                        offset: at as u64,
                        got: data.len() as u64,
                        asked: count as u64,
                    }
                }
                Err(e) => e,
            };
            first_err.get_or_insert(err.at(self.file.path()));
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
