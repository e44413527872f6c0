//! Attack: becoming root over loopback tcp by closing the socket before the server asks
//! the kernel who it is.
//!
//! A client sends `Tversion`, `Tattach uname=root`, a walk and a `Tlcreate` in one go
//! and closes its socket at once. Its socket then lingers in `FIN-WAIT-2` with no file
//! behind it, which `sock_diag` reports as owned by uid 0; a server that believed that
//! answer served the client as root. Two ways to hit the window: many short
//! connections from several threads, and the server stopped (`SIGSTOP`) while the
//! clients connect and close, then continued. Each must leave root's directory as it
//! was, and the server must go on answering its own user. `nf gateway` on plain
//! loopback tcp decides who a peer is the same way, and a root attach there is root
//! on every member: the same attack through it.

mod serve_support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use nf_ninep::message::{Tattach, Tlcreate, Tlopen, Tversion, Twalk, Twrite};
use nf_ninep::types::{NOFID, NONUNAME};
use nf_ninep::{encode_frame, LOpenFlags, Tmessage};
use nf_testkit::users::{as_user, test_account};
use serve_support::{nf, signal, Served, Watchdog};

/// Tries in the racing run, spread over [`THREADS`] threads.
const TRIES: usize = 300;
const THREADS: usize = 4;
/// Tries while the server is stopped (each succeeded on the old code).
const PAUSED_TRIES: usize = 5;

/// `Tversion` and `Tattach uname=root` (fid 0), then `then`, as whole frames.
fn as_root(then: Vec<Tmessage>) -> Vec<u8> {
    let mut msgs: Vec<Tmessage> = vec![
        Tversion {
            msize: 8192,
            version: "9P2000.L".into(),
        }
        .into(),
        Tattach {
            fid: 0,
            afid: NOFID,
            uname: "root".into(),
            aname: String::new(),
            n_uname: NONUNAME,
        }
        .into(),
    ];
    msgs.extend(then);
    let mut out = Vec::new();
    for (tag, m) in msgs.iter().enumerate() {
        let tag = if tag == 0 { u16::MAX } else { tag as u16 };
        encode_frame(tag, m, u32::MAX, &mut out).expect("encode");
    }
    out
}

/// One attempt to create `name` in directory `dir` as root.
fn create_as_root(dir: &[&str], name: &str) -> Vec<u8> {
    as_root(vec![
        Twalk {
            fid: 0,
            newfid: 1,
            wnames: dir.iter().map(|d| d.to_string()).collect(),
        }
        .into(),
        Tlcreate {
            fid: 1,
            name: name.into(),
            flags: LOpenFlags(LOpenFlags::WRONLY.0 | LOpenFlags::CREATE.0),
            mode: 0o644,
            gid: 0,
        }
        .into(),
        Twrite {
            fid: 1,
            offset: 0,
            data: b"written as root\n".as_slice().into(),
        }
        .into(),
    ])
}

/// One attempt to open a job session (`xcpu/clone`) as root.
fn session_as_root() -> Vec<u8> {
    as_root(vec![
        Twalk {
            fid: 0,
            newfid: 1,
            wnames: vec!["xcpu".into(), "clone".into()],
        }
        .into(),
        Tlopen {
            fid: 1,
            flags: LOpenFlags::RDONLY,
        }
        .into(),
    ])
}

/// Connects to `addr`, sends one attempt and closes at once; the socket is made on a
/// thread acting as the unprivileged account, so the kernel records that account.
fn attempt(addr: SocketAddr, frames: &[u8]) {
    if let Ok(mut s) = TcpStream::connect(addr) {
        let _ = s.write_all(frames);
    }
}

/// Waits until no client socket towards `addr` still waits for its FIN to be
/// acknowledged (`FIN-WAIT-1` in `/proc/net/tcp`).
fn fins_acknowledged(addr: SocketAddr) {
    const FIN_WAIT1: &str = "04";
    let remote = format!(":{:04X}", addr.port());
    nf_testkit::eventually(
        "the clients' FINs acknowledged",
        Duration::from_secs(20),
        || {
            let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
            !table.lines().skip(1).any(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 3 && f[2].ends_with(&remote) && f[3] == FIN_WAIT1
            })
        },
    );
}

/// Files the attempts made (`pwned-*`) in the export.
fn planted(s: &Served) -> Vec<String> {
    std::fs::read_dir(&s.export)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("pwned-"))
        .collect()
}

/// A root server whose export is root's 0755 directory: nobody else may create in it.
fn root_server() -> Served {
    let s = Served::start(&["--tcp", "127.0.0.1:0"]);
    std::fs::set_permissions(&s.export, std::fs::Permissions::from_mode(0o755)).unwrap();
    s
}

