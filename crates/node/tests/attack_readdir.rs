//! Attack: directory listings cost server memory (issue 28, item 6). An unprivileged
//! account opens many fids on a large directory of a root `nf serve` and reads only the
//! first page of each: when every open listing kept a snapshot of the whole directory,
//! 100 such fids on 100,000 entries grew the server by 1.2 GB. Here the server runs in
//! this process, so its resident memory is this process's (`VmRSS`); this file holds
//! one test so that nothing else runs beside it.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use nf_ninep::{LOpenFlags, Rmessage, Treaddir};
use nf_ninep_client::{Client, ClientConfig};
use nf_ninep_server::ServerConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_testkit::users::{as_user, test_account};

/// Entries in the large directory.
const ENTRIES: usize = 20_000;
/// Fids the attacker opens on it, each reading one page.
const FIDS: usize = 100;
/// What a snapshot of the directory would cost per fid: at least 48 bytes of record
/// and the name (24 bytes here) per entry.
const SNAPSHOT: usize = ENTRIES * (48 + 24);
/// Growth allowed: a tenth of what the snapshots would cost together (144 MB).
const BOUND: usize = FIDS * SNAPSHOT / 10;

/// This process's resident memory, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// A root server on a unix socket every user can reach, exporting `dir/export`.
fn start(dir: &std::path::Path) -> (Daemon, std::path::PathBuf) {
    let open = |p: &std::path::Path, mode| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    open(dir, 0o755);
    let export = dir.join("export");
    std::fs::create_dir(&export).unwrap();
    open(&export, 0o755);
    std::fs::write(export.join("hello.txt"), b"hello").unwrap();
    let socket = dir.join("run/nf.sock");
    let daemon = Daemon::start(&ServeConfig {
        unix: Some(socket.clone()),
        node: NodeConfig {
            export: Some(export),
            mem_registry: Some(dir.join("mem")),
            ..NodeConfig::default()
        },
        limits: ServerConfig::default(),
        ..ServeConfig::default()
    })
    .expect("start the node server");
    open(socket.parent().unwrap(), 0o755);
    open(&socket, 0o777);
    (daemon, socket)
}

#[test]
fn a_user_reading_one_page_of_many_listings_cannot_grow_the_server() {
    let user = test_account().unwrap();
    // In memory where there is a tmpfs: 20,000 files on a busy disk take seconds.
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let (daemon, socket) = start(dir.path());
    let big = dir.path().join("export/big");
    std::fs::create_dir(&big).unwrap();
    let made = Instant::now();
    for i in 0..ENTRIES {
        std::fs::File::create(big.join(format!("entry-{i:08}-abcdefghij"))).unwrap();
    }
    let before = rss();
    eprintln!("{ENTRIES} entries made in {:?}", made.elapsed());

    let client = as_user(&user, || Client::connect_unix(&socket)).unwrap();
    let me = client.attach(&user.name, "").unwrap();
    let mut open = Vec::new();
    for _ in 0..FIDS {
        let dir = me.open("/fs/big", LOpenFlags::RDONLY).unwrap();
        let reply = client
            .call(Treaddir {
                fid: dir.number(),
                offset: 0,
                count: 200,
            })
            .unwrap();
        assert!(
            matches!(&reply, Rmessage::Rreaddir(r) if !r.data.as_slice().is_empty()),
            "a page of entries"
        );
        open.push(dir);
    }
    let during = rss();
    // Another user is answered meanwhile (5 s: a bound against a hang on a loaded
    // 2-core machine, not a timing claim).
    let asked = Instant::now();
    // (Pages of 8 KiB, so that root's own buffers do not blur what the attacker left.)
    let small = ClientConfig {
        msize: 8192,
        ..ClientConfig::default()
    };
    let root = Client::connect_unix_with(&socket, small)
        .unwrap()
        .attach("root", "")
        .unwrap();
    assert_eq!(root.read_file("/fs/hello.txt").unwrap(), b"hello");
    let dir = root.open("/fs/big", LOpenFlags::RDONLY).unwrap();
    assert!(!dir.readdir_page(0).unwrap().is_empty());
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    drop((dir, root));
    let grew = during.saturating_sub(before);
    assert!(
        grew < BOUND,
        "the server grew by {grew} bytes for {FIDS} first pages (bound {BOUND})"
    );

    drop(open);
    drop(me);
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(10);
    while daemon.server().stats().clients > 0 {
        assert!(Instant::now() < deadline, "the attacker's connection ends");
        std::thread::sleep(Duration::from_millis(5));
    }
    let after = rss();
    let kept = after.saturating_sub(before);
    eprintln!("VmRSS: {before} before, {during} with {FIDS} fids open, {after} after");
    assert!(
        kept < BOUND,
        "{kept} bytes stayed after the attacker left (bound {BOUND})"
    );
    daemon.shutdown(Duration::from_secs(5));
}
