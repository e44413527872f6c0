//! One origin → target connection: dialled and greeted on first use (blocking, with
//! deadlines), nonblocking afterwards. Requests are appended to `out` and written as
//! the socket takes them; replies are framed out of `buf`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use crate::error::RmaError;
use crate::service::wire::{Hello, Rep, HELLO_LEN, REP_LEN};

/// Longest a connect or the hello exchange may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);
/// Smallest read buffer growth.
const READ_CHUNK: usize = 256 << 10;

/// A connection to one target's service.
pub(crate) struct Conn {
    stream: TcpStream,
    /// Unsent request bytes are `out[sent..]`.
    pub out: Vec<u8>,
    sent: usize,
    /// Received bytes `lo..hi` not yet framed.
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
}

impl Conn {
    /// Connects to `proc`'s service at `addr` and exchanges hellos.
    pub(crate) fn dial(addr: SocketAddr, ours: &Hello, proc: usize) -> Result<Conn, RmaError> {
        let lost = |why: String| RmaError::PeerLost { proc, why };
        let stream = TcpStream::connect_timeout(&addr, DIAL_TIMEOUT)
            .map_err(|e| lost(format!("connecting to its rma service at {addr}: {e}")))?;
        let greet = || -> io::Result<Hello> {
            crate::service::tune(&stream)?;
            stream.set_write_timeout(Some(DIAL_TIMEOUT))?;
            stream.set_read_timeout(Some(DIAL_TIMEOUT))?;
            (&stream).write_all(&ours.encode())?;
            let mut b = [0u8; HELLO_LEN];
            (&stream).read_exact(&mut b)?;
            let theirs = Hello::decode(&b, ours).map_err(io::Error::other)?;
            stream.set_nonblocking(true)?;
            Ok(theirs)
        };
        let theirs = greet().map_err(|e| lost(format!("hello with its service at {addr}: {e}")))?;
        if theirs.rank as usize != proc {
            return Err(lost(format!(
                "the service at {addr} is proc {}'s; wire-up tables disagree",
                theirs.rank
            )));
        }
        Ok(Conn {
            stream,
            out: Vec::new(),
            sent: 0,
            buf: Vec::new(),
            lo: 0,
            hi: 0,
        })
    }

    /// Request bytes not yet taken by the socket.
    pub(crate) fn unsent(&self) -> usize {
        self.out.len() - self.sent
    }

    /// The socket, for poll(2).
    pub(crate) fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// Writes what the socket takes now.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        while self.sent < self.out.len() {
            match (&self.stream).write(&self.out[self.sent..]) {
                Ok(0) => return Err(io::Error::other("socket accepts no more bytes")),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.out.clear();
        self.sent = 0;
        Ok(())
    }

    /// Reads what has arrived and hands every whole reply to `f`. An end of stream is
    /// an error: a target closes only when it dies or leaves.
    pub(crate) fn read_replies(&mut self, mut f: impl FnMut(Rep, &[u8])) -> io::Result<()> {
        loop {
            let mut want = REP_LEN;
            while self.hi - self.lo >= REP_LEN {
                let h: &[u8; REP_LEN] = self.buf[self.lo..self.lo + REP_LEN]
                    .try_into()
                    .expect("len");
                let rep = Rep::decode(h).map_err(io::Error::other)?;
                let total = REP_LEN + rep.data_len as usize;
                if self.hi - self.lo < total {
                    want = total;
                    break;
                }
                f(rep, &self.buf[self.lo + REP_LEN..self.lo + total]);
                self.lo += total;
            }
            if self.lo == self.hi {
                (self.lo, self.hi) = (0, 0);
            }
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
            match (&self.stream).read(&mut self.buf[self.hi..]) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "its service closed the connection (process gone?)",
                    ))
                }
                Ok(n) => self.hi += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
