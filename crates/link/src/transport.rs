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

/// Most parts one vectored write is given: a frame's head and its data, with room to
/// spare. More are written this many at a time, so a send never allocates.
const MAX_PARTS: usize = 4;

/// Writes every byte of `parts`, in order, with vectored writes; a short write goes on
/// from where it stopped, across parts. Empty parts are left out (a frame sent whole
/// comes with empty data: then it is one slice, as a plain write).
pub(crate) fn write_all_parts(mut w: impl Write, parts: &[&[u8]]) -> io::Result<()> {
    let mut parts = parts.iter().filter(|p| !p.is_empty()).peekable();
    while parts.peek().is_some() {
        let mut slices = [IoSlice::new(&[]); MAX_PARTS];
        let mut filled = 0;
        // `zip` asks `slices` first, so no part is taken without a slot for it.
        for (slice, part) in slices.iter_mut().zip(parts.by_ref()) {
            *slice = IoSlice::new(part);
            filled += 1;
        }
        let mut left = &mut slices[..filled];
        while !left.is_empty() {
            match w.write_vectored(left) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut left, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
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
    /// behind the head (sockets: one `writev`; TLS: records made from both at once;
    /// the shm channel: one publish, one wake-up). Parts may be empty.
    /// Empty parts are skipped (a frame sent whole comes with empty data).
    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        parts
            .iter()
            .filter(|p| !p.is_empty())
            .try_for_each(|p| self.send(p))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;
    use std::thread;

    /// A writer that takes at most `step` bytes per call, from however many slices,
    /// and is interrupted once before its first write.
    struct Short {
        step: usize,
        out: Vec<u8>,
        interrupted: bool,
        calls: usize,
    }

    impl Write for Short {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            if !self.interrupted {
                self.interrupted = true;
                return Err(io::ErrorKind::Interrupted.into());
            }
            assert!(
                !bufs.is_empty() && bufs.len() <= MAX_PARTS,
                "{} slices",
                bufs.len()
            );
            assert!(bufs.iter().all(|b| !b.is_empty()), "an empty slice");
            self.calls += 1;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.step - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
            }
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn short_writes_go_on_across_parts_and_empty_parts_are_skipped() {
        let head: Vec<u8> = (0..11).collect();
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 13) as u8).collect();
        let lists: [&[&[u8]]; 6] = [
            &[&head, &data],
            &[&head, &[]],
            &[&[], &data],
            &[&[], &[]],
            &[&head, &[], &data[..1], &data[1..7], &[], &data[7..], &head],
            &[&data[..3]; 9],
        ];
        for parts in lists {
            let whole = parts.concat();
            for step in [1, 3, 7, 11, 12, 4096, 1 << 20] {
                let mut w = Short {
                    step,
                    out: Vec::new(),
                    interrupted: false,
                    calls: 0,
                };
                write_all_parts(&mut w, parts).unwrap();
                assert_eq!(w.out, whole, "step {step}, {} parts", parts.len());
                assert!(w.calls <= whole.len().div_ceil(step) + parts.len().div_ceil(MAX_PARTS));
            }
        }
    }

    /// A socket whose writes give up after 1 ms without room (`SO_SNDTIMEO`): the
    /// kernel then returns what it took so far, a short write. With nothing taken
    /// it waits until the socket is writable and tries again.
    struct Timed<'a>(&'a UnixStream);

    impl Write for Timed<'_> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.write_vectored(&[IoSlice::new(buf)])
        }

        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            loop {
                match self.0.write_vectored(bufs) {
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        let mut fds = [PollFd::new(self.0, PollFlags::OUT)];
                        rustix::event::poll(&mut fds, None)?;
                    }
                    other => return other,
                }
            }
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_slow_reader_behind_a_small_send_buffer_gets_every_part() {
        let (a, b) = UnixStream::pair().unwrap();
        rustix::net::sockopt::set_socket_send_buffer_size(&a, 4096).unwrap();
        a.set_write_timeout(Some(std::time::Duration::from_millis(1)))
            .unwrap();
        let head = vec![0xAB; 11];
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 31) as u8).collect();
        let expected = [&head[..], &data[..], &head[..]].concat();
        let len = expected.len();
        let reader = thread::spawn(move || {
            let mut got = Vec::new();
            let mut buf = [0u8; 977];
            while got.len() < len {
                let n = (&b).read(&mut buf).unwrap();
                assert!(n > 0, "end of stream after {} of {len} bytes", got.len());
                got.extend_from_slice(&buf[..n]);
                // Slow: the writer's 1 ms runs out while the buffer is full.
                thread::sleep(std::time::Duration::from_millis(1));
            }
            got
        });
        write_all_parts(Timed(&a), &[&head, &data, &[], &head]).unwrap();
        // A writer that lost bytes ends the stream early rather than leave the reader
        // waiting.
        a.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(reader.join().unwrap(), expected);
    }
}
