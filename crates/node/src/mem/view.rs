//! The memory registry as the daemon sees it: which entries it believes, and which
//! procs each user may see.
//!
//! 1. **Trusted**: the entry's file belongs to the user who owns the process it names
//!    (so nobody can point the daemon at another user's process), and that user is
//!    the daemon's own — a root daemon trusts every user's entries.
//! 2. **Alive**: the pid runs and started when the entry says ([`Entry::alive`]);
//!    a SIGKILLed rank's leftover file, or its pid reused, shows nothing.
//! 3. **Visible** to the attached user `who`: root sees every proc, anyone else only
//!    processes they own.
//!
//! The registry is read afresh at every lookup: nothing cached can show a dead rank.

use std::path::{Path, PathBuf};

use nf_memreg::{process_uid, read_entry, scan, valid_job, Entry};

/// A proc the daemon may serve: its entry, and the uid owning it.
#[derive(Clone, Debug)]
pub struct Proc {
    /// The registry entry.
    pub entry: Entry,
    /// Who owns the process.
    pub uid: u32,
}

/// The registry directory, read with the rules of the module docs.
pub struct View {
    dir: PathBuf,
    daemon_uid: u32,
}

/// Rule 1: an entry in a file owned by `file_uid`, naming a process owned by
/// `proc_uid`, read by a daemon running as `daemon_uid`.
pub fn trusted(daemon_uid: u32, file_uid: u32, proc_uid: u32) -> bool {
    file_uid == proc_uid && (daemon_uid == 0 || file_uid == daemon_uid)
}

/// Rule 3: may `who` see a process owned by `proc_uid`?
pub fn visible(who: u32, proc_uid: u32) -> bool {
    who == 0 || who == proc_uid
}

impl View {
    /// The registry at `dir`, for a daemon running as `daemon_uid`.
    pub fn new(dir: PathBuf, daemon_uid: u32) -> View {
        View { dir, daemon_uid }
    }

    /// The registry directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// An entry read from the registry, if rules 1–3 let `who` see it.
    fn admit(&self, who: u32, (entry, file_uid): (Entry, u32)) -> Option<Proc> {
        let uid = process_uid(entry.pid)?;
        let ok = trusted(self.daemon_uid, file_uid, uid) && entry.alive() && visible(who, uid);
        ok.then_some(Proc { entry, uid })
    }

    /// Every proc `who` may see.
    pub fn procs(&self, who: u32) -> Vec<Proc> {
        if as_server().is_err() {
            return Vec::new();
        }
        scan(&self.dir)
            .into_iter()
            .filter_map(|e| self.admit(who, e))
            .collect()
    }

    /// Proc `rank` of `job`, if `who` may see it.
    pub fn proc(&self, who: u32, job: &str, rank: u32) -> Option<Proc> {
        if !valid_job(job) {
            return None;
        }
        as_server().ok()?;
        let found = read_entry(&self.dir.join(format!("{job}.{rank}")))?;
        self.admit(who, found)
    }
}

/// The registry is the daemon's own bookkeeping, read with its own rights (the
/// attached user may not be able to list it); who may see what is decided above, by
/// rules 1–3, not by the files' permissions.
fn as_server() -> Result<(), nf_ninep::Rlerror> {
    nf_ninep_server::Creds::server().assume()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        assert!(trusted(1000, 1000, 1000));
        assert!(
            !trusted(1000, 1000, 1001),
            "a file pointing at another's process"
        );
        assert!(!trusted(1000, 1001, 1001), "another user's entry");
        assert!(trusted(0, 1001, 1001), "root serves everyone's");
        assert!(
            !trusted(0, 0, 1001),
            "even root's files name only root's processes"
        );
        assert!(visible(0, 1001) && visible(1001, 1001));
        assert!(!visible(1000, 1001) && !visible(1000, 0));
    }
}
