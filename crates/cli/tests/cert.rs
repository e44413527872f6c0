//! `nf cert` makes certificates that `nf serve --tls` and the client accept end to
//! end; a v1 certificate (openssl's default for `x509 -req`) is refused once, saying
//! what is wrong and how to make a good one; a gateway's certificate attaches for a
//! user where `--trust-gateway` names it, and is refused, with the fix logged, where
//! it is not.

mod serve_support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use nf_testkit::users::test_account;
use serve_support::{nf, run_bounded, signal, text, wait_bounded};

/// `nf serve -f` on tcp 127.0.0.1 with TLS, stopped (SIGTERM) when dropped.
struct TlsServer {
    child: Child,
    port: u16,
}

impl TlsServer {
    fn start(dir: &Path) -> TlsServer {
        TlsServer::start_with(dir, &[])
    }

    /// As [`TlsServer::start`], with `extra` arguments for `nf serve`.
    fn start_with(dir: &Path, extra: &[&str]) -> TlsServer {
        let mut child = nf()
            .args(["serve", "-f", "--no-unix", "--tcp", "127.0.0.1:0"])
            .args(["--tls-cert", "localhost.pem", "--tls-key", "localhost.key"])
            .args(["--tls-client-ca", "ca.pem", "--export", "."])
            .args(extra)
            .current_dir(dir)
            .env("NF_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("serve.err")).unwrap())
            .spawn()
            .expect("start nf serve");
        let mut port = None;
        // The server prints its addresses, then a ready line (bounded: it exits on error).
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            if line.starts_with("nf serve: ready") {
                break;
            }
            port = port.or_else(|| line.rsplit([':', '!']).next()?.parse().ok());
        }
        TlsServer {
            port: port.expect("nf serve printed no listening address"),
            child,
        }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        signal(self.child.id(), "TERM");
        wait_bounded(&mut self.child);
    }
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = run_bounded(nf().args(args).current_dir(dir));
    assert!(out.status.success(), "nf {args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

/// This process's user name: the server only lets a certificate attach as an account
/// of its host.
fn me() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    text(&out.stdout).trim().to_string()
}

#[test]
fn nf_cert_files_work_end_to_end_and_a_v1_certificate_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let user = me();
    ok(d, &["cert", "ca"]);
    ok(d, &["cert", "node", "localhost"]);
    // The tests run as root, whose certificate needs --force.
    ok(d, &["cert", "user", &user, "--force"]);
    std::fs::write(d.join("hello.txt"), "hi\n").unwrap();
    let server = TlsServer::start(d);
    let at = |path: &str| format!("tls:localhost:{}:{path}", server.port);
    let (cert, key) = (format!("{user}.pem"), format!("{user}.key"));
    let creds = [
        "--cert",
        cert.as_str(),
        "--key",
        key.as_str(),
        "--ca",
        "ca.pem",
    ];
    let mut args = vec!["cat"];
    args.extend(creds);
    let target = at("/fs/hello.txt");
    args.push(&target);
    assert_eq!(ok(d, &args), "hi\n");

    // The same user, signed by the same CA, but as `openssl x509 -req` makes it: v1.
    let sh = format!(
        "openssl req -new -newkey rsa:2048 -nodes -keyout v1.key -subj /CN={user} -out v1.csr \
         && openssl x509 -req -in v1.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
         -out v1.pem -days 2"
    );
    let out = run_bounded(Command::new("sh").args(["-c", &sh]).current_dir(d));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run_bounded(
        nf().args([
            "ls", "--cert", "v1.pem", "--key", "v1.key", "--ca", "ca.pem",
        ])
        .arg(at("/"))
        .current_dir(d),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert_eq!(err.lines().count(), 1, "one report:\n{err}");
    for want in [
        "v1.pem",
        "X.509 v1",
        "needs v3",
        "nf cert user NAME",
        "-extfile",
    ] {
        assert!(err.contains(want), "want {want:?} in {err}");
    }

    // A client that does present the v1 certificate (openssl's): the server's log
    // says once what is wrong with it, even after a port probe that hung up (counted
    // apart, so the probe's line does not hide this one).
    drop(std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap());
    let sh = format!(
        "openssl s_client -connect 127.0.0.1:{} -servername localhost -cert v1.pem \
         -key v1.key -CAfile ca.pem < /dev/null",
        server.port
    );
    run_bounded(Command::new("sh").args(["-c", &sh]).current_dir(d));
    drop(server);
    let log = std::fs::read_to_string(d.join("serve.err")).unwrap();
    assert_eq!(log.matches("not X.509 v3").count(), 1, "{log}");
}

#[test]
fn nf_cert_keeps_existing_files_and_needs_a_ca() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = run_bounded(nf().args(["cert", "user", "alice"]).current_dir(d));
    assert!(
        text(&out.stderr).contains("nf cert ca"),
        "{}",
        text(&out.stderr)
    );
    ok(d, &["cert", "ca"]);
    let before = std::fs::read(d.join("ca.key")).unwrap();
    let out = run_bounded(nf().args(["cert", "ca"]).current_dir(d));
    assert!(!out.status.success());
    assert_eq!(std::fs::read(d.join("ca.key")).unwrap(), before);
}

