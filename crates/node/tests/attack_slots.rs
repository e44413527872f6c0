//! Attack: connection slots. Unprivileged accounts try to take every
//! slot of a root `nf serve` — attached, idle connections holding fids, over the unix
//! socket and loopback tcp, or one person over TLS, a unix socket and shm at once —
//! so that nobody else gets in. Each test then checks that root is still served within
//! a bounded time while the attackers hold and churn their connections.
//!
//! The bound is 5 s, not the 1 s a user would notice: these tests share a loaded 2-core
//! machine with others, and what they must catch is a refusal or a hang, not a delay.

mod support;

use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use nf_link::tls::{client_config, TlsFiles, TlsTransport};
use nf_ninep::errno::EAGAIN;
use nf_ninep::message::Tread;
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, ClientConfig, Fid, File, PendingCall, Root};
use nf_ninep_server::ServerConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_testkit::users::{as_user, second_test_account, test_account, Account};
use support::certs::Ca;

/// How long another user may wait for an answer during an attack (see the module docs).
const ANSWERED_WITHIN: Duration = Duration::from_secs(5);

/// Where a [`Target`] listens.
#[derive(Clone)]
struct Addrs {
    socket: PathBuf,
    shm: PathBuf,
    tcp: SocketAddr,
}

/// A root server on a unix socket, its shm socket and a loopback tcp port (TLS when
/// `tls` is given), in a temporary directory every user can reach.
struct Target {
    daemon: Option<Daemon>,
    _dir: tempfile::TempDir,
    at: Addrs,
}

impl Target {
    fn start(limits: ServerConfig, tls: Option<TlsFiles>) -> Target {
        let dir = tempfile::tempdir().unwrap();
        let open = |p: &std::path::Path, mode| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
        };
        open(dir.path(), 0o755);
        let export = dir.path().join("export");
        std::fs::create_dir(&export).unwrap();
        open(&export, 0o755);
        std::fs::write(export.join("hello.txt"), b"hello").unwrap();
        open(&export.join("hello.txt"), 0o644);
        let socket = dir.path().join("run/nf.sock");
        let shm = dir.path().join("run/nf.sock.shm");
        let daemon = Daemon::start(&ServeConfig {
            unix: Some(socket.clone()),
            shm: Some(shm.clone()),
            tcp: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
            tls,
            node: NodeConfig {
                export: Some(export),
                mem_registry: Some(dir.path().join("mem")),
                ..NodeConfig::default()
            },
            limits,
            ..ServeConfig::default()
        })
        .expect("start the node server");
        open(socket.parent().unwrap(), 0o755);
        open(&socket, 0o777);
        open(&shm, 0o777);
        let tcp = daemon.tcp_addr().expect("a tcp listener");
        Target {
            daemon: Some(daemon),
            _dir: dir,
            at: Addrs { socket, shm, tcp },
        }
    }

    fn clients(&self) -> usize {
        self.daemon.as_ref().unwrap().server().stats().clients
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.shutdown(Duration::from_secs(5));
        }
    }
}

/// An attached session holding a second fid, as `user`, over unix or tcp; `None` if
/// the server refused it.
fn attached(t: &Addrs, user: &Account, tcp: bool) -> Option<(Root, Fid)> {
    as_user(user, || {
        let client = if tcp {
            Client::connect_tcp(t.tcp)
        } else {
            Client::connect_unix(&t.socket)
        };
        let root = client.ok()?.attach(&user.name, "").ok()?;
        let fid = root.walk("/fs").ok()?;
        Some((root, fid))
    })
}

/// Root connects, attaches and reads a file; how long that took.
fn root_is_served(t: &Addrs, tcp: bool) -> Duration {
    let start = Instant::now();
    let client = if tcp {
        Client::connect_tcp(t.tcp)
    } else {
        Client::connect_unix(&t.socket)
    };
    let client = client.unwrap_or_else(|e| panic!("root cannot connect during the attack: {e}"));
    let root = client.attach("root", "").expect("root attaches");
    assert_eq!(root.read_file("/fs/hello.txt").unwrap(), b"hello");
    let took = start.elapsed();
    eprintln!(
        "root served over {} in {took:?}",
        if tcp { "tcp" } else { "unix" }
    );
    took
}

