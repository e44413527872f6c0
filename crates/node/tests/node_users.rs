//! `nf serve` run as root, attacked by a second, unprivileged account (made by the
//! test) the way a hostile local user would: over the unix socket, loopback tcp and a
//! shared-memory channel. Each test reproduces an attack and checks it fails while the
//! server goes on serving others.

mod support;

use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nf_ninep::errno::{EACCES, EPERM};
use nf_ninep::{LOpenFlags, SetAttr, SetattrMask};
use nf_ninep_client::{Client, Root};
use nf_ninep_server::ServerConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_testkit::users::{as_user, test_account, Account};
use support::{eventually, Node};

/// `EDQUOT`.
const EDQUOT: u32 = 122;

fn account() -> Account {
    test_account().expect("the test account")
}

/// A node whose export is root's: a 0755 directory holding root's 0600 `secret`, a
/// world-writable sticky `pub/` and a setuid-root file `pub/suid` anyone may write.
fn root_owned_node(limits: ServerConfig) -> Node {
    let node = Node::with_limits(limits);
    // The temporary directory is root's 0700: let the test user reach the sockets.
    std::fs::set_permissions(node.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = node.socket.parent().unwrap();
    std::fs::set_permissions(run, std::fs::Permissions::from_mode(0o755)).unwrap();
    for sock in [&node.socket, &node.shm_socket()] {
        std::fs::set_permissions(sock, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    let e = &node.export;
    std::fs::set_permissions(e, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(e.join("secret"), b"root only").unwrap();
    std::fs::set_permissions(e.join("secret"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::create_dir(e.join("pub")).unwrap();
    std::fs::set_permissions(e.join("pub"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::write(e.join("pub/suid"), b"#!/bin/sh\n").unwrap();
    std::fs::set_permissions(e.join("pub/suid"), std::fs::Permissions::from_mode(0o4777)).unwrap();
    node
}

/// The test user's session over the node's unix socket.
fn user_root(node: &Node, user: &Account) -> Root {
    let client = as_user(user, || Client::connect_unix(&node.socket)).expect("connect");
    client.attach(&user.name, "").expect("attach as oneself")
}

fn errno<T: std::fmt::Debug>(r: Result<T, nf_ninep_client::ClientError>) -> u32 {
    r.expect_err("must be refused").errno().unwrap_or(0)
}

#[test]
fn an_attached_user_acts_with_their_own_rights_not_the_servers() {
    let user = account();
    let node = root_owned_node(ServerConfig::default());
    let me = user_root(&node, &user);
    let e = &node.export;

    assert_eq!(errno(me.write_file("/fs/planted", b"x")), EACCES);
    assert!(
        !e.join("planted").exists(),
        "nothing made where the user may not write"
    );
    assert_eq!(errno(me.read_file("/fs/secret")), EACCES);
    assert_eq!(errno(me.chmod("/fs/secret", 0o644)), EPERM);
    let chown = SetAttr {
        uid: user.uid,
        gid: user.gid,
        ..SetAttr::default()
    };
    let walked = me.walk("/fs/secret").unwrap();
    assert_eq!(
        errno(walked.setattr(SetattrMask::UID | SetattrMask::GID, chown)),
        EPERM
    );
    let meta = std::fs::metadata(e.join("secret")).unwrap();
    assert_eq!(
        (meta.uid(), meta.mode() & 0o7777),
        (0, 0o600),
        "root's file unchanged"
    );
    assert_eq!(errno(me.remove("/fs/pub/suid")), EPERM, "sticky directory");

    // What the user makes is theirs, so a setuid bit on it gives nothing.
    me.write_file("/fs/pub/mine", b"#!/bin/sh\nid -u\n")
        .unwrap();
    me.chmod("/fs/pub/mine", 0o4755).unwrap();
    let meta = std::fs::metadata(e.join("pub/mine")).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (user.uid, user.gid));
    // Writing root's setuid file clears the bit, as the kernel does for users.
    let f = me.open("/fs/pub/suid", LOpenFlags::WRONLY).unwrap();
    f.write_at(b"#", 0).unwrap();
    f.close().unwrap();
    let mode = std::fs::metadata(e.join("pub/suid")).unwrap().mode();
    assert_eq!(mode & 0o6000, 0, "setuid cleared: {mode:o}");

    // Root, on the same server at the same time, keeps root's rights.
    let root = node.root();
    assert_eq!(root.read_file("/fs/secret").unwrap(), b"root only");
    root.write_file("/fs/rootfile", b"r").unwrap();
    assert_eq!(std::fs::metadata(e.join("rootfile")).unwrap().uid(), 0);
}

#[test]
fn a_local_user_may_not_attach_as_someone_else_on_any_local_transport() {
    let user = account();
    let node = root_owned_node(ServerConfig::default());
    let unix = as_user(&user, || Client::connect_unix(&node.socket)).unwrap();
    assert_eq!(errno(unix.attach("root", "")), EACCES);
    assert_eq!(errno(unix.attach_as("", "", 0)), EACCES);
    assert!(unix.attach("", "").is_ok(), "as oneself");

    let daemon = Daemon::start(&ServeConfig {
        tcp: vec!["127.0.0.1:0".parse().unwrap()],
        node: NodeConfig::default(),
        ..ServeConfig::default()
    })
    .unwrap();
    let addr = daemon.tcp_addr().unwrap();
    let tcp = as_user(&user, || Client::connect_tcp(addr)).unwrap();
    assert_eq!(
        errno(tcp.attach("root", "")),
        EACCES,
        "loopback tcp knows the uid"
    );
    let me = tcp.attach(&user.name, "").unwrap();
    assert!(me.stat("/status").is_ok());
    daemon.shutdown(Duration::from_secs(5));
}

/// Receives a channel offer as a hostile client would, keeping the raw descriptors.
fn raw_offer(sock: &UnixStream) -> Vec<OwnedFd> {
    use rustix::net::{recvmsg, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(5))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    recvmsg(
        sock,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )
    .unwrap();
    let mut fds = Vec::new();
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = msg {
            fds.extend(rights);
        }
    }
    assert_eq!(fds.len(), 5, "memfd and four eventfds");
    fds
}

#[test]
fn a_shared_memory_client_that_breaks_its_channel_loses_only_its_own() {
    use std::os::unix::fs::FileExt;
    let user = account();
    let node = root_owned_node(ServerConfig::default());
    let hostile = as_user(&user, || UnixStream::connect(node.shm_socket())).unwrap();
    let fds = raw_offer(&hostile);
    let memory = std::fs::File::from(fds[0].try_clone().unwrap());
    assert!(memory.set_len(0).is_err(), "sealed: cannot shrink");
    assert!(memory.set_len(64 << 20).is_err(), "sealed: cannot grow");
    // Scribble over everything (counters included) and ring the server's bell.
    let len = memory.metadata().unwrap().len();
    let junk = vec![0xA5u8; len as usize];
    memory.write_all_at(&junk, 0).unwrap();
    rustix::io::write(fds[1].as_fd(), &1u64.to_ne_bytes()).unwrap();
    // The server drops that channel (its socket reports the end) ...
    hostile
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut buf = [0u8; 1];
    let n = rustix::net::recv(&hostile, &mut buf, rustix::net::RecvFlags::empty());
    assert!(
        matches!(n, Ok((0, _))),
        "the hostile channel is closed: {n:?}"
    );
    // ... and serves everyone else, over shm too.
    let root = node.root();
    assert!(root.stat("/status").is_ok());
    let shm = nf_ninep_client::Client::connect_shm_with(node.shm_socket(), Default::default())
        .unwrap()
        .attach("root", "")
        .unwrap();
    assert!(shm.read_file("/status").is_ok());
}

#[test]
fn silent_connections_cannot_lock_out_new_clients() {
    let user = account();
    let limits = ServerConfig::default().deadlines(
        Duration::from_secs(5),
        Duration::from_secs(5),
        Duration::from_secs(30),
    );
    let node = root_owned_node(limits);
    // 300 connections that send two bytes and go quiet.
    let silent: Vec<UnixStream> = as_user(&user, || {
        (0..300)
            .map(|_| {
                let s = UnixStream::connect(&node.socket).unwrap();
                use std::io::Write;
                let _ = (&s).write_all(&[19, 0]);
                s
            })
            .collect()
    });
    // The user holds at most max_clients_per_user (128) of the 1024 slots: another
    // user gets in at once.
    eventually("the user's connections to fill exactly their share", || {
        node.daemon().server().stats().clients == 128
    });
    let root = node.root();
    assert!(root.stat("/status").is_ok());
    // The same user gets in at once too: a silent connection gives its slot up.
    let me = user_root(&node, &user);
    assert!(me.stat("/status").is_ok());
    // And the half-sent handshakes are closed at the deadline.
    eventually("the silent connections to be closed", || {
        node.daemon().server().stats().clients <= 2
    });
    assert!(root.stat("/status").is_ok() && me.stat("/status").is_ok());
    drop(silent);
}

/// A relay (QEMU's, for a booting guest) connects long before its client speaks: the
/// handshake deadline runs from the first byte, not from the connection.
#[test]
fn a_connection_silent_past_the_handshake_deadline_is_served_once_it_speaks() {
    let limits = ServerConfig::default().deadlines(
        Duration::from_millis(300),
        Duration::from_millis(300),
        Duration::from_secs(30),
    );
    let node = support::Node::with_limits(limits);
    let relay = UnixStream::connect(&node.socket).unwrap();
    // Four deadlines of silence (the watcher looks several times per deadline).
    std::thread::sleep(Duration::from_millis(1200));
    let client = Client::with_transport(relay, nf_ninep_client::ClientConfig::default())
        .expect("the silent connection is still open");
    // Talking now, but not attached: half a deadline passes, more than the watcher's
    // tick, so a deadline counted from the connection would close it here.
    std::thread::sleep(Duration::from_millis(150));
    let root = client.attach("root", "").expect("attach after the silence");
    assert!(root.stat("/status").is_ok());
}

#[test]
fn pipes_obey_owners_modes_and_budgets() {
    let user = account();
    let node = root_owned_node(ServerConfig::default());
    let root = node.root();
    root.create("/pipe/roots", LOpenFlags::WRONLY, 0o600)
        .unwrap()
        .close()
        .unwrap();
    let me = user_root(&node, &user);
    assert_eq!(errno(me.open("/pipe/roots", LOpenFlags::RDONLY)), EACCES);
    assert_eq!(errno(me.remove("/pipe/roots")), EPERM);
    let st = root.stat("/pipe/roots").unwrap();
    assert_eq!(st.attr.uid, 0);
    // Naming a pipe makes it, owned by the one who named it.
    let r = me
        .open("/pipe/mine", LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
        .unwrap();
    assert_eq!(root.stat("/pipe/mine").unwrap().attr.uid, user.uid);
    drop(r);
    // One user may own 64 pipes (the default); the 65th is refused, not grown.
    let made = (0..64)
        .take_while(|i| {
            me.create(&format!("/pipe/p{i}"), LOpenFlags::WRONLY, 0o600)
                .and_then(|f| f.close())
                .is_ok()
        })
        .count();
    assert_eq!(made, 63, "with /pipe/mine, 64 in all");
    assert_eq!(
        errno(me.create("/pipe/one-too-many", LOpenFlags::WRONLY, 0o600)),
        EDQUOT
    );
    // Removing gives the budget back.
    me.remove("/pipe/p0").unwrap();
    me.create("/pipe/again", LOpenFlags::WRONLY, 0o600)
        .unwrap()
        .close()
        .unwrap();
}

#[test]
fn the_read_only_view_takes_the_users_rights_and_a_bounded_memory() {
    let user = account();
    let node = root_owned_node(ServerConfig::default());
    let me = user_root(&node, &user);
    // The overlay is shared by every client: changing it takes the host's rights.
    assert_eq!(errno(me.write_file("/ro/hello.txt", b"defaced")), EACCES);
    assert_eq!(errno(me.mkdir("/ro/mine", 0o755)), EACCES);
    assert_eq!(errno(me.remove("/ro/secret")), EACCES);
    assert_eq!(
        me.read_file("/ro/hello.txt").unwrap(),
        b"hello from the host\n"
    );
    me.mkdir("/ro/pub/mine", 0o755).unwrap();
    assert_eq!(node.root().stat("/ro/pub/mine").unwrap().attr.uid, user.uid);

    // Metadata is charged too: 20,000 mkdirs end in ENOSPC, not in growth.
    let tight = NodeConfig {
        export: Some(node.export.clone()),
        ro_memory_limit: 64 << 10,
        ..NodeConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("tight.sock");
    let daemon = Daemon::start(&ServeConfig {
        unix: Some(socket.clone()),
        node: tight,
        ..ServeConfig::default()
    })
    .unwrap();
    let root = Client::connect_unix(&socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    let made = (0..20_000)
        .take_while(|i| root.mkdir(&format!("/ro/d{i}"), 0o755).is_ok())
        .count();
    assert!(made < 1000, "made {made} directories in a 64 KiB budget");
    assert_eq!(
        errno(root.mkdir("/ro/one-more", 0o755)),
        nf_ninep::errno::ENOSPC
    );
    root.remove("/ro/d0").unwrap();
    root.mkdir("/ro/again", 0o755)
        .expect("a removed entry gives its charge back");
    daemon.shutdown(Duration::from_secs(5));
}
