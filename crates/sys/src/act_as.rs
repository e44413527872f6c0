//! Acting as another user on the calling thread only, for a moment: what a service
//! running as root does to open a connection with a user's rights, so the kernel
//! checks the socket file's permissions as the user and records the user as the peer
//! (`SO_PEERCRED`; a socket's owner, as `sock_diag` reports it).
//!
//! Rules:
//!
//! 1. Linux keeps credentials per thread. Only raw system calls are made (rustix's
//!    `set_thread_*`, `setfsuid`): glibc's `setuid`, `setgid` and `setgroups` change
//!    every thread of the process.
//! 2. Groups first, then the effective gid, then the effective uid (once the euid is
//!    the user's, the thread may no longer set groups). The real and saved ids stay
//!    root's, so the thread can take root back; `setresuid` also sets the fsuid.
//! 3. Afterwards — also when the closure panics — the euid, egid, groups, fsuid and
//!    fsgid are put back as they were, in the reverse order.
//! 4. A service that is not root acts only as itself: the closure just runs when the
//!    user is the service's own, and anyone else is `EPERM`.

use std::io;

use rustix::process::{Gid, Uid};

use crate::spawn::RunAs;

/// The calling thread's identity before [`on_this_thread`], put back on drop (rule 3).
struct Restore {
    euid: Uid,
    egid: Gid,
    groups: Vec<Gid>,
    fsuid: u32,
    fsgid: u32,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let back = rustix::thread::set_thread_res_uid(None, Some(self.euid), None)
            .and_then(|()| rustix::thread::set_thread_res_gid(None, Some(self.egid), None))
            .and_then(|()| rustix::thread::set_thread_groups(&self.groups));
        // SAFETY: setfsuid / setfsgid take plain integers and touch no memory; they
        // change this thread's filesystem ids only.
        unsafe {
            libc::setfsgid(self.fsgid);
            libc::setfsuid(self.fsuid);
        }
        // A thread that cannot take its own identity back must not go on serving
        // others with a user's.
        if let Err(e) = back {
            panic!("taking the thread's identity back after acting as a user: {e}");
        }
    }
}

/// The calling thread's filesystem uid and gid (`setfsuid(-1)` changes nothing and
/// returns the id in force).
fn fs_ids() -> (u32, u32) {
    // SAFETY: as in `Restore::drop`; -1 is no id, so nothing changes.
    unsafe {
        (
            libc::setfsuid(u32::MAX) as u32,
            libc::setfsgid(u32::MAX) as u32,
        )
    }
}

/// Runs `f` with the calling thread acting as `who` (uid, gid, groups), then takes the
/// thread's own identity back (the rules in the module docs).
pub fn on_this_thread<R>(who: &RunAs, f: impl FnOnce() -> R) -> io::Result<R> {
    let euid = rustix::process::geteuid();
    if !euid.is_root() {
        return if euid.as_raw() == who.uid {
            Ok(f())
        } else {
            Err(io::Error::from_raw_os_error(libc::EPERM))
        };
    }
    let (fsuid, fsgid) = fs_ids();
    let restore = Restore {
        euid,
        egid: rustix::process::getegid(),
        groups: rustix::process::getgroups()?,
        fsuid,
        fsgid,
    };
    let groups: Vec<Gid> = who.groups.iter().map(|&g| Gid::from_raw(g)).collect();
    rustix::thread::set_thread_groups(&groups)?;
    rustix::thread::set_thread_res_gid(None, Some(Gid::from_raw(who.gid)), None)?;
    rustix::thread::set_thread_res_uid(None, Some(Uid::from_raw(who.uid)), None)?;
    let out = f();
    drop(restore);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// Root only (skipped otherwise): the thread is the user inside, itself after,
    /// and the other threads never change.
    #[test]
    fn acts_as_the_user_on_this_thread_only_and_comes_back() {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: needs root");
            return;
        }
        let who = RunAs {
            uid: 65534,
            gid: 65534,
            groups: vec![65534],
        };
        let private = tempfile::tempdir().unwrap();
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let before = fs_ids();
        let inside = on_this_thread(&who, || {
            let other = std::thread::spawn(|| rustix::process::geteuid().as_raw());
            (
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw(),
                fs_ids(),
                // A thread started inside inherits the credentials; this one is
                // started from this thread, so it shows the user too.
                other.join().unwrap(),
                std::fs::read_dir(private.path()).is_err(),
            )
        })
        .unwrap();
        assert_eq!(inside, (65534, 65534, (65534, 65534), 65534, true));
        assert_eq!(rustix::process::geteuid().as_raw(), 0);
        assert_eq!(fs_ids(), before);
        assert!(
            std::fs::read_dir(private.path()).is_ok(),
            "root's rights are back"
        );
    }
}
