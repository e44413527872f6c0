//! The gateway in front of two real node servers, all in this process, on unix sockets
//! in a temporary directory, driven by the real 9P client: passing trees through,
//! qids, `..` out of a member, a member lost and back, flush of a blocked read, session
//! placement, and registration. (Many hosts over TLS: `crates/cli/tests/gateway_hosts.rs`.)
//!
//! The test runs as root, so the gateway's local connections to the nodes may attach
//! for anyone, and this client attaches as root.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use nf_gateway::config::{GatewayConfig, MemberConfig};
use nf_gateway::{Gateway, GatewayOptions};
use nf_ninep::errno::{EACCES, EHOSTDOWN, ESTALE};
use nf_ninep::message::{Rmessage, Tread};
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, ClientError, Root};
use nf_ninep_server::ServerConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};

/// Everything here happens in well under this; it only keeps a broken run from hanging.
const BOUND: Duration = Duration::from_secs(15);

struct Node {
    daemon: Option<Daemon>,
    socket: PathBuf,
    export: PathBuf,
    xcpu: PathBuf,
}

impl Node {
    fn start(dir: &Path, name: &str) -> Node {
        let export = dir.join(name);
        std::fs::create_dir_all(&export).unwrap();
        std::fs::write(export.join("hello.txt"), format!("hello from {name}\n")).unwrap();
        let mut n = Node {
            daemon: None,
            socket: dir.join(format!("{name}.sock")),
            export,
            xcpu: dir.join(format!("{name}-xcpu")),
        };
        n.up();
        n
    }

    fn up(&mut self) {
        let config = ServeConfig {
            unix: Some(self.socket.clone()),
            node: NodeConfig {
                export: Some(self.export.clone()),
                xcpu: nf_node::xcpu::XcpuConfig {
                    dir: Some(self.xcpu.clone()),
                    ..Default::default()
                },
                ..NodeConfig::default()
            },
            limits: ServerConfig::default(),
            ..ServeConfig::default()
        };
        self.daemon = Some(Daemon::start(&config).expect("node server"));
    }

    fn down(&mut self) {
        if let Some(d) = self.daemon.take() {
            d.shutdown(Duration::from_secs(5));
        }
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    nodes: Vec<Node>,
    gateway: Option<Gateway>,
    socket: PathBuf,
}

impl Setup {
    fn start() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let nodes = vec![
            Node::start(dir.path(), "node1"),
            Node::start(dir.path(), "node2"),
        ];
        let config = GatewayConfig {
            members: nodes
                .iter()
                .enumerate()
                .map(|(k, n)| MemberConfig {
                    name: format!("node{}", k + 1),
                    addr: format!("unix:{}", n.socket.display()),
                    labels: Vec::new(),
                    allow: Default::default(),
                })
                .collect(),
            ..GatewayConfig::default()
        };
        let socket = dir.path().join("gw.sock");
        let opts = GatewayOptions {
            unix: Some(socket.clone()),
            ..GatewayOptions::default()
        };
        let gateway = Gateway::start(&config, &opts).expect("gateway");
        let s = Setup {
            _dir: dir,
            nodes,
            gateway: Some(gateway),
            socket,
        };
        s.wait_for(|status| status.contains("members 2 up 2"));
        s
    }

    fn root(&self) -> Root {
        Client::connect_unix(&self.socket)
            .unwrap()
            .attach("root", "")
            .unwrap()
    }

