//! Attack: directory listings cost server memory. An unprivileged
//! account opens many fids on a large directory of a root `nf serve` and reads only the
//! first page of each: when every open listing kept a snapshot of the whole directory,
//! 100 such fids on 100,000 entries grew the server by 1.2 GB. `/fs` now reads a host
//! directory page by page; `/ro`, whose listing merges the host with its overlay,
//! still takes a snapshot per open directory, now charged to the connection's memory
//! budget. Both trees are attacked in turn. Here the server runs in this process, so
//! its resident memory is this process's (`VmRSS`); this file holds one test so that
//! nothing else runs beside it.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use nf_ninep::errno::ENOMEM;
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
/// Growth allowed for `/fs`, and what may stay after the attacker left: a tenth of
/// what the snapshots would cost together (144 MB).
const BOUND: usize = FIDS * SNAPSHOT / 10;
/// Growth allowed for `/ro`, whose snapshots are charged: the attacker's connection
/// holds at most its memory budget of them (32 MiB), twice that for what the allocator
/// adds to each entry.
const RO_BOUND: usize = 64 << 20;

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
    eprintln!("{ENTRIES} entries made in {:?}", made.elapsed());
    let at = Target {
        daemon: &daemon,
        socket: &socket,
        user: &user,
    };
    // Page by page: the attacker's listings cost about nothing.
    let refused = at.first_pages("/fs", BOUND);
    assert_eq!(refused, 0, "/fs listings cost no snapshot to refuse");
    // Snapshots, charged: past the connection's budget the listing is refused.
    let refused = at.first_pages("/ro", RO_BOUND);
    assert!(refused > 0, "no /ro listing refused ENOMEM past the budget");
    daemon.shutdown(Duration::from_secs(5));
}

/// The server under attack, and the attacker.
struct Target<'a> {
    daemon: &'a Daemon,
    socket: &'a std::path::Path,
    user: &'a nf_testkit::users::Account,
}

impl Target<'_> {
    /// The attacker opens `FIDS` fids on `TREE/big` and reads one page of each; the
    /// server may grow by `bound` at most, and keep at most `BOUND` once the attacker
    /// left. Returns how many of the pages were refused `ENOMEM`.
    fn first_pages(&self, tree: &str, bound: usize) -> usize {
        let big = format!("{tree}/big");
        let before = rss();
        let client = as_user(self.user, || Client::connect_unix(self.socket)).unwrap();
        let me = client.attach(&self.user.name, "").unwrap();
        let mut open = Vec::new();
        let mut refused = 0;
        for _ in 0..FIDS {
            let dir = me.open(&big, LOpenFlags::RDONLY).unwrap();
            let reply = client
                .call(Treaddir {
                    fid: dir.number(),
                    offset: 0,
                    count: 200,
                })
                .unwrap();
            match &reply {
                Rmessage::Rreaddir(r) if !r.data.as_slice().is_empty() => {}
                Rmessage::Rlerror(e) if e.ecode == ENOMEM => refused += 1,
                other => panic!("{big}: a page of entries, or ENOMEM: {other:?}"),
            }
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
        let root = Client::connect_unix_with(self.socket, small)
            .unwrap()
            .attach("root", "")
            .unwrap();
        assert_eq!(
            root.read_file(&format!("{tree}/hello.txt")).unwrap(),
            b"hello"
        );
        let dir = root.open(&big, LOpenFlags::RDONLY).unwrap();
        assert!(!dir.readdir_page(0).unwrap().is_empty());
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "{:?}",
            asked.elapsed()
        );
        drop((dir, root));
        let grew = during.saturating_sub(before);
        assert!(
            grew < bound,
            "the server grew by {grew} bytes for {FIDS} first pages of {big} (bound {bound})"
        );

        drop(open);
        drop(me);
        drop(client);
        nf_testkit::eventually(
            "the attacker's connection ends",
            Duration::from_secs(10),
            || self.daemon.server().stats().clients == 0,
        );
        // The watcher gives freed memory back at most once a second (`trim`): look
        // until it has, or for 10 s (a deadline against hangs, not a timing claim).
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut after = rss();
        while after.saturating_sub(before) >= BOUND && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
            after = rss();
        }
        let kept = after.saturating_sub(before);
        eprintln!(
            "{big}: VmRSS {before} before, {during} with {FIDS} fids open ({refused} refused), {after} after"
        );
        assert!(
            kept < BOUND,
            "{kept} bytes stayed after the attacker left {big} (bound {BOUND})"
        );
        refused
    }
}
