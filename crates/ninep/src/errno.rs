//! Linux errno values carried by `Rlerror`, and the mapping from [`std::io::Error`].
//!
//! 9P2000.L sends Linux numbers whatever the server's own OS: these are the
//! asm-generic values used on x86, arm and most other Linux targets.

use std::io;

/// Operation not permitted.
pub const EPERM: u32 = 1;
/// No such file or directory.
pub const ENOENT: u32 = 2;
/// No such process.
pub const ESRCH: u32 = 3;
/// Interrupted call.
pub const EINTR: u32 = 4;
/// I/O error (the default when nothing better is known).
pub const EIO: u32 = 5;
/// Bad file descriptor (unknown or unopened fid).
pub const EBADF: u32 = 9;
/// Try again.
pub const EAGAIN: u32 = 11;
/// Out of memory.
pub const ENOMEM: u32 = 12;
/// Permission denied.
pub const EACCES: u32 = 13;
/// Resource busy.
pub const EBUSY: u32 = 16;
/// File exists.
pub const EEXIST: u32 = 17;
/// Cross-device link.
pub const EXDEV: u32 = 18;
/// Not a directory.
pub const ENOTDIR: u32 = 20;
/// Is a directory.
pub const EISDIR: u32 = 21;
/// Invalid argument.
pub const EINVAL: u32 = 22;
/// Too many open files.
pub const EMFILE: u32 = 24;
/// File too large.
pub const EFBIG: u32 = 27;
/// No space left on device.
pub const ENOSPC: u32 = 28;
/// Illegal seek.
pub const ESPIPE: u32 = 29;
/// Broken pipe: no reader will ever read what is written.
pub const EPIPE: u32 = 32;
/// Read-only file system.
pub const EROFS: u32 = 30;
/// Result out of range (e.g. xattr buffer too small).
pub const ERANGE: u32 = 34;
/// File name too long.
pub const ENAMETOOLONG: u32 = 36;
/// No locks available.
pub const ENOLCK: u32 = 37;
/// Function not implemented.
pub const ENOSYS: u32 = 38;
/// Directory not empty.
pub const ENOTEMPTY: u32 = 39;
/// Too many symbolic links.
pub const ELOOP: u32 = 40;
/// No data (e.g. no such xattr).
pub const ENODATA: u32 = 61;
/// Protocol error.
pub const EPROTO: u32 = 71;
/// Bad message.
pub const EBADMSG: u32 = 74;
/// Value too large for data type.
pub const EOVERFLOW: u32 = 75;
/// Message too long.
pub const EMSGSIZE: u32 = 90;
/// Operation not supported.
pub const EOPNOTSUPP: u32 = 95;
/// Timed out.
pub const ETIMEDOUT: u32 = 110;
/// Host is down: a gateway's member that does not answer.
pub const EHOSTDOWN: u32 = 112;
/// Stale file handle: the file a fid named is gone.
pub const ESTALE: u32 = 116;
/// Quota exceeded: a user's budget is spent.
pub const EDQUOT: u32 = 122;

/// The Linux errno for an I/O error: its OS code on Linux, else by kind, else `EIO`.
pub fn from_io_error(err: &io::Error) -> u32 {
    if cfg!(any(target_os = "linux", target_os = "android")) {
        if let Some(code) = err.raw_os_error().and_then(|c| u32::try_from(c).ok()) {
            if code != 0 {
                return code;
            }
        }
    }
    from_kind(err.kind())
}

fn from_kind(kind: io::ErrorKind) -> u32 {
    use io::ErrorKind as K;
    match kind {
        K::NotFound => ENOENT,
        K::PermissionDenied => EACCES,
        K::AlreadyExists => EEXIST,
        K::WouldBlock => EAGAIN,
        K::InvalidInput => EINVAL,
        K::InvalidData => EBADMSG,
        K::TimedOut => ETIMEDOUT,
        K::Interrupted => EINTR,
        K::Unsupported => EOPNOTSUPP,
        K::OutOfMemory => ENOMEM,
        _ => EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn os_codes_pass_through_on_linux() {
        let err = io::Error::from_raw_os_error(39);
        if cfg!(target_os = "linux") {
            assert_eq!(from_io_error(&err), ENOTEMPTY);
        }
    }

    #[test]
    fn kinds_map_and_default_to_eio() {
        assert_eq!(
            from_io_error(&io::Error::new(io::ErrorKind::NotFound, "x")),
            ENOENT
        );
        assert_eq!(from_io_error(&io::Error::other("x")), EIO);
    }
}