    /// Waits until `/status` satisfies `ok` (the members' monitors run every second
    /// or two).
    fn wait_for(&self, ok: impl Fn(&str) -> bool) {
        let root = self.root();
        let start = Instant::now();
        loop {
            let status = String::from_utf8(root.read_file("/status").unwrap()).unwrap();
            if ok(&status) {
                return;
            }
            assert!(
                start.elapsed() < BOUND,
                "the gateway never got there:\n{status}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(g) = self.gateway.take() {
            g.shutdown(Duration::from_secs(5));
        }
        for n in &mut self.nodes {
            n.down();
        }
    }
}

fn errno(e: ClientError) -> u32 {
    e.errno().unwrap_or_else(|| panic!("not an errno: {e}"))
}

#[test]
fn members_trees_pass_through_with_qids_of_their_own() {
    let s = Setup::start();
    let root = s.root();
    let mut names: Vec<String> = root
        .readdir("/n")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, ["node1", "node2"]);
    assert_eq!(
        root.read_file("/n/node2/fs/hello.txt").unwrap(),
        b"hello from node2\n"
    );
    root.write_file("/n/node1/fs/new.txt", b"through the gateway\n")
        .unwrap();
    assert_eq!(
        std::fs::read(s.nodes[0].export.join("new.txt")).unwrap(),
        b"through the gateway\n"
    );
    // The same file name on two nodes: two qids. Listings carry the stamped qids too.
    let q1 = root.stat("/n/node1/status").unwrap().qid;
    let q2 = root.stat("/n/node2/status").unwrap().qid;
    assert_ne!(q1.path, q2.path);
    let listed = root.readdir("/n/node1").unwrap();
    let status = listed.iter().find(|e| e.name == "status").unwrap();
    assert_eq!(status.qid.path, q1.path, "readdir and walk agree");
    // `..` at a member's root is the gateway's /n, not the member's root.
    let up = root.walk("/n/node1/..").unwrap();
    assert_eq!(up.qid(), root.walk("/n").unwrap().qid());
    let back = root.walk("/n/node1/fs/../../node2/fs/hello.txt").unwrap();
    assert_eq!(
        back.qid(),
        root.walk("/n/node2/fs/hello.txt").unwrap().qid()
    );
    // Attaching with an aname starts inside.
    let inside = Client::connect_unix(&s.socket)
        .unwrap()
        .attach("root", "/n/node1/fs")
        .unwrap();
    assert_eq!(
        inside.read_file("hello.txt").unwrap(),
        b"hello from node1\n"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&root.read_file("/status.json").unwrap()).unwrap();
    assert_eq!(json["up"], 2);
    assert_eq!(json["list"].as_array().unwrap().len(), 2);
}

#[test]
fn a_lost_member_answers_ehostdown_then_estale_once_back() {
    let mut s = Setup::start();
    let root = s.root();
    let held = root
        .open("/n/node1/fs/hello.txt", LOpenFlags::RDONLY)
        .unwrap();
    s.nodes[0].down();
    s.wait_for(|st| st.contains("node1 down"));
    assert_eq!(errno(held.read_chunk(0, 64).unwrap_err()), EHOSTDOWN);
    assert_eq!(errno(root.walk("/n/node1/fs").unwrap_err()), EHOSTDOWN);
    assert_eq!(
        root.read_file("/n/node2/fs/hello.txt").unwrap(),
        b"hello from node2\n"
    );
    s.nodes[0].up();
    s.wait_for(|st| st.contains("members 2 up 2"));
    assert_eq!(errno(held.read_chunk(0, 64).unwrap_err()), ESTALE);
    assert_eq!(
        root.read_file("/n/node1/fs/hello.txt").unwrap(),
        b"hello from node1\n"
    );
}

#[test]
fn a_blocked_read_through_the_gateway_is_flushed() {
    let s = Setup::start();
    let root = s.root();
    // A pipe no writer has opened: a read waits.
    let pipe = root.open("/n/node1/pipe/p", LOpenFlags::RDONLY).unwrap();
    let call = root
        .client()
        .start(Tread {
            fid: pipe.number(),
            offset: 0,
            count: 16,
        })
        .unwrap();
    assert!(
        call.wait_timeout(Duration::from_millis(300))
            .unwrap()
            .is_none(),
        "it waits"
    );
    let flushed = call
        .flush_within(Some(BOUND))
        .expect("Rflush within the bound");
    assert!(
        !matches!(flushed, Some(Rmessage::Rread(_))),
        "nothing was read"
    );
    // The connection and the pipe still work.
    let mut w = root.open("/n/node1/pipe/p", LOpenFlags::WRONLY).unwrap();
    w.write_all(b"after\n").unwrap();
    assert_eq!(pipe.read_chunk(0, 16).unwrap(), b"after\n");
}

