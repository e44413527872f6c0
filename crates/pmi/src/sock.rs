//! The two byte streams PMI runs over — a unix socket or TCP — behind one type, and
//! writing to either without risking SIGPIPE.
//!
//! A plain `write` to a socket whose peer has gone raises SIGPIPE, which kills a process
//! that has not ignored it (C programs using ninefold through its bindings). `send` with
//! `MSG_NOSIGNAL` reports `EPIPE` instead.

use std::io::{self, Read};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::Duration;

use nf_sys::accept::Listening;

use crate::addr::PmiAddr;

/// A connected PMI stream.
#[derive(Debug)]
pub(crate) enum Stream {
    /// A unix stream socket (single-host jobs).
    Unix(UnixStream),
    /// A TCP connection (multi-host jobs), with `TCP_NODELAY` set.
    Tcp(TcpStream),
}

impl Stream {
    /// Connects to `addr`; a TCP connect gives up after `timeout`.
    pub(crate) fn connect(addr: &PmiAddr, timeout: Duration) -> io::Result<Stream> {
        match addr {
            PmiAddr::Unix(path) => UnixStream::connect(path).map(Stream::Unix),
            PmiAddr::Tcp(sa) => {
                let s = TcpStream::connect_timeout(sa, timeout)?;
                s.set_nodelay(true)?;
                Ok(Stream::Tcp(s))
            }
        }
    }

    /// Another handle to the same socket.
    pub(crate) fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
        }
    }

    /// Shuts one or both directions down.
    pub(crate) fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.shutdown(how),
            Stream::Tcp(s) => s.shutdown(how),
        }
    }

    /// Bounds every later read (`None`: unbounded).
    pub(crate) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }

    /// Bounds every later write (`None`: unbounded).
    pub(crate) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
}

impl Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => (&*s).read(buf),
            Stream::Tcp(s) => (&*s).read(buf),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// A listening PMI socket (its accept thread is an [`nf_sys::accept::Acceptor`]).
pub(crate) enum Listener {
    /// A unix socket.
    Unix(UnixListener),
    /// A TCP socket.
    Tcp(TcpListener),
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Unix(l) => l.as_fd(),
            Listener::Tcp(l) => l.as_fd(),
        }
    }
}

impl Listening for Listener {
    /// The connection, with a description of the peer for the log.
    type Stream = (Stream, String);

    /// Waits for the next connection; returns it with a description of the peer for
    /// the log (its address for TCP).
    fn accept_one(&self) -> io::Result<(Stream, String)> {
        match self {
            Listener::Unix(l) => l
                .accept()
                .map(|(s, _)| (Stream::Unix(s), "unix peer".to_owned())),
            Listener::Tcp(l) => {
                let (s, peer) = l.accept()?;
                s.set_nodelay(true)?;
                Ok((Stream::Tcp(s), peer.to_string()))
            }
        }
    }
}

/// Writes all of `buf` to `stream`, honouring its write timeout, never raising SIGPIPE.
pub(crate) fn send_all(stream: &Stream, mut buf: &[u8]) -> io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: the fd is open for as long as `stream` is borrowed, and `buf` is a
        // valid readable region of `buf.len()` bytes.
        let n = unsafe {
            libc::send(
                stream.as_raw_fd(),
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        // `n` is positive and at most `buf.len()`.
        buf = &buf[n.unsigned_abs()..];
    }
    Ok(())
}
