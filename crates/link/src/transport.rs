//! Byte transports under 9P: a three-method trait, as diod's `Nptrans`.
//!
//! A transport only moves bytes; framing and decoding happen above it, in the server's
//! connection loop and the client's reader. One thread calls [`Transport::recv`]; any
//! number call [`Transport::send`], which the caller serialises (the server and the
//! client each hold a lock around it). [`Transport::close`] may come from any thread and
//! must make a blocked `recv` return.
//!
//! Implemented in this crate for tcp and unix-socket streams ([`crate::tcp`],
//! [`crate::unix`]), TLS over tcp ([`crate::tls`]) and the shared-memory byte channel
//! ([`crate::shm`]).

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;
use rustix::net::RecvFlags;

/// How long a connection's reader polls for the next request before it sleeps in
/// `recv`. A client that sends its next request within this time (any synchronous
/// client: walk, open, read, clunk) is seen without the scheduler's wake-up, which on a
/// shared machine costs tens of microseconds per request; an idle connection costs this
/// much CPU once, after its last request.
const POLL_FOR: Duration = Duration::from_micros(40);

/// Reads some bytes from a stream socket: polls without blocking for [`POLL_FOR`], then
/// blocks. `Ok(0)` means the peer closed the stream.
pub(crate) fn recv_polling<S: AsFd>(sock: &S, buf: &mut [u8]) -> io::Result<usize>
where
    for<'a> &'a S: Read,
{
    let start = Instant::now();
    loop {
        match rustix::net::recv(sock, &mut *buf, RecvFlags::DONTWAIT) {
            Ok((n, _)) => return Ok(n),
            Err(Errno::AGAIN) if start.elapsed() < POLL_FOR => std::hint::spin_loop(),
            Err(Errno::AGAIN) => break,
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    loop {
        match (&*sock).read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Writes every byte of `parts`, in order, with vectored writes.
pub(crate) fn write_all_parts(mut w: impl Write, parts: &[&[u8]]) -> io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
    let mut left = &mut slices[..];
    IoSlice::advance_slices(&mut left, 0);
    while !left.is_empty() {
        match w.write_vectored(left) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut left, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Waits up to `timeout` (`None`: as long as it takes) until `sock` is readable (bytes
/// or the end of the stream); false if the time ran out.
pub(crate) fn wait_fd_readable<S: AsFd>(sock: &S, timeout: Option<Duration>) -> io::Result<bool> {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        let spec = left.map(|l| rustix::event::Timespec {
            tv_sec: l.as_secs().try_into().unwrap_or(i64::MAX),
            tv_nsec: l.subsec_nanos().into(),
        });
        let mut fds = [PollFd::new(sock, PollFlags::IN)];
        match rustix::event::poll(&mut fds, spec.as_ref()) {
            Ok(0) => return Ok(false),
            Ok(_) => return Ok(true),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// A bidirectional byte stream carrying 9P frames.
pub trait Transport: Send + Sync + 'static {
    /// Reads some bytes into `buf`; `Ok(0)` means the peer closed the stream.
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// Writes all of `bytes` (whole frames) or fails.
    fn send(&self, bytes: &[u8]) -> io::Result<()>;
    /// Writes `parts` one after another, as [`Transport::send`] of their
    /// concatenation: a frame's head and its data, sent without first copying the data
    /// behind the head (sockets: one `writev`; TLS: records made from both at once).
    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        parts.iter().try_for_each(|p| self.send(p))
    }
    /// Shuts the stream down both ways; a blocked `recv` returns. Idempotent.
    fn close(&self);
    /// A short description of the peer for logs (`tcp 127.0.0.1:5640`, `unix`).
    fn peer(&self) -> String {
        String::from("?")
    }
    /// The user this transport authenticated the peer as (for example a TLS client
    /// certificate's name); `None` when it authenticates nobody. Read once, when the
    /// server admits the connection.
    fn authenticated_user(&self) -> Option<String> {
        None
    }
    /// The uid of the process at the other end of a local connection, as the kernel
    /// recorded it (`SO_PEERCRED` for a unix socket, the connecting socket's owner
    /// through `sock_diag` for loopback tcp); `None` where the transport cannot know
    /// (tcp from another host). Read once, when the server admits the connection.
    fn peer_uid(&self) -> Option<u32> {
        None
    }
    /// Whether [`Transport::wait_readable`] works here: then a client's caller may
    /// receive its own reply instead of waiting for the reader thread to hand it over
    /// (a scheduler wake-up per reply, `nf_ninep_client`'s `rpc`).
    fn can_wait_readable(&self) -> bool {
        false
    }
    /// Waits up to `timeout` (`None`: as long as it takes) until [`Transport::recv`]
    /// would return without blocking (bytes, the end of the stream or an error); false
    /// if the time ran out. Only where [`Transport::can_wait_readable`]; the caller is
    /// the one receiving thread, as for `recv`.
    fn wait_readable(&self, _timeout: Option<Duration>) -> io::Result<bool> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// The kernel's record of who connected a unix socket (`SO_PEERCRED`): pid and uid.
pub fn unix_peer(sock: &std::os::unix::net::UnixStream) -> Option<(u32, u32)> {
    let cred = rustix::net::sockopt::socket_peercred(sock).ok()?;
    Some((cred.pid.as_raw_nonzero().get() as u32, cred.uid.as_raw()))
}