#[test]
fn clone_places_sessions_on_both_members_and_passes_their_files() {
    let s = Setup::start();
    let root = s.root();
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut clone = root.open("/xcpu/clone", LOpenFlags::RDONLY).unwrap();
        let id = String::from_utf8(clone.read_to_end().unwrap()).unwrap();
        let id = id.trim().to_string();
        root.write_file(&format!("/xcpu/{id}/argv"), b"true")
            .unwrap();
        let state = root.read_file(&format!("/xcpu/{id}/state")).unwrap();
        assert!(
            !state.is_empty(),
            "the member's session state passes through"
        );
        held.push(clone);
    }
    let procs = String::from_utf8(root.read_file("/xcpu/procs").unwrap()).unwrap();
    let on = |m: &str| {
        procs
            .lines()
            .filter(|l| l.split(' ').nth(1) == Some(m))
            .count()
    };
    let status = String::from_utf8(root.read_file("/status").unwrap()).unwrap();
    assert_eq!(
        (on("node1"), on("node2")),
        (2, 2),
        "spread over both:\n{procs}\n{status}"
    );
    // A session wiped on its member is forgotten by the gateway at the next walk.
    let first = procs
        .lines()
        .next()
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    root.write_file(&format!("/xcpu/{first}/ctl"), b"wipe")
        .unwrap();
    let start = Instant::now();
    while root.walk(&format!("/xcpu/{first}")).is_ok() {
        assert!(start.elapsed() < BOUND, "the wiped session never went");
        std::thread::sleep(Duration::from_millis(50));
    }
    let procs = String::from_utf8(root.read_file("/xcpu/procs").unwrap()).unwrap();
    assert!(
        !procs
            .lines()
            .any(|l| l.split(' ').next() == Some(first.as_str())),
        "{procs}"
    );
    assert_eq!(
        errno(root.walk("/xcpu/999").unwrap_err()),
        nf_ninep::errno::ENOENT
    );
}

#[test]
fn a_node_may_only_register_its_own_name() {
    use nf_gateway::GatewayTree;
    use nf_ninep::{Tattach, Tlopen, Twrite, NOFID, NONUNAME};
    use nf_ninep_server::{Cancel, Ctx, Filesystem};
    let tree = GatewayTree::new(
        Arc::new(Default::default()),
        Vec::new(),
        Vec::new(),
        Arc::new(nf_gateway::member::Dial {
            tls: None,
            msize: 65536,
            probe_user: "nobody".into(),
            lanes: 1,
        }),
    );
    let ctx = |user: &str| Ctx::new(Cancel::new(), 65536, 1, 1).with_user(Some(Arc::from(user)));
    let attach = |user: &str| {
        let req = Tattach {
            fid: 0,
            afid: NOFID,
            uname: String::new(),
            aname: String::new(),
            n_uname: NONUNAME,
        };
        tree.attach(&ctx(user), &req, None).unwrap().1
    };
    let write = |user: &str, text: &str| -> Result<(), u32> {
        let root = attach(user);
        let (_, join) = tree
            .walk1(&ctx(user), &root, "join")
            .map_err(|e| e.errno().unwrap())?;
        tree.lopen(
            &ctx(user),
            &join,
            &Tlopen {
                fid: 1,
                flags: LOpenFlags::WRONLY,
            },
        )
        .map_err(|e| e.errno().unwrap())?;
        let req = Twrite {
            fid: 1,
            offset: 0,
            data: text.as_bytes().into(),
        };
        tree.write(&ctx(user), &join, &req)
            .map(|_| ())
            .map_err(|e| e.errno().unwrap())
    };
    assert_eq!(
        write("node:n1", "tls:n2:564\n"),
        Err(EACCES),
        "another host's name"
    );
    assert_eq!(write("node:n1", "tcp:n1:564\n"), Err(EACCES), "not TLS");
    assert!(write("node:n1", "garbage").is_err());
    assert_eq!(
        write("ann", "tls:ann:564\n"),
        Err(nf_ninep::errno::ENOENT),
        "users see no join"
    );
    assert!(tree.members().all().is_empty());
    assert_eq!(write("node:n1", "tls:n1:564\n"), Ok(()));
    assert_eq!(tree.members().all().len(), 1);
    assert_eq!(
        write("node:n1", "tls:n1:565\n"),
        Ok(()),
        "a re-registration"
    );
    assert_eq!(tree.members().all().len(), 1);
    assert_eq!(
        tree.members().get("n1").unwrap().addr().to_string(),
        "tls:n1:565"
    );
    // A node sees nothing else.
    let node = attach("node:n1");
    assert_eq!(
        tree.walk1(&ctx("node:n1"), &node, "n")
            .err()
            .and_then(|e| e.errno()),
        Some(EACCES)
    );
    tree.stop();
}