/// Waits until the server has dealt with what it accepted: it answers a fresh client
/// (its own attach comes after every queued connection's), then a little longer for
/// requests that ran on workers.
fn settle(s: &Served) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let out = s.run(&["ls", &s.at("/")]);
        if out.status.success() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
}

#[test]
fn a_user_who_closes_at_once_is_never_served_as_root() {
    let user = test_account().expect("the test account");
    let s = root_server();
    let addr = s.tcp_addr();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let user = &user;
            scope.spawn(move || {
                as_user(user, || {
                    for i in 0..TRIES / THREADS {
                        attempt(addr, &create_as_root(&["fs"], &format!("pwned-{t}-{i}")));
                    }
                })
            });
        }
    });
    settle(&s);
    assert_eq!(planted(&s), Vec::<String>::new(), "served as root");
}

#[test]
fn a_user_who_closes_while_the_server_is_stopped_is_never_served_as_root() {
    let user = test_account().expect("the test account");
    let s = root_server();
    let addr = s.tcp_addr();
    signal(s.child.id(), "STOP");
    // Connections complete in the kernel's backlog while the server is stopped.
    as_user(&user, || {
        for i in 0..PAUSED_TRIES {
            attempt(addr, &create_as_root(&["fs"], &format!("pwned-paused-{i}")));
        }
    });
    // The clients' FINs have arrived (the kernel acknowledges them while the server is
    // stopped): their sockets are in FIN-WAIT-2 when the server looks.
    fins_acknowledged(addr);
    signal(s.child.id(), "CONT");
    settle(&s);
    assert_eq!(planted(&s), Vec::<String>::new(), "served as root");
    // The user is still served as themselves over the same listener.
    let out = s.run(&["ls", &format!("tcp:{addr}:/")]);
    assert!(
        out.status.success(),
        "a live client is still served over tcp: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `nf gateway -f --tcp 127.0.0.1:0` in front of `node` (over its unix socket, where
/// the gateway, run as root, may attach for anyone); killed when dropped.
struct Gateway {
    child: std::process::Child,
    addr: SocketAddr,
    /// What it logged (stderr), line by line.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Gateway {
    fn start(node: &Served) -> Gateway {
        use std::io::{BufRead, BufReader};
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("gateway.toml");
        std::fs::write(
            &conf,
            format!("[[member]]\nname = \"node1\"\naddr = \"{}\"\n", node.addr()),
        )
        .unwrap();
        let mut child = nf()
            .args(["gateway", "-f", "--tcp", "127.0.0.1:0", "--unix"])
            .arg(dir.path().join("gw.sock"))
            .arg("--config")
            .arg(&conf)
            .env("NF_LOG", "warn")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start nf gateway");
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stderr = child.stderr.take().unwrap();
        let lines = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(line);
            }
        });
        let watchdog = Watchdog::new(child.id());
        let (tx, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        // Read on until the gateway ends: it prints more after its address.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(a) = line.strip_prefix("nf gateway: listening on tcp:") {
                    let _ = tx.send(a.parse::<SocketAddr>().expect("an address"));
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the gateway says where it listens");
        drop(watchdog);
        Gateway {
            child,
            addr,
            log,
            _dir: dir,
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_user_who_closes_at_once_is_never_root_through_the_gateway() {
    let user = test_account().expect("the test account");
    let node = root_server();
    let gw = Gateway::start(&node);
    let addr = gw.addr;
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            let user = &user;
            scope.spawn(move || {
                as_user(user, || {
                    for _ in 0..TRIES / THREADS {
                        attempt(addr, &session_as_root());
                    }
                })
            });
        }
    });
    signal(gw.child.id(), "STOP");
    as_user(&user, || {
        for _ in 0..PAUSED_TRIES {
            attempt(addr, &session_as_root());
        }
    });
    fins_acknowledged(addr);
    signal(gw.child.id(), "CONT");
    settle(&node);
    // The gateway's own queue: a client after the attackers is answered once they are
    // dealt with.
    let out = nf()
        .args(["ls", &format!("tcp:{addr}:/n/node1/")])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::thread::sleep(Duration::from_millis(500));
    // A session the gateway placed for root would be root's on the node (it lingers
    // there for 30 s after its client is gone).
    let procs = node.run(&["cat", &node.at("/xcpu/procs")]);
    let procs = String::from_utf8_lossy(&procs.stdout);
    assert!(
        !procs.lines().any(|l| l.split(' ').nth(1) == Some("root")),
        "a session was made as root through the gateway:\n{procs}"
    );
    // Hundreds of refusals are counted, not each logged (one in full, then one summary
    // per 10 s).
    let log = gw.log.lock().unwrap();
    let refusals = log.iter().filter(|l| l.contains("refused")).count();
    assert!(
        (1..=3).contains(&refusals),
        "{refusals} lines about refused attaches:\n{}",
        log.join("\n")
    );
}
