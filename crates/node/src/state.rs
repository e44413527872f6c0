//! The server's state directory: where it keeps what it makes on the host for its
//! clients (today `/xcpu`'s upload directories), never at a path another user could
//! guess and take first (a directory made in `/tmp` before the server starts would
//! stop it, or worse, be used by it).
//!
//! | server | state directory |
//! |---|---|
//! | `--state-dir DIR` | `DIR` |
//! | root | `/run/ninefold` |
//! | a user with `XDG_RUNTIME_DIR` | `$XDG_RUNTIME_DIR/ninefold` |
//! | a user without | a new `ninefold.XXXXXX` in the temporary directory (`mkdtemp`), removed when the server stops |
//!
//! Rules:
//!
//! 1. A missing state directory is made, mode 0755, if its parent exists (only the
//!    last component; nothing above it is made).
//! 2. One that exists must be a directory (not a symbolic link to one), owned by the
//!    server's effective user, and writable by nobody else: whoever could rename
//!    entries in it could swap what the server makes there for a link. Anything else
//!    is refused with an error naming `--state-dir`.
//! 3. Others may search it (0711 at least; the server adds the bits if missing): jobs
//!    reach their own directories inside by path, as their users.
//! 4. What the server makes inside is made with unguessable names
//!    ([`StateDir::private_dir`], `mkdtemp`): several servers share one state
//!    directory, as the tests' do.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The state directory of a server running as root.
pub const ROOT_STATE_DIR: &str = "/run/ninefold";

/// Why the state directory cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// It could not be made, or read.
    #[error("the state directory {}: {source} (choose another with --state-dir DIR)", dir.display())]
    Io {
        /// The directory.
        dir: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// It is not a directory of the server's user that only that user may write.
    #[error("refusing the state directory {}: {why}; the server keeps its clients' files there, so it must be a directory of the server's own user (uid {euid}) that nobody else may write (fix it, or choose another with --state-dir DIR)", dir.display())]
    Unsafe {
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        why: String,
        /// The server's effective uid.
        euid: u32,
    },
}

/// A checked state directory (see the module docs).
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    /// The fresh directory of a server without a better place, removed on drop.
    _fresh: Option<tempfile::TempDir>,
}

impl StateDir {
    /// The state directory `given` (`--state-dir`), else the default for this
    /// server's user (the table in the module docs), made and checked (rules 1–3).
    pub fn open(given: Option<&Path>) -> Result<StateDir, StateError> {
        let euid = rustix::process::geteuid();
        let path = match given {
            Some(dir) => dir.to_path_buf(),
            None if euid.is_root() => PathBuf::from(ROOT_STATE_DIR),
            None => match std::env::var_os("XDG_RUNTIME_DIR") {
                Some(run) if !run.is_empty() => PathBuf::from(run).join("ninefold"),
                _ => return StateDir::fresh(),
            },
        };
        let io = |source| StateError::Io {
            dir: path.clone(),
            source,
        };
        match std::fs::DirBuilder::new().mode(0o755).create(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        check(&path, euid.as_raw())?;
        Ok(StateDir { path, _fresh: None })
    }

    /// A new `ninefold.XXXXXX` in the temporary directory, removed on drop.
    fn fresh() -> Result<StateDir, StateError> {
        let dir = tempfile::Builder::new()
            .prefix("ninefold.")
            .permissions(std::fs::Permissions::from_mode(0o711))
            .tempdir()
            .map_err(|source| StateError::Io {
                dir: std::env::temp_dir(),
                source,
            })?;
        Ok(StateDir {
            path: dir.path().to_path_buf(),
            _fresh: Some(dir),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes a new directory `PREFIX.XXXXXX` inside (rule 4) with permission bits
    /// `mode`; the caller removes it.
    pub fn private_dir(&self, prefix: &str, mode: u32) -> io::Result<PathBuf> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("{prefix}."))
            .permissions(std::fs::Permissions::from_mode(mode))
            .tempdir_in(&self.path)?
            .keep();
        // The umask may have taken bits the caller asked for.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode))?;
        Ok(dir)
    }
}

/// Rules 2 and 3 for `dir`, for a server of effective uid `euid`.
fn check(dir: &Path, euid: u32) -> Result<(), StateError> {
    let meta = std::fs::symlink_metadata(dir).map_err(|source| StateError::Io {
        dir: dir.to_path_buf(),
        source,
    })?;
    let mode = meta.mode() & 0o7777;
    let why = if meta.file_type().is_symlink() {
        Some("it is a symbolic link".to_string())
    } else if !meta.is_dir() {
        Some("it is not a directory".to_string())
    } else if meta.uid() != euid {
        Some(format!("it belongs to uid {}", meta.uid()))
    } else if mode & 0o022 != 0 {
        Some(format!("others may write in it (mode {mode:04o})"))
    } else {
        None
    };
    if let Some(why) = why {
        return Err(StateError::Unsafe {
            dir: dir.to_path_buf(),
            why,
            euid,
        });
    }
    if mode & 0o011 != 0o011 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o011)).map_err(
            |source| StateError::Io {
                dir: dir.to_path_buf(),
                source,
            },
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_directory_is_made_checked_and_holds_unguessable_directories() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let state = StateDir::open(Some(&dir)).unwrap();
        assert_eq!(state.path(), dir);
        let meta = std::fs::metadata(&dir).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o755);
        let a = state.private_dir("xcpu", 0o711).unwrap();
        let b = state.private_dir("xcpu", 0o711).unwrap();
        assert_ne!(a, b, "two servers, two directories");
        assert_eq!(a.parent(), Some(dir.as_path()));
        assert!(a
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("xcpu."));
        assert_eq!(std::fs::metadata(&a).unwrap().mode() & 0o777, 0o711);
        // A missing parent is not made.
        let deep = tmp.path().join("no/such/state");
        assert!(matches!(
            StateDir::open(Some(&deep)),
            Err(StateError::Io { .. })
        ));
    }

    #[test]
    fn others_get_search_permission_and_a_directory_others_may_write_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        StateDir::open(Some(&dir)).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o711);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = StateDir::open(Some(&dir)).unwrap_err().to_string();
        assert!(
            err.contains("others may write") && err.contains("--state-dir"),
            "{err}"
        );
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(tmp.path(), &link).unwrap();
        let err = StateDir::open(Some(&link)).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }
}