#[test]
fn one_user_cannot_take_a_members_connection_from_the_others() {
    use nf_gateway::member::{CALLS_PER_USER, FIDS_PER_USER, QUEUE_WAIT};
    let s = Setup::start();
    let root = s.root();
    let held: Vec<_> = (0..FIDS_PER_USER)
        .map(|_| root.walk("/n/node1/status").unwrap())
        .collect();
    assert_eq!(
        errno(root.walk("/n/node1/status").unwrap_err()),
        nf_ninep::errno::EMFILE
    );
    // Another user on the same member connection is not held up.
    let other = Client::connect_unix(&s.socket)
        .unwrap()
        .attach("nobody", "")
        .unwrap();
    assert!(!other.read_file("/n/node1/status").unwrap().is_empty());
    drop(held);
    root.walk("/n/node1/status")
        .expect("fids given back are counted back");
    // Requests waiting (blocked pipe reads) are bounded per user too: past the bound
    // a request waits its turn at the gateway, it is not refused.
    let pipe = root.open("/n/node1/pipe/w", LOpenFlags::RDONLY).unwrap();
    let pipe_read = || {
        root.client()
            .start(Tread {
                fid: pipe.number(),
                offset: 0,
                count: 1,
            })
            .unwrap()
    };
    let status = root.open("/n/node1/status", LOpenFlags::RDONLY).unwrap();
    let status_read = || {
        root.client()
            .start(Tread {
                fid: status.number(),
                offset: 0,
                count: 4096,
            })
            .unwrap()
    };
    let mut waiting: Vec<_> = (0..CALLS_PER_USER).map(|_| pipe_read()).collect();
    // The pipe reads reach the member through a worker each: until all of them wait
    // there, a status read goes through. Then one stays queued.
    let start = Instant::now();
    let queued = loop {
        let call = status_read();
        match call.wait_timeout(Duration::from_millis(500)).unwrap() {
            None => break call,
            Some(Rmessage::Rread(_)) => {}
            Some(other) => panic!("a request past the bound was refused, not queued: {other:?}"),
        }
        assert!(start.elapsed() < BOUND, "the pipe reads never all waited");
    };
    assert!(!other.read_file("/n/node1/status").unwrap().is_empty());
    // A turn given back goes to the queued request.
    let _ = waiting.pop().unwrap().flush_within(Some(BOUND));
    match queued.wait_timeout(BOUND).unwrap() {
        Some(Rmessage::Rread(r)) => assert!(!r.data.is_empty()),
        other => panic!("the queued read was not served when a turn came free: {other:?}"),
    }
    // A user whose every turn waits on the member (its own pipe reads) hears EAGAIN
    // after QUEUE_WAIT rather than hanging.
    waiting.push(pipe_read());
    let start = Instant::now();
    let refused = loop {
        let call = status_read();
        match call.wait_timeout(QUEUE_WAIT + BOUND).unwrap() {
            Some(Rmessage::Rlerror(e)) => break e.ecode,
            Some(Rmessage::Rread(_)) => {}
            other => panic!("{other:?}"),
        }
        assert!(
            start.elapsed() < BOUND + QUEUE_WAIT,
            "the pipe reads never all waited"
        );
    };
    assert_eq!(refused, nf_ninep::errno::EAGAIN);
    assert!(!other.read_file("/n/node1/status").unwrap().is_empty());
    for call in waiting {
        let _ = call.flush_within(Some(BOUND));
    }
}

/// Connections accepted on a unix socket now: entries of `/proc/net/unix` with its
/// path, less the listening one.
fn accepted_on(socket: &Path) -> usize {
    let table = std::fs::read_to_string("/proc/net/unix").unwrap();
    let path = socket.to_str().unwrap();
    let n = table
        .lines()
        .filter(|l| l.split_whitespace().nth(7) == Some(path))
        .count();
    n.saturating_sub(1)
}

#[test]
fn each_member_is_reached_over_several_connections_and_clients_are_spread() {
    let s = Setup::start();
    for n in &s.nodes {
        assert_eq!(
            accepted_on(&n.socket),
            nf_gateway::member::DEFAULT_LANES,
            "the gateway's connections to {}",
            n.socket.display()
        );
    }
    // Eight clients, each with a read blocked on the member (a pipe with no writer yet),
    // spread over the lanes by their connection: all are served once the writer comes.
    let writer = s.root();
    writer
        .create("/n/node1/pipe/p", LOpenFlags::RDWR, 0o600)
        .map(drop)
        .unwrap();
    let clients: Vec<Root> = (0..8).map(|_| s.root()).collect();
    let readers: Vec<_> = clients
        .iter()
        .map(|c| c.open("/n/node1/pipe/p", LOpenFlags::RDONLY).unwrap())
        .collect();
    // Every client reached the member and reads back what one writer sends.
    let w = writer.open("/n/node1/pipe/p", LOpenFlags::WRONLY).unwrap();
    std::thread::scope(|scope| {
        let got: Vec<_> = readers
            .iter()
            .map(|r| scope.spawn(move || r.read_chunk(0, 1).unwrap()))
            .collect();
        for _ in 0..8 {
            w.write_all_at(b"x", 0).unwrap();
        }
        for g in got {
            assert_eq!(g.join().unwrap(), b"x");
        }
    });
}
