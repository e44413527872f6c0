//! Writing to a unix socket without risking SIGPIPE.
//!
//! A plain `write` to a socket whose peer has gone raises SIGPIPE, which kills a process
//! that has not ignored it (C programs using ninefold through its bindings). `send` with
//! `MSG_NOSIGNAL` reports `EPIPE` instead.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;

/// Writes all of `buf` to `stream`, honouring its write timeout, never raising SIGPIPE.
pub(crate) fn send_all(stream: &UnixStream, mut buf: &[u8]) -> io::Result<()> {
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
