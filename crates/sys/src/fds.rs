//! Descriptors a daemon inherited from whoever started it.
//!
//! A server started from a shell gets that shell's open descriptors beyond 0–2 (a
//! `9<secret` redirection, a terminal, a socket). Whatever it starts for a user must
//! not get them; the child closes every descriptor above 2 before `exec`
//! ([`crate::spawn`]), and the server also marks them close-on-exec the moment it
//! starts ([`close_inherited_on_exec`]), so that no exec path it ever takes — its own
//! re-exec when it detaches included — passes them on. Descriptors the server opens
//! itself are close-on-exec already (Rust's std opens every one so).

use std::io;

/// Marks every descriptor from `first` up close-on-exec (`close_range` with
/// `CLOSE_RANGE_CLOEXEC`, Linux 5.11; older kernels: each open descriptor listed in
/// `/proc/self/fd`). They stay open for this process.
pub fn close_inherited_on_exec(first: u32) -> io::Result<()> {
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
    if !matches!(err.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EINVAL)) {
        return Err(err);
    }
    let fds: Vec<i32> = std::fs::read_dir("/proc/self/fd")?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd: &i32| fd >= first as i32)
        .collect();
    for fd in fds {
        // SAFETY: F_GETFD/F_SETFD on a descriptor number touch only its flags; one
        // that closed meanwhile (the listing's own) fails with EBADF, which is fine.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
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
