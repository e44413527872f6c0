//! Socket directories and modes: who may reach a server's unix sockets, and who may
//! not replace them.
//!
//! Local sockets are open to every user; the attach check decides who a peer is and
//! what it may do (`nf_node::access`), never the file modes:
//!
//! 1. A socket directory the server makes (`/run/ninefold` by default) is 0755 —
//!    every user may reach the sockets, only the owner may add or remove entries.
//! 2. A socket directory that exists must be a directory of the server's own user or
//!    of root, writable by nobody else (no group or other write bit): whoever may
//!    write to it could replace the server's socket with their own and be talked to
//!    in its place. One that is not is refused, saying why.
//! 3. The unix socket and the shared-memory channel socket are 0666 (connecting to a
//!    unix socket takes write permission on it), set right after binding: until then
//!    nobody else could connect, so no one connects early.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of a socket directory the server makes (rule 1).
const SOCKET_DIR_MODE: u32 = 0o755;
/// Mode of the sockets (rule 3).
const SOCKET_MODE: u32 = 0o666;

/// Makes the directory of the socket `path` (rule 1) or checks the one there (rule
/// 2); on failure, the directory and why.
pub fn socket_dir(path: &Path) -> Result<(), (PathBuf, std::io::Error)> {
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    make_or_check_dir(dir).map_err(|e| (dir.to_path_buf(), e))
}

/// Lets every local user connect to the socket at `path` (rule 3).
pub fn open_to_every_user(path: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(SOCKET_MODE))
}

fn make_or_check_dir(dir: &Path) -> std::io::Result<()> {
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(SOCKET_DIR_MODE)
            .create(dir)?;
        // The umask may have narrowed it.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(SOCKET_DIR_MODE))?;
    }
    let meta = std::fs::metadata(dir)?;
    let me = rustix::process::geteuid().as_raw();
    check_dir(&meta, me).map_err(std::io::Error::other)?;
    if meta.mode() & 0o005 != 0o005 {
        tracing::warn!(dir = %dir.display(), mode = format_args!("{:o}", meta.mode() & 0o7777), "other users cannot reach the sockets in this directory; make it 0755 to let them attach (as themselves)");
    }
    Ok(())
}

/// Rule 2 for a directory with metadata `meta`, for a server running as `me`.
fn check_dir(meta: &std::fs::Metadata, me: u32) -> Result<(), String> {
    let mode = meta.mode() & 0o7777;
    if !meta.is_dir() {
        return Err("refusing it: not a directory".into());
    }
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "refusing it: it belongs to uid {}, not to this server's user (uid {me}) or \
             root, so its owner could replace the server's socket with their own",
            meta.uid()
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "refusing it: its mode {mode:o} lets other users write to it, so they could \
             replace the server's socket with their own; use a directory only its owner \
             may write to (0755)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_directories_others_may_write_to_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let me = rustix::process::geteuid().as_raw();
        let check = |mode: u32, owner: u32| {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode)).unwrap();
            check_dir(&std::fs::metadata(d).unwrap(), owner)
        };
        assert!(check(0o755, me).is_ok());
        assert!(check(0o700, me).is_ok());
        for mode in [0o777, 0o1777, 0o775, 0o757] {
            let e = check(mode, me).expect_err("others may write");
            assert!(e.contains(&format!("{mode:o}")), "{e}");
        }
        if me == 0 {
            assert!(
                check(0o755, 1234).is_ok(),
                "root's directory, another server user"
            );
        } else {
            let e = check(0o755, me + 1).expect_err("another user's directory");
            assert!(e.contains(&format!("uid {me}")), "{e}");
        }
    }

    #[test]
    fn a_missing_socket_directory_is_made_0755_and_the_socket_0666() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("run/ninefold/nf.sock");
        socket_dir(&sock).unwrap();
        let mode = std::fs::metadata(sock.parent().unwrap()).unwrap().mode();
        assert_eq!(mode & 0o7777, 0o755);
        let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        open_to_every_user(&sock).unwrap();
        assert_eq!(std::fs::metadata(&sock).unwrap().mode() & 0o777, 0o666);
        drop(listener);
    }
}