/// Connects, attaches and hangs up as `user`, over and over, until `stop`.
fn churn(t: &Addrs, user: Account, stop: &Arc<AtomicBool>) -> thread::JoinHandle<usize> {
    let (t, stop) = (t.clone(), Arc::clone(stop));
    thread::spawn(move || {
        let mut n = 0;
        let deadline = Instant::now() + Duration::from_secs(60);
        while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
            drop(attached(&t, &user, n % 2 == 1));
            n += 1;
        }
        n
    })
}

#[test]
fn two_users_holding_idle_attached_connections_cannot_lock_root_out() {
    let (a, b) = (test_account().unwrap(), second_test_account().unwrap());
    let target = Target::start(ServerConfig::default(), None);
    let t = &target.at;
    // Each tries to hold 192 attached connections (half unix, half tcp), every one
    // with a fid: what filled the server before (256 slots, 128 per user, only
    // connections holding no fid given up).
    let mut held = Vec::new();
    for user in [&a, &b] {
        let mut mine = 0;
        for i in 0..192 {
            if let Some(s) = attached(t, user, i % 2 == 1) {
                held.push(s);
                mine += 1;
            }
        }
        assert!(mine >= 32, "{} got only {mine} connections", user.name);
    }
    let per_user = ServerConfig::default().max_clients_per_user;
    assert!(
        target.clients() <= 2 * per_user,
        "{} connections held by two users",
        target.clients()
    );
    // While both hold theirs and churn more, root gets in over each transport.
    let stop = Arc::new(AtomicBool::new(false));
    let churners = [churn(t, a.clone(), &stop), churn(t, b.clone(), &stop)];
    for tcp in [false, true, false, true] {
        let took = root_is_served(t, tcp);
        assert!(took < ANSWERED_WITHIN, "root waited {took:?}");
    }
    stop.store(true, Ordering::Relaxed);
    for c in churners {
        c.join().unwrap();
    }
    assert!(
        target.clients() <= 2 * per_user + 2,
        "{} connections",
        target.clients()
    );
    drop(held);
}

/// A session `root` of `user` kept busy: a read of the user's pipe `/pipe/hold-USER`,
/// which nobody writes, stays in flight.
fn busy(root: &Root, user: &Account) -> (File, PendingCall) {
    let pipe = root
        .open(&format!("/pipe/hold-{}", user.name), LOpenFlags::RDONLY)
        .unwrap();
    let read = root
        .client()
        .start(Tread {
            fid: pipe.number(),
            offset: 0,
            count: 16,
        })
        .unwrap();
    (pipe, read)
}

#[test]
fn one_user_over_tls_unix_and_shm_is_one_user_and_cannot_fill_the_server() {
    let user = test_account().unwrap();
    let pki = tempfile::tempdir().unwrap();
    let ca = Ca::new(pki.path(), "cluster");
    let server = ca.issue("server", Some("node"), &["127.0.0.1"], &ca.ca_file());
    let mine = ca.issue("user", Some(&user.name), &[], &ca.ca_file());
    // 8 slots, 4 per user: one person must not take them all by using every transport.
    let limits = ServerConfig::default()
        .max_clients(8)
        .max_clients_per_user(4);
    let target = Target::start(limits, Some(server));
    let t = &target.at;
    let sessions: Vec<Root> = (0..4)
        .map(|i| {
            as_user(&user, || {
                let client = if i == 0 {
                    nf_ninep_client::Client::connect_shm_with(&t.shm, Default::default())
                } else {
                    Client::connect_unix(&t.socket)
                };
                client.unwrap().attach(&user.name, "").unwrap()
            })
        })
        .collect();
    // Every one busy, so none may give its slot up.
    let held: Vec<_> = sessions.iter().map(|s| busy(s, &user)).collect();
    assert_eq!(target.clients(), 4);
    // The same person over TLS: already at their limit.
    let refused = AtomicUsize::new(0);
    let mut admitted = Vec::new();
    for _ in 0..4 {
        let sock = TcpStream::connect(t.tcp).unwrap();
        let tls = TlsTransport::connect(sock, client_config(&mine).unwrap(), "127.0.0.1")
            .expect("TLS handshake");
        match Client::with_transport(tls, ClientConfig::default()) {
            Err(e) => {
                assert_eq!(e.errno(), Some(EAGAIN), "{e}");
                refused.fetch_add(1, Ordering::Relaxed);
            }
            Ok(c) => {
                // Admitted as someone else: hold it, as an attacker would.
                let s = c.attach(&user.name, "").unwrap();
                admitted.push((busy(&s, &user), s));
            }
        }
    }
    assert_eq!(
        refused.load(Ordering::Relaxed),
        4,
        "TLS connections of a user at their limit on other transports were admitted"
    );
    let took = root_is_served(t, false);
    assert!(took < ANSWERED_WITHIN, "root waited {took:?}");
    drop((admitted, held, sessions));
}

