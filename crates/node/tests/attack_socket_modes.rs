//! Socket modes of a root `nf serve`: it made its socket directory 0700 and its
//! sockets 0755, so no other local user could even connect, while the README says it
//! serves every user. The sockets are now open to all and the attach check decides:
//! an unprivileged account reaches a root server through its default-style
//! directory (made by the server, as `/run/ninefold` is) over the unix socket and the
//! shared-memory socket, attaches as itself, and still cannot attach as root. A
//! socket directory another user could write to (and so replace the socket in) is
//! refused at start-up.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use nf_ninep::errno::EACCES;
use nf_ninep_client::Client;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_testkit::users::{as_user, test_account};

fn errno<T: std::fmt::Debug>(r: Result<T, nf_ninep_client::ClientError>) -> u32 {
    r.expect_err("must be refused").errno().unwrap_or(0)
}

/// A root server on `sock` and `sock.shm`, its tree without exports.
fn serve(sock: &Path) -> Result<Daemon, nf_node::ServeError> {
    Daemon::start(&ServeConfig {
        unix: Some(sock.to_path_buf()),
        shm: Some(sock.with_extension("sock.shm")),
        node: NodeConfig::default(),
        ..ServeConfig::default()
    })
}

#[test]
fn another_user_reaches_a_root_server_and_attaches_only_as_themselves() {
    let user = test_account().unwrap();
    // As /run: root's, 0755; the server makes `ninefold/` in it.
    let run = tempfile::tempdir().unwrap();
    std::fs::set_permissions(run.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = run.path().join("ninefold/nf.sock");
    let daemon = serve(&sock).expect("start");

    let unix = as_user(&user, || Client::connect_unix(&sock))
        .expect("another user may connect to the unix socket");
    let dir = std::fs::metadata(sock.parent().unwrap()).unwrap();
    assert_eq!(
        (dir.uid(), dir.mode() & 0o7777),
        (0, 0o755),
        "the socket directory: root's, and nobody else may write to it"
    );
    assert_eq!(errno(unix.attach("root", "")), EACCES, "not as root");
    assert_eq!(errno(unix.attach_as("", "", 0)), EACCES, "not as uid 0");
    let me = unix.attach(&user.name, "").expect("as themselves");
    assert!(me.read_file("/status").is_ok());

    let shm = as_user(&user, || {
        nf_ninep_client::Client::connect_shm_with(
            sock.with_extension("sock.shm"),
            Default::default(),
        )
    })
    .expect("another user may set up a shared-memory channel");
    assert_eq!(
        errno(shm.attach("root", "")),
        EACCES,
        "not as root over shm"
    );
    let me = shm.attach(&user.name, "").expect("as themselves over shm");
    assert!(me.read_file("/status").is_ok());
    assert!(daemon.shutdown(Duration::from_secs(5)));
}

#[test]
fn a_socket_directory_other_users_could_write_to_is_refused() {
    let user = test_account().unwrap();
    let base = tempfile::tempdir().unwrap();
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();

    // World-writable (as /tmp): another user could swap the socket for their own.
    let open = base.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let e = serve(&open.join("nf.sock")).expect_err("a world-writable directory");
    let msg = e.to_string();
    assert!(
        msg.contains("1777") && msg.contains("replace the server's socket"),
        "{msg}"
    );

    // Made by the unprivileged user ahead of the server (a squat).
    let squat = base.path().join("squat");
    std::fs::create_dir(&squat).unwrap();
    std::os::unix::fs::chown(&squat, Some(user.uid), Some(user.gid)).unwrap();
    let e = serve(&squat.join("nf.sock")).expect_err("another user's directory");
    let msg = e.to_string();
    assert!(msg.contains(&format!("uid {}", user.uid)), "{msg}");
    assert!(
        !squat.join("nf.sock").exists(),
        "no socket left in a directory the user controls"
    );
}