#[test]
fn a_gateway_certificate_attaches_for_users_where_the_node_trusts_it() {
    let user = test_account().expect("the test account").name;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["cert", "ca"]);
    ok(d, &["cert", "node", "localhost"]);
    ok(d, &["cert", "gateway", "gw1", "--host", "localhost"]);
    ok(d, &["cert", "gateway", "gw2"]);
    let out = run_bounded(
        Command::new("openssl")
            .args([
                "x509",
                "-noout",
                "-subject",
                "-ext",
                "subjectAltName,extendedKeyUsage",
            ])
            .args(["-in", "gw1.pem"])
            .current_dir(d),
    );
    let shown = text(&out.stdout);
    for want in [
        "CN=gw1",
        "OU=ninefold gateway",
        "DNS:localhost",
        "TLS Web Server Authentication",
        "TLS Web Client Authentication",
    ] {
        assert!(
            shown.replace(" = ", "=").contains(want),
            "want {want:?} in {shown}"
        );
    }
    let server = TlsServer::start_with(
        d,
        &[
            "--trust-gateway",
            "gw1",
            "--label",
            "gpu",
            "--label",
            "rack3",
        ],
    );
    let status = format!("tls:localhost:{}:/status", server.port);
    let cat_as = |gw: &str| {
        let (cert, key) = (format!("{gw}.pem"), format!("{gw}.key"));
        run_bounded(
            nf().args(["cat", "--cert", &cert, "--key", &key, "--ca", "ca.pem"])
                .args(["--user", &user, &status])
                .current_dir(d),
        )
    };
    let out = cat_as("gw1");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("\nlabels gpu,rack3\n"), "{shown}");
    assert!(shown.contains("\nsessions 0\n"), "{shown}");
    let out = cat_as("gw2");
    assert!(!out.status.success(), "an untrusted gateway is refused");
    drop(server);
    let log = std::fs::read_to_string(d.join("serve.err")).unwrap();
    assert!(
        log.contains("--trust-gateway gw2"),
        "the fix is logged: {log}"
    );
}

#[test]
fn joining_a_gateway_needs_a_node_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["cert", "ca"]);
    ok(d, &["cert", "gateway", "gw1"]);
    let out = run_bounded(
        nf().args(["serve", "-f", "--no-unix", "--tcp", "127.0.0.1:0"])
            .args([
                "--tls-cert",
                "gw1.pem",
                "--tls-key",
                "gw1.key",
                "--tls-client-ca",
                "ca.pem",
            ])
            .args(["--join", "tls:127.0.0.1:9"])
            .current_dir(d),
    );
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("not a node certificate") && err.contains("nf cert node"),
        "{err}"
    );
}

/// `nf cert user` refuses names a certificate should almost never carry, unless
/// `--force`, saying what the certificate would allow; names that cannot be one
/// account's are refused outright. Nothing is written for a refused name.
#[test]
fn a_user_certificate_for_root_or_a_service_name_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["cert", "ca"]);
    let made = |name: &str| {
        d.join(format!("{name}.pem")).exists() || d.join(format!("{name}.key")).exists()
    };
    for (name, why) in [
        ("root", "attach as root (uid 0) to every node"),
        ("node:n1", "reserved for the cluster's own services"),
        ("gateway:gw1", "nf cert gateway NAME"),
    ] {
        let out = run_bounded(nf().args(["cert", "user", name]).current_dir(d));
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{name}: made without --force");
        assert!(
            err.contains(why) && err.contains("--force"),
            "{name}: {err}"
        );
        assert!(!made(name), "{name}: files written");
    }
    for name in ["", "a/b", "bad\nname", "esc\x1b[2J", " padded"] {
        let out = run_bounded(nf().args(["cert", "user", name, "--force"]).current_dir(d));
        assert!(!out.status.success(), "{name:?}: made");
        assert!(!made(name), "{name:?}: files written");
    }
    // With --force it is made, and the warning still says what it allows.
    let out = run_bounded(
        nf().args(["cert", "user", "root", "--force"])
            .current_dir(d),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("uid 0"), "{}", text(&out.stderr));
    assert!(made("root"));
    ok(d, &["cert", "user", "alice"]);
}

/// Attack: anyone who reaches a TLS port can fail handshakes at will. 200 of them must
/// not add 200 lines to the server's log (and `/log`, which every user reads): the
/// first is logged, the rest counted into a line per 10 s.
#[test]
fn a_flood_of_failed_handshakes_is_counted_not_each_logged() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["cert", "ca"]);
    ok(d, &["cert", "node", "localhost"]);
    let server = TlsServer::start(d);
    for _ in 0..200 {
        if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", server.port)) {
            use std::io::Write;
            let _ = s.write_all(b"GET / HTTP/1.0\r\n\r\n");
        }
    }
    // A real client after them is still served.
    let at = format!("tls:localhost:{}:/", server.port);
    let user = me();
    ok(d, &["cert", "user", &user, "--force"]);
    let ls = nf()
        .args([
            "ls",
            "--cert",
            &format!("{user}.pem"),
            "--key",
            &format!("{user}.key"),
        ])
        .args(["--ca", "ca.pem", &at])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(ls.status.success(), "{}", text(&ls.stderr));
    drop(server);
    let log = std::fs::read_to_string(d.join("serve.err")).unwrap();
    let lines = log
        .lines()
        .filter(|l| l.contains("TLS connection refused"))
        .count();
    assert!((1..=2).contains(&lines), "{lines} lines:\n{log}");
}