#[test]
fn a_full_server_keeps_a_reserve_and_takes_from_the_heaviest_users_idle_connections() {
    let (a, b) = (test_account().unwrap(), second_test_account().unwrap());
    // 16 slots, 8 per user, the last 2 kept for users holding fewer than 4.
    let limits = ServerConfig::default()
        .max_clients(16)
        .max_clients_per_user(8);
    let target = Target::start(limits, None);
    let t = &target.at;
    // Attackers whose every connection is busy, so that none can be taken back.
    let busy_sessions = |user: &Account, n: usize| -> Vec<_> {
        (0..n)
            .filter_map(|i| attached(t, user, i % 2 == 1))
            .map(|(root, fid)| (busy(&root, user), fid, root))
            .collect()
    };
    let held_a = busy_sessions(&a, 8);
    let held_b = busy_sessions(&b, 8);
    assert_eq!(
        (held_a.len(), held_b.len()),
        (8, 6),
        "the second attacker stops short of the reserve"
    );
    // Root holds nothing: the reserve is open to it.
    let took = root_is_served(t, false);
    assert!(took < ANSWERED_WITHIN, "root waited {took:?}");
    drop((held_a, held_b));
    eventually_clients(&target, 0);

    // Attackers that only hold idle, attached connections give way to a user holding
    // few, heaviest first, once silent for evict_idle_after (1 s).
    let idle_a: Vec<_> = (0..8).filter_map(|i| attached(t, &a, i % 2 == 1)).collect();
    let idle_b: Vec<_> = (0..6).filter_map(|i| attached(t, &b, i % 2 == 0)).collect();
    assert_eq!((idle_a.len(), idle_b.len()), (8, 6));
    let mine: Vec<_> = (0..2)
        .map(|_| {
            Client::connect_unix(&t.socket)
                .unwrap()
                .attach("root", "")
                .unwrap()
        })
        .collect();
    assert_eq!(target.clients(), 16);
    thread::sleep(Duration::from_millis(1500));
    let took = root_is_served(t, true);
    assert!(took < ANSWERED_WITHIN, "root waited {took:?}");
    let stats = target.daemon.as_ref().unwrap().server().stats();
    assert_eq!(stats.evicted_clients, 1, "{stats:?}");
    let gone = idle_a
        .iter()
        .filter(|(r, _)| r.stat("/status").is_err())
        .count();
    assert_eq!(gone, 1, "the heaviest user's connection made room");
    assert!(idle_b.iter().all(|(r, _)| r.stat("/status").is_ok()));
    assert!(mine.iter().all(|r| r.stat("/status").is_ok()));
}

/// Waits (up to 10 s, against hangs) until the server has `n` connections.
fn eventually_clients(target: &Target, n: usize) {
    nf_testkit::wait_for("the server's connections", Duration::from_secs(10), || {
        let now = target.clients();
        if now == n {
            Ok(())
        } else {
            Err(format!("{now} connections, not {n}"))
        }
    });
}
