//! Byte queues of a nonblocking framed connection, used by both ends of the service
//! path: [`InBuf`] holds received bytes until whole frames are there, [`OutBuf`] holds
//! bytes the socket has not taken yet.

use std::io::{self, Read, Write};

/// Smallest growth of a receive buffer.
const READ_CHUNK: usize = 256 << 10;

/// Received bytes `lo..hi`, not yet consumed. The buffer only grows (and stays
/// initialised), so a stream of large frames neither reallocates nor zeroes memory.
#[derive(Default)]
pub(crate) struct InBuf {
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
}

impl InBuf {
    /// The bytes received and not consumed.
    pub(crate) fn data(&self) -> &[u8] {
        &self.buf[self.lo..self.hi]
    }

    /// Drops the first `n` bytes of [`InBuf::data`].
    pub(crate) fn consume(&mut self, n: usize) {
        self.lo += n;
        if self.lo == self.hi {
            (self.lo, self.hi) = (0, 0);
        }
    }

    /// One read from `r`, first making room for a frame of `want` bytes.
    pub(crate) fn read_from(&mut self, mut r: impl Read, want: usize) -> io::Result<usize> {
        if self.hi == self.buf.len() {
            if self.lo > 0 {
                self.buf.copy_within(self.lo..self.hi, 0);
                self.hi -= self.lo;
                self.lo = 0;
            }
            if self.hi == self.buf.len() {
                let grow = want.saturating_sub(self.hi).max(READ_CHUNK);
                self.buf.resize(self.buf.len() + grow, 0);
            }
        }
        let n = r.read(&mut self.buf[self.hi..])?;
        self.hi += n;
        Ok(n)
    }
}

/// Bytes queued for a socket; `bytes[sent..]` are not written yet.
#[derive(Default)]
pub(crate) struct OutBuf {
    /// The queue (append with `extend_from_slice`).
    pub bytes: Vec<u8>,
    sent: usize,
}

impl OutBuf {
    /// Bytes not taken by the socket yet.
    pub(crate) fn unsent(&self) -> usize {
        self.bytes.len() - self.sent
    }

    /// Writes what `w` takes now (a full socket is not an error).
    pub(crate) fn flush_to(&mut self, mut w: impl Write) -> io::Result<()> {
        while self.sent < self.bytes.len() {
            match w.write(&self.bytes[self.sent..]) {
                Ok(0) => return Err(io::Error::other("socket accepts no more bytes")),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.bytes.clear();
        self.sent = 0;
        Ok(())
    }
}
