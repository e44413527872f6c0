//! Descriptors a daemon inherited from whoever started it.
//!
//! A server started from a shell gets that shell's open descriptors beyond 0–2 (a
//! `9<secret` redirection, a terminal, a socket). Whatever it starts for a user must
//! not get them: a job's child marks every descriptor above 2 close-on-exec before
//! `exec` ([`crate::spawn`], through [`mark_close_on_exec`]), and the server marks
//! them so the moment it starts ([`close_inherited_on_exec`]), so that no exec path
//! it ever takes — its own re-exec when it detaches included — passes them on. Descriptors the server opens
//! itself are close-on-exec already (Rust's std opens every one so).

use std::io;

/// Marks every descriptor from `first` up close-on-exec; they stay open for this
/// process.
pub fn close_inherited_on_exec(first: u32) -> io::Result<()> {
    mark_close_on_exec(first, open_files_bound())
}

/// Where [`mark_close_on_exec`]'s fallback stops: the hard `RLIMIT_NOFILE` (no
/// descriptor can be at or above it). Read it before a fork: it allocates nothing, but
/// the child should only make the calls it must.
pub fn open_files_bound() -> i32 {
    crate::spawn::Rlimit::OpenFiles(0)
        .own_hard_limit()
        .map_or(i32::MAX, |n| i32::try_from(n).unwrap_or(i32::MAX))
}

/// Marks every descriptor from `first` below `bound` close-on-exec: `close_range`
/// with `CLOSE_RANGE_CLOEXEC` (Linux 5.11), else one `fcntl` per possible descriptor.
/// Async-signal-safe (system calls only, nothing allocated), so a forked child may
/// call it before `exec`; marking rather than closing keeps std's own close-on-exec
/// pipe, which reports a failed `exec`, working.
pub fn mark_close_on_exec(first: u32, bound: i32) -> io::Result<()> {
    // SAFETY: close_range takes plain integers; with CLOSE_RANGE_CLOEXEC it only sets a
    // flag on descriptors and closes none, so no owner of one is disturbed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if !matches!(err.raw_os_error(), Some(libc::ENOSYS | libc::EINVAL)) {
        return Err(err);
    }
    for fd in first.min(i32::MAX as u32) as i32..bound {
        // SAFETY: F_GETFD/F_SETFD on a descriptor number touch only its flags; a
        // number with no descriptor fails with EBADF, which is fine.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn an_inherited_descriptor_is_not_passed_to_a_program_started_later() {
        let file = tempfile::tempfile().unwrap();
        let fd = file.as_raw_fd();
        // As a shell's `9<file` would leave it: inheritable.
        // SAFETY: clearing FD_CLOEXEC on our own open descriptor.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        close_inherited_on_exec(3).unwrap();
        // SAFETY: reading the flags of our own open descriptor.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(format!(
                "test -e /proc/self/fd/{fd} && echo open || echo closed"
            ))
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "closed");
    }
}
