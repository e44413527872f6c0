//! What `nf` says when it cannot reach a server: each cause once, a hint that fits the
//! errno (not "is nf serve running?" for everything), and hints that name the flags of
//! the command the user ran (the gateway's own, not the file commands').

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nf_testkit::users::test_account;

const NF: &str = env!("CARGO_BIN_EXE_nf");
/// Every command here fails or answers at once; this only keeps a broken one from hanging.
const BOUND: Duration = Duration::from_secs(30);

fn run(cmd: &mut Command) -> Output {
    nf_testkit::output_within(cmd.env_remove("NF_ADDR"), BOUND)
}

/// The error line of `nf ls TARGET`, which must fail with status 1.
fn ls_error(target: &str, as_uid: Option<u32>) -> String {
    let mut cmd = Command::new(NF);
    cmd.args(["ls", target]);
    if let Some(uid) = as_uid {
        cmd.uid(uid).gid(uid);
    }
    let out = run(&mut cmd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "nf ls {target}: {stderr}");
    stderr
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn a_missing_socket_is_said_once_and_asks_whether_nf_serve_runs() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let err = ls_error(&format!("unix:{}:/", sock.display()), None);
    assert_eq!(count(&err, "No such file or directory"), 1, "{err}");
    assert_eq!(count(&err, "none.sock"), 1, "the address once: {err}");
    assert!(err.contains("is `nf serve` running there"), "{err}");
}

#[test]
fn a_refused_tcp_connection_asks_whether_nf_serve_runs() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let err = ls_error(&format!("tcp:127.0.0.1:{port}:/"), None);
    assert_eq!(count(&err, "Connection refused"), 1, "{err}");
    assert_eq!(count(&err, &format!("127.0.0.1:{port}")), 1, "{err}");
    assert!(err.contains("is `nf serve` running there"), "{err}");
}

#[test]
fn a_socket_without_permission_points_at_its_permissions() {
    let user = test_account().expect("the test account");
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock = dir.path().join("private.sock");
    // A listening socket only root may connect to: connect(2) fails with EACCES.
    let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o600)).unwrap();
    let err = ls_error(&format!("unix:{}:/", sock.display()), Some(user.uid));
    assert_eq!(count(&err, "Permission denied"), 1, "{err}");
    assert!(err.contains("permissions of the socket"), "{err}");
    assert!(!err.contains("nf serve` running"), "{err}");
}

#[test]
fn a_name_that_does_not_resolve_points_at_the_name() {
    let err = ls_error("tcp:nf-no-such-host.invalid:564:/", None);
    assert!(
        err.contains("resolving nf-no-such-host.invalid:564"),
        "{err}"
    );
    assert!(err.contains("check the host name"), "{err}");
    assert!(!err.contains("nf serve` running"), "{err}");
    assert!(!err.contains("unresolvable"), "{err}");
}

/// `nf cat ADDR:/status` until `done` accepts it (bounded).
fn wait_status(addr: &str, done: impl Fn(&str) -> bool) -> String {
    let start = Instant::now();
    loop {
        let out = run(Command::new(NF).args(["cat", &format!("{addr}:/status")]));
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && done(&text) {
            return text;
        }
        assert!(
            start.elapsed() < BOUND,
            "status never showed it:\n{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `nf gateway -f` until dropped.
struct Gateway(std::process::Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_gateway(dir: &Path, toml: &str) -> (Gateway, String) {
    let config = dir.join("gw.toml");
    std::fs::write(&config, toml).unwrap();
    let sock = dir.join("gw.sock");
    let child = Command::new(NF)
        .args(["gateway", "-f", "--config"])
        .arg(&config)
        .arg("--unix")
        .arg(&sock)
        .env("NF_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nf gateway");
    (Gateway(child), format!("unix:{}", sock.display()))
}

#[test]
fn a_gateway_without_a_certificate_names_its_own_tls_flags() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens there: the gateway gives up before dialling, for want of a
    // certificate to present.
    let (_gw, addr) = start_gateway(
        dir.path(),
        "[[member]]\nname = \"node1\"\naddr = \"tls:127.0.0.1:1\"\n",
    );
    let status = wait_status(&addr, |s| s.contains("reason="));
    let line = status.lines().find(|l| l.contains("node1")).unwrap();
    assert!(
        line.contains("--tls-cert FILE --tls-key FILE --tls-client-ca FILE"),
        "{line}"
    );
    assert!(
        !line.contains("--cert FILE --key"),
        "flags nf gateway rejects: {line}"
    );
}

#[test]
fn nf_exec_says_a_connect_failure_once_per_node() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("none.sock");
    let out = run(Command::new(NF)
        .args(["exec", &format!("unix:{}", sock.display()), "--", "true"])
        .stdin(Stdio::null()));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert_eq!(count(&err, "No such file or directory"), 1, "{err}");
    assert_eq!(count(&err, "connecting"), 1, "{err}");
    assert!(err.contains("is `nf serve` running there"), "{err}");
}
