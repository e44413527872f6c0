//! `/mem` against a registry this test fills by hand, over a real unix socket: an
//! entry for this very process (its own buffer as the segment) is served, read and
//! written; malformed, foreign, dead and reused-pid entries are not; a connection that
//! identifies nobody (plain loopback tcp) is refused.
//!
//! Needs root (as the suite runs): it makes files and processes of another user.

mod support;

use std::os::unix::fs::chown;
use std::os::unix::process::CommandExt;
use std::path::Path;

use nf_memreg::{process_start, Entry, SegEntry};
use nf_ninep::errno::ENOENT;
use nf_ninep_client::{Client, Root};
use nf_node::{Daemon, NodeConfig, ServeConfig};
use support::Node;

/// `nobody`: an account that is not ours.
const NOBODY: u32 = 65534;

fn own_entry(job: &str, buf: &[u8]) -> Entry {
    let pid = std::process::id();
    Entry {
        job: job.into(),
        rank: 0,
        pid,
        start: process_start(pid).unwrap(),
        segments: vec![SegEntry {
            id: 1,
            base: buf.as_ptr() as u64,
            len: buf.len() as u64,
        }],
    }
}

fn put(dir: &Path, e: &Entry) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(e.file_name()), e.encode()).unwrap();
}

fn jobs(root: &Root) -> Vec<String> {
    let mut v: Vec<String> = root
        .readdir("/mem")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    v.sort();
    v
}

#[test]
fn only_trusted_live_entries_are_served() {
    assert_eq!(
        rustix::process::geteuid().as_raw(),
        0,
        "this test runs as root (the suite does)"
    );
    let node = Node::start();
    let reg = node.registry.clone();
    let mut buf: Vec<u8> = (0..5000u32).map(|i| (i % 253) as u8).collect();

    // Served: our own live process.
    put(&reg, &own_entry("mine", &buf));
    // Not served: garbage; a file of another user naming our process; a dead pid; our
    // pid with another start time (reused); a file of ours naming another user's
    // process; a name that does not match its content.
    std::fs::write(reg.join("junk.0"), b"nf-mem 1\njob junk\nrank x\n").unwrap();
    std::fs::write(reg.join("bin.0"), [0xffu8; 300]).unwrap();
    put(&reg, &own_entry("foreign", &buf));
    chown(reg.join("foreign.0"), Some(NOBODY), Some(NOBODY)).unwrap();
    let mut dead = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    put(
        &reg,
        &Entry {
            pid: dead_pid,
            ..own_entry("dead", &buf)
        },
    );
    let mut reused = own_entry("reused", &buf);
    reused.start += 1;
    put(&reg, &reused);
    let mut theirs = std::process::Command::new("sleep")
        .arg("30")
        .uid(NOBODY)
        .gid(NOBODY)
        .spawn()
        .unwrap();
    let nobody_entry = Entry {
        pid: theirs.id(),
        start: process_start(theirs.id()).unwrap(),
        ..own_entry("theirs", &buf)
    };
    put(&reg, &nobody_entry);
    std::fs::write(reg.join("renamed.3"), own_entry("mine2", &buf).encode()).unwrap();

    let root = node.root();
    assert_eq!(jobs(&root), ["mine"]);
    for gone in ["junk", "foreign", "dead", "reused", "theirs", "mine2"] {
        let err = root.stat(&format!("/mem/{gone}")).unwrap_err();
        assert_eq!(err.errno(), Some(ENOENT), "{gone}: {err}");
    }
    // A root daemon trusts nobody's entry once the file is nobody's too.
    chown(reg.join("theirs.0"), Some(NOBODY), Some(NOBODY)).unwrap();
    assert_eq!(jobs(&root), ["mine", "theirs"]);
    assert_eq!(root.stat("/mem/theirs/0/1").unwrap().size(), 5000);
    theirs.kill().unwrap();
    theirs.wait().unwrap();
    assert_eq!(jobs(&root), ["mine"]);

    // Our own buffer, through 9P: read = the bytes, write = changed bytes.
    assert_eq!(root.readdir("/mem/mine/0").unwrap()[0].name, "1");
    assert_eq!(root.read_file("/mem/mine/0/1").unwrap(), buf);
    let f = root
        .open("/mem/mine/0/1", nf_ninep::LOpenFlags::RDWR)
        .unwrap();
    assert_eq!(f.write_at(b"hello", 100).unwrap(), 5);
    std::hint::black_box(&mut buf);
    assert_eq!(&buf[100..105], b"hello");
    // Walking a segment that is not there, or a rank written oddly.
    for bad in [
        "/mem/mine/0/2",
        "/mem/mine/00",
        "/mem/mine/1",
        "/mem/mine/0/x",
    ] {
        let err = root.stat(bad).unwrap_err();
        assert_eq!(err.errno(), Some(ENOENT), "{bad}: {err}");
    }
    // A freed segment: an open fid answers ESTALE.
    put(
        &reg,
        &Entry {
            segments: Vec::new(),
            ..own_entry("mine", &buf)
        },
    );
    let err = f.read_at(&mut [0u8; 8], 0).unwrap_err();
    assert_eq!(err.errno(), Some(nf_ninep::errno::ESTALE), "{err}");
    assert!(root.readdir("/mem/mine/0").unwrap().is_empty());
}

/// Loopback tcp says who connected (the kernel's owner of the connecting socket), so
/// `/mem` serves it as it serves the unix socket: root sees the proc.
#[test]
fn loopback_tcp_peers_are_identified_by_the_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let reg = dir.path().join("mem");
    let buf = vec![7u8; 64];
    put(&reg, &own_entry("mine", &buf));
    let daemon = Daemon::start(&ServeConfig {
        tcp: vec!["127.0.0.1:0".parse().unwrap()],
        node: NodeConfig {
            mem_registry: Some(reg),
            ..NodeConfig::default()
        },
        ..ServeConfig::default()
    })
    .unwrap();
    let root = Client::connect_tcp(daemon.tcp_addr().unwrap())
        .unwrap()
        .attach("root", "")
        .unwrap();
    let names: Vec<String> = root
        .readdir("/mem")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert!(names.iter().any(|n| n == "mine"), "{names:?}");
    daemon.shutdown(std::time::Duration::from_secs(5));
}
