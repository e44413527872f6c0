//! One origin → target connection: dialled and greeted on first use (blocking, with
//! deadlines), nonblocking afterwards. Requests are appended to `out` and written as
//! the socket takes them; replies are framed out of `buf`.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use crate::error::RmaError;
use crate::service::wire::{Hello, Rep, HELLO_LEN, REP_LEN};
use crate::stream::{InBuf, OutBuf};

/// Longest a connect or the hello exchange may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);

/// A connection to one target's service.
pub(crate) struct Conn {
    stream: TcpStream,
    /// Requests not yet written (append to `out.bytes`).
    pub out: OutBuf,
    /// Replies received and not yet framed.
    inb: InBuf,
}

impl Conn {
    /// Connects to `proc`'s service at `addr` and exchanges hellos.
    pub(crate) fn dial(
        addr: SocketAddr,
        ours: &Hello,
        proc: usize,
        dead_after: Duration,
    ) -> Result<Conn, RmaError> {
        let lost = |why: String| RmaError::PeerLost { proc, why };
        let stream = TcpStream::connect_timeout(&addr, DIAL_TIMEOUT)
            .map_err(|e| lost(format!("connecting to its rma service at {addr}: {e}")))?;
        let greet = || -> io::Result<Hello> {
            crate::service::tune(&stream, dead_after)?;
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
            out: OutBuf::default(),
            inb: InBuf::default(),
        })
    }

    /// The socket, for tests that check its options.
    #[cfg(test)]
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Request bytes not yet taken by the socket.
    pub(crate) fn unsent(&self) -> usize {
        self.out.unsent()
    }

    /// The socket, for poll(2).
    pub(crate) fn fd(&self) -> RawFd {
        self.stream.as_raw_fd()
    }

    /// Writes what the socket takes now.
    pub(crate) fn flush(&mut self) -> io::Result<()> {
        self.out.flush_to(&self.stream)
    }

    /// Reads what has arrived and hands every whole reply to `f`. An end of stream is
    /// an error: a target closes only when it dies or leaves.
    pub(crate) fn read_replies(&mut self, mut f: impl FnMut(Rep, &[u8])) -> io::Result<()> {
        loop {
            let mut want = REP_LEN;
            while let Some(h) = self.inb.data().get(..REP_LEN) {
                let rep = Rep::decode(h.try_into().expect("len")).map_err(io::Error::other)?;
                let total = REP_LEN + rep.data_len as usize;
                if self.inb.data().len() < total {
                    want = total;
                    break;
                }
                f(rep, &self.inb.data()[REP_LEN..total]);
                self.inb.consume(total);
            }
            match self.inb.read_from(&self.stream, want) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "its service closed the connection (process gone?)",
                    ))
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}
