//! A node registers itself with a gateway (`nf serve --join`), and a user reaches it
//! through the gateway in their own name: the real `nf serve`, `nf gateway` and `nf`
//! client, over TLS on loopback, with certificates from `nf cert`. Needs root (the
//! node serves the unprivileged test account).

use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nf_testkit::users::test_account;

const NF: &str = env!("CARGO_BIN_EXE_nf");
/// Every command here ends in seconds; this only keeps a broken one from hanging.
const BOUND: Duration = Duration::from_secs(30);

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn run(cmd: &mut Command) -> Output {
    nf_testkit::output_within(cmd.stdin(Stdio::null()), BOUND)
}

struct Killed(Vec<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn a_node_that_joins_is_reached_through_the_gateway_as_the_user() {
    let user = test_account().expect("the test account").name;
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = dir.path().to_str().unwrap().to_string();
    let export = dir.path().join("export");
    std::fs::create_dir(&export).unwrap();
    std::fs::set_permissions(&export, std::fs::Permissions::from_mode(0o777)).unwrap();
    for args in [
        vec!["ca"],
        vec!["node", "127.0.0.1"],
        vec!["gateway", "gw", "--host", "127.0.0.1"],
        vec!["user", &user],
    ] {
        let out = run(Command::new(NF).arg("cert").args(&args).args(["--dir", &d]));
        assert!(
            out.status.success(),
            "nf cert {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (gw_port, node_port) = (free_port(), free_port());
    let tls = |name: &str| {
        vec![
            "--tls-cert".to_string(),
            format!("{d}/{name}.pem"),
            "--tls-key".to_string(),
            format!("{d}/{name}.key"),
            "--tls-client-ca".to_string(),
            format!("{d}/ca.pem"),
        ]
    };
    let spawn = |args: Vec<String>| {
        Command::new(NF)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a server")
    };
    let mut gateway = vec![
        "gateway".into(),
        "-f".into(),
        "--tcp".into(),
        format!("127.0.0.1:{gw_port}"),
    ];
    gateway.extend(tls("gw"));
    let mut node = vec![
        "serve".into(),
        "-f".into(),
        "--tcp".into(),
        format!("127.0.0.1:{node_port}"),
    ];
    node.extend(tls("127.0.0.1"));
    node.extend(
        [
            "--unix",
            &format!("{d}/run/nf.sock"),
            "--export",
            export.to_str().unwrap(),
            "--xcpu-dir",
            &format!("{d}/xcpu"),
            "--trust-gateway",
            "gw",
            "--label",
            "gpu",
            "--join",
            &format!("tls:127.0.0.1:{gw_port}"),
        ]
        .map(String::from),
    );
    let _servers = Killed(vec![spawn(gateway), spawn(node)]);

    let nf = |args: &[&str]| {
        run(Command::new(NF)
            .args(args)
            .args(["--cert", &format!("{d}/{user}.pem")])
            .args(["--key", &format!("{d}/{user}.key")])
            .args(["--ca", &format!("{d}/ca.pem")]))
    };
    let gw = format!("tls:127.0.0.1:{gw_port}");
    let start = Instant::now();
    loop {
        let out = nf(&["cat", &format!("{gw}:/status")]);
        let status = String::from_utf8_lossy(&out.stdout).into_owned();
        if status.contains("127.0.0.1 up node") {
            assert!(
                status.contains("labels=gpu"),
                "the node's labels show:\n{status}"
            );
            break;
        }
        assert!(start.elapsed() < BOUND, "the node never joined:\n{status}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let file = format!("{gw}:/n/127.0.0.1/fs/joined.txt");
    let mut write = Command::new(NF);
    write
        .args(["write", &file])
        .args(["--cert", &format!("{d}/{user}.pem")])
        .args(["--key", &format!("{d}/{user}.key")])
        .args(["--ca", &format!("{d}/ca.pem")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = write.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"via the gateway\n")
        .unwrap();
    let out = nf_testkit::finish_within(child, BOUND, "nf write");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made = export.join("joined.txt");
    assert_eq!(std::fs::read(&made).unwrap(), b"via the gateway\n");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(&made).unwrap().uid(),
        test_account().unwrap().uid,
        "the node acted as the user, not as the gateway"
    );
    // A job placed through the gateway is tagged with the node it ran on.
    let out = run(Command::new(NF)
        .args(["exec", &gw])
        .args(["--cert", &format!("{d}/{user}.pem")])
        .args(["--key", &format!("{d}/{user}.key")])
        .args(["--ca", &format!("{d}/ca.pem")])
        .args(["--", "/bin/echo", "placed"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "127.0.0.1: placed\n");
    let out = nf(&["ls", &format!("{gw}:/n")]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "127.0.0.1/");
}
