//! A second, unprivileged account, and acting as it on one thread: how the tests attack
//! a server run as root the way a hostile local user would.
//!
//! [`test_account`] makes the account `nf-test-user` (no home, no login shell) with
//! `useradd` if it is missing; it needs root, as the tests that use it do.
//! [`second_test_account`] makes `nf-test-user2` the same way, for tests in which one
//! unprivileged user must not reach another's things. [`as_user`]
//! runs a closure with the calling thread's effective uid, gid and groups set to the
//! account's (Linux keeps them per thread; the raw system calls change this thread
//! only) and puts them back afterwards, also when the closure panics. A socket
//! connected inside carries the account's identity for good: the kernel records it at
//! `connect` (`SO_PEERCRED`) or at `socket` (the owner `sock_diag` reports).

use std::process::Command;

use rustix::process::{Gid, Uid};

/// The account the tests act as.
pub const TEST_USER: &str = "nf-test-user";
/// A second unprivileged account, for tests that pit one user against another.
pub const SECOND_TEST_USER: &str = "nf-test-user2";

/// An account: name, uid and primary gid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// The login name.
    pub name: String,
    /// The user id.
    pub uid: u32,
    /// The primary group id.
    pub gid: u32,
}

fn id(flag: &str, name: &str) -> Option<u32> {
    let out = Command::new("id").args([flag, name]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The account [`TEST_USER`], made first if missing. Fails (with what to do) when this
/// process is not root or `useradd` fails.
pub fn test_account() -> Result<Account, String> {
    account(TEST_USER)
}

/// The account [`SECOND_TEST_USER`], made first if missing, as [`test_account`] makes
/// its own.
pub fn second_test_account() -> Result<Account, String> {
    account(SECOND_TEST_USER)
}

/// The system account `name` (no home, no login shell), made with `useradd` if missing.
fn account(name: &str) -> Result<Account, String> {
    if rustix::process::geteuid().as_raw() != 0 {
        return Err(format!(
            "this test acts as a second user ({name}) and must run as root"
        ));
    }
    if id("-u", name).is_none() {
        let out = Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
            ])
            .arg(name)
            .output()
            .map_err(|e| format!("running useradd: {e} (install passwd)"))?;
        // Another test process may have made it meanwhile (exit 9: already exists).
        if !out.status.success() && id("-u", name).is_none() {
            return Err(format!(
                "useradd {name}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    let uid = id("-u", name).ok_or("id -u failed after useradd")?;
    let gid = id("-g", name).ok_or("id -g failed after useradd")?;
    Ok(Account {
        name: name.to_string(),
        uid,
        gid,
    })
}

/// Puts root's identity back on this thread when dropped.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let root = Some(Uid::from_raw(0));
        rustix::thread::set_thread_res_uid(None, root, None)
            .expect("back to euid 0 (the saved uid)");
        rustix::thread::set_thread_res_gid(None, Some(Gid::from_raw(0)), None)
            .expect("back to egid 0");
        rustix::thread::set_thread_groups(&[Gid::from_raw(0)]).expect("back to root's groups");
    }
}

/// Runs `f` with this thread acting as `account` (see the module docs).
pub fn as_user<T>(account: &Account, f: impl FnOnce() -> T) -> T {
    let gid = Gid::from_raw(account.gid);
    rustix::thread::set_thread_groups(&[gid]).expect("setting the account's groups");
    let restore = Restore;
    rustix::thread::set_thread_res_gid(None, Some(gid), None).expect("setting the egid");
    rustix::thread::set_thread_res_uid(None, Some(Uid::from_raw(account.uid)), None)
        .expect("setting the euid");
    let out = f();
    drop(restore);
    out
}
