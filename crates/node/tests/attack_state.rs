//! The server's state directory against an unprivileged account: a
//! path in `/tmp` the user made first must not stop a root server, and a state
//! directory another user owns or may write is refused, naming `--state-dir`.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nf_node::xcpu::XcpuConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_testkit::users::{as_user, test_account};

/// A root server on a socket in `dir`, keeping its state in `state` (xcpu's uploads
/// at the default place there).
fn start(dir: &Path, state: &Path) -> Result<Daemon, nf_node::ServeError> {
    Daemon::start(&ServeConfig {
        unix: Some(dir.join("nf.sock")),
        node: NodeConfig {
            state_dir: Some(state.to_path_buf()),
            xcpu: XcpuConfig::default(),
            mem_registry: Some(dir.join("mem")),
            ..NodeConfig::default()
        },
        ..ServeConfig::default()
    })
}

/// Removes a path the test user made, when dropped.
struct Squat(PathBuf);

impl Drop for Squat {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_squatted_tmp_path_does_not_stop_a_root_server() {
    let user = test_account().unwrap();
    // Where the upload directory used to be: the temporary directory, named after the
    // server's pid (this process's, for an in-process server). The user takes it.
    let old = std::env::temp_dir().join(format!("nf-xcpu-{}", std::process::id()));
    let _squat = Squat(old.clone());
    as_user(&user, || std::fs::create_dir(&old)).expect("the user squats the old path");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let daemon = start(dir.path(), &state).expect("the squat does not stop the server");
    let base = daemon.xcpu().base().to_path_buf();
    assert_eq!(
        base.parent(),
        Some(state.as_path()),
        "uploads live in the state dir"
    );
    let name = base.file_name().unwrap().to_str().unwrap();
    assert!(
        name.starts_with("xcpu.") && name.len() > "xcpu.".len() + 4,
        "{name}"
    );
    let meta = std::fs::metadata(&base).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o777), (0, 0o711));
    assert_eq!(
        std::fs::metadata(&old).unwrap().uid(),
        user.uid,
        "the squatted path is left alone"
    );
    daemon.shutdown(Duration::from_secs(5));
    assert!(!base.exists(), "removed at shutdown");
}

#[test]
fn two_servers_sharing_a_state_dir_get_unguessable_upload_directories() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(dir.path().join("a")).unwrap();
    std::fs::create_dir_all(dir.path().join("b")).unwrap();
    let a = start(&dir.path().join("a"), &state).unwrap();
    let b = start(&dir.path().join("b"), &state).unwrap();
    assert_ne!(a.xcpu().base(), b.xcpu().base());
    a.shutdown(Duration::from_secs(5));
    b.shutdown(Duration::from_secs(5));
}

#[test]
fn a_state_dir_of_another_user_or_writable_by_others_is_refused() {
    let user = test_account().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::os::unix::fs::chown(&state, Some(user.uid), Some(user.gid)).unwrap();
    let err = start(dir.path(), &state)
        .expect_err("another user's")
        .to_string();
    assert!(
        err.contains(&format!("belongs to uid {}", user.uid)) && err.contains("--state-dir"),
        "{err}"
    );
    std::os::unix::fs::chown(&state, Some(0), Some(0)).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let err = start(dir.path(), &state)
        .expect_err("writable by others")
        .to_string();
    assert!(
        err.contains("others may write") && err.contains("--state-dir"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&state).unwrap().count(),
        0,
        "nothing made in a refused state dir"
    );
}
