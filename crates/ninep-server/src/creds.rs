//! Acting as a user: the filesystem identity a request runs with.
//!
//! A server started as root serves many users, and every operation it does on host
//! files for one of them must be done with that user's rights, never root's (diod does
//! the same). Linux keeps the filesystem identity — fsuid, fsgid and the supplementary
//! groups — per thread, so the thread that runs a request takes on the user's identity
//! first ([`Creds::assume`]). The kernel then applies that user's permissions, gives
//! new files that user's ownership, clears setuid / setgid bits as it would for the
//! user's own processes and refuses `chown` of other people's files: when fsuid leaves
//! 0 it drops the file capabilities (`CAP_DAC_OVERRIDE`, `CAP_FOWNER`, `CAP_CHOWN`,
//! `CAP_FSETID`, …) from the thread's effective set, and gives them back when fsuid
//! returns to 0.
//!
//! Rules:
//!
//! 1. Only per-thread system calls are made: glibc's `setgroups(3)` would change every
//!    thread of the process (it broadcasts, as POSIX wants); `rustix` calls the kernel
//!    directly.
//! 2. Each thread remembers the identity it took last, so serving the same user again
//!    costs nothing; a new identity costs three system calls (groups, fsgid, fsuid).
//! 3. `setfsuid` and `setfsgid` cannot report failure; each is called a second time,
//!    which returns the value in force, and a mismatch is `EPERM`. A server that is not
//!    root can only "become" itself, which is why it serves only its own user.
//! 4. Work a server does for itself (not for a client) assumes [`Creds::server`]
//!    ([`Creds::as_server`] for a moment inside a request). A thread inherits its
//!    creator's filesystem identity from the kernel but not the record of rule 2, so a
//!    thread started while serving a request must assume [`Creds::server`] first.

use std::cell::RefCell;
use std::sync::{Arc, OnceLock};

use nf_ninep::errno::EPERM;
use nf_ninep::message::Rlerror;

/// A filesystem identity: uid, primary gid and supplementary groups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Creds {
    uid: u32,
    gid: u32,
    groups: Arc<[u32]>,
}

thread_local! {
    /// The identity this thread took last (rule 2); `None`: the process's own.
    static CURRENT: RefCell<Option<Creds>> = const { RefCell::new(None) };
}

impl Creds {
    /// The identity of `uid` with primary group `gid` and supplementary `groups`.
    pub fn new(uid: u32, gid: u32, groups: impl Into<Arc<[u32]>>) -> Creds {
        Creds {
            uid,
            gid,
            groups: groups.into(),
        }
    }

    /// The server process's own identity (effective uid and gid, its groups), read once.
    pub fn server() -> &'static Creds {
        static SERVER: OnceLock<Creds> = OnceLock::new();
        SERVER.get_or_init(|| {
            let groups: Vec<u32> = rustix::process::getgroups()
                .map(|g| g.into_iter().map(|g| g.as_raw()).collect())
                .unwrap_or_default();
            Creds::new(
                rustix::process::geteuid().as_raw(),
                rustix::process::getegid().as_raw(),
                groups,
            )
        })
    }

    /// The user id.
    pub fn uid(&self) -> u32 {
        self.uid
    }

    /// The primary group id.
    pub fn gid(&self) -> u32 {
        self.gid
    }

    /// The supplementary groups.
    pub fn groups(&self) -> &[u32] {
        &self.groups
    }

    /// True if this identity is root (uid 0), which the kernel exempts from
    /// permission checks.
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// True if `gid` is this identity's primary or a supplementary group.
    pub fn in_group(&self, gid: u32) -> bool {
        self.gid == gid || self.groups.contains(&gid)
    }

    /// Whether this identity may access a file of `owner`, `group` and permission bits
    /// `mode` for `want` (a mask of 4 read, 2 write, 1 execute), by the classic Unix
    /// rule: the owner's bits, else the group's, else the others'; root may do anything.
    pub fn may(&self, owner: u32, group: u32, mode: u32, want: u32) -> bool {
        if self.is_root() {
            return true;
        }
        let bits = if self.uid == owner {
            mode >> 6
        } else if self.in_group(group) {
            mode >> 3
        } else {
            mode
        };
        bits & want & 7 == want & 7
    }

    /// Makes the calling thread act as this identity for filesystem access (rules 1–3).
    /// Fails with `EPERM` where the process may not take it on (a server that is not
    /// root asked to act as another user).
    pub fn assume(&self) -> Result<(), Rlerror> {
        let same = CURRENT.with(|c| c.borrow().as_ref() == Some(self));
        if same {
            return Ok(());
        }
        // Forget the old identity first: if a step below fails, the next call starts
        // over instead of trusting a half-made switch.
        CURRENT.with(|c| *c.borrow_mut() = None);
        let groups: Vec<rustix::process::Gid> = self
            .groups
            .iter()
            .map(|&g| rustix::process::Gid::from_raw(g))
            .collect();
        let server = Creds::server();
        if !server.is_root() {
            return if self == server {
                Ok(())
            } else {
                Err(Rlerror::new(EPERM))
            };
        }
        rustix::thread::set_thread_groups(&groups).map_err(|_| Rlerror::new(EPERM))?;
        set_checked(nix::unistd::setfsgid, nix::unistd::Gid::from_raw(self.gid))?;
        set_checked(nix::unistd::setfsuid, nix::unistd::Uid::from_raw(self.uid))?;
        CURRENT.with(|c| *c.borrow_mut() = Some(self.clone()));
        Ok(())
    }
}

impl Creds {
    /// Runs `f` as the server itself on this thread, then takes back the identity the
    /// thread had (work a request does for the server: making a directory the user
    /// may not, reading the node's own key).
    pub fn as_server<R>(f: impl FnOnce() -> R) -> Result<R, Rlerror> {
        let before = CURRENT.with(|c| c.borrow().clone());
        Creds::server().assume()?;
        let r = f();
        if let Some(c) = before {
            c.assume()?;
        }
        Ok(r)
    }
}

/// Sets the calling thread's fsuid or fsgid with `set` (`setfsuid`, `setfsgid`), which
/// cannot report failure: a second call returns the id in force (rule 3).
fn set_checked<T: PartialEq + Copy>(set: fn(T) -> T, id: T) -> Result<(), Rlerror> {
    set(id);
    if set(id) == id {
        Ok(())
    } else {
        Err(Rlerror::new(EPERM))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_permission_bits() {
        let ann = Creds::new(1000, 100, vec![20]);
        assert!(ann.may(1000, 0, 0o600, 6));
        assert!(!ann.may(1000, 0, 0o400, 2));
        assert!(ann.may(0, 20, 0o640, 4), "through a supplementary group");
        assert!(!ann.may(0, 21, 0o640, 4));
        assert!(ann.may(0, 21, 0o644, 4), "others' bits");
        assert!(
            !ann.may(1000, 0, 0o066, 4),
            "the owner's bits win over others'"
        );
        assert!(Creds::new(0, 0, vec![]).may(5, 5, 0, 7));
    }

    #[test]
    fn assuming_the_servers_own_identity_always_works() {
        std::thread::spawn(|| {
            Creds::server().assume().unwrap();
            Creds::server().assume().unwrap();
        })
        .join()
        .unwrap();
    }
}
