//! The node tree through a real client on a real unix socket: the mount table (walks
//! across mounts, `..`, unique qids, aname), `/status`, `/fs` and `/ro`, and
//! path escapes.

mod support;

use std::collections::HashSet;

use nf_ninep::errno::{ENOENT, EROFS};
use nf_ninep::LOpenFlags;
use nf_ninep_server::ServerConfig;
use support::Node;

#[test]
fn root_lists_every_mount() {
    let node = Node::start();
    let root = node.root();
    let mut names: Vec<String> = root
        .readdir("/")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert_eq!(names, ["fs", "log", "mem", "pipe", "ro", "status", "xcpu"]);
    assert!(root.stat("/").unwrap().is_dir());
    assert!(!root.stat("/status").unwrap().is_dir());
    // The root cannot be changed.
    assert_eq!(root.mkdir("/x", 0o755).unwrap_err().errno(), Some(EROFS));
    assert_eq!(root.remove("/status").unwrap_err().errno(), Some(EROFS));
}

#[test]
fn walks_cross_mounts_and_dotdot_leads_back_to_the_root() {
    let node = Node::start();
    let root = node.root();
    let root_qid = root.stat("/").unwrap().qid;
    assert_eq!(root.stat("/fs/..").unwrap().qid, root_qid);
    assert_eq!(root.stat("/fs/../..").unwrap().qid, root_qid);
    assert_eq!(root.stat("/pipe/..").unwrap().qid, root_qid);
    // One walk message through two mounts.
    assert_eq!(
        root.stat("/fs/../ro/hello.txt").unwrap().size(),
        "hello from the host\n".len() as u64
    );
    // A child's `..` inside it stays inside it.
    std::fs::create_dir(node.export.join("sub")).unwrap();
    assert_eq!(
        root.stat("/fs/sub/..").unwrap().qid,
        root.stat("/fs").unwrap().qid
    );
    // The `..` entry of a mount's root names the table's root.
    let entries = root.open("/fs", LOpenFlags::RDONLY).unwrap();
    let mut all = Vec::new();
    let mut offset = 0;
    loop {
        let page = entries.readdir_page(offset).unwrap();
        let Some(last) = page.last() else { break };
        offset = last.offset;
        all.extend(page);
    }
    let dotdot = all.iter().find(|e| e.name == "..").expect("a .. entry");
    assert_eq!(dotdot.qid, root_qid);
}

#[test]
fn qids_are_unique_across_mounts() {
    let node = Node::start();
    let root = node.root();
    // The same host file through /fs and /ro: different qid.paths.
    let a = root.stat("/fs/hello.txt").unwrap().qid;
    let b = root.stat("/ro/hello.txt").unwrap().qid;
    assert_ne!(a.path, b.path);
    let mut seen = HashSet::new();
    for p in ["/", "/fs", "/ro", "/status", "/log", "/pipe", "/mem"] {
        assert!(
            seen.insert(root.stat(p).unwrap().qid.path),
            "{p} repeats a qid"
        );
    }
    assert!(seen.insert(a.path) && seen.insert(b.path));
    // Directory entries carry the same qids as walks.
    let listed = root.readdir("/fs").unwrap();
    let hello = listed.iter().find(|e| e.name == "hello.txt").unwrap();
    assert_eq!(hello.qid.path, a.path);
}

#[test]
fn aname_attaches_inside_the_tree() {
    let node = Node::start();
    let fs = node.client().attach("root", "/fs").unwrap();
    assert_eq!(
        fs.read_file("/hello.txt").unwrap(),
        b"hello from the host\n"
    );
    assert_eq!(
        node.client()
            .attach("root", "/nowhere")
            .unwrap_err()
            .errno(),
        Some(ENOENT)
    );
}

#[test]
fn status_parses_and_its_values_are_sane() {
    let node = Node::start();
    let root = node.root();
    assert_eq!(root.stat("/status").unwrap().size(), 0, "synthetic: size 0");
    let text = String::from_utf8(root.read_file("/status").unwrap()).unwrap();
    let get = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("{key} missing in {text}"))
            .to_string()
    };
    assert!(!get("host").is_empty());
    assert_eq!(get("arch"), std::env::consts::ARCH);
    let cores: usize = get("cores").parse().unwrap();
    assert!(cores >= 1);
    let total: u64 = get("mem_total_kib").parse().unwrap();
    let avail: u64 = get("mem_available_kib").parse().unwrap();
    assert!(total > 0 && avail <= total, "{total} {avail}");
    let load: Vec<f64> = get("load").split(' ').map(|v| v.parse().unwrap()).collect();
    assert_eq!(load.len(), 3);
    assert!(load.iter().all(|l| *l >= 0.0));
    assert!(get("uptime_s").parse::<f64>().unwrap() > 0.0);
    let _: usize = get("ranks").parse().unwrap();
    assert_eq!(get("labels"), "-", "no labels");
    assert_eq!(get("sessions"), "0");
}

#[test]
fn status_counts_ranks_running() {
    let node = Node::start();
    let root = node.root();
    let ranks = |root: &nf_ninep_client::Root| -> usize {
        let text = String::from_utf8(root.read_file("/status").unwrap()).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("ranks "))
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = ranks(&root);
    let mut rank = std::process::Command::new("sleep")
        .arg("30")
        .env("NF_RANK", "0")
        .env("NF_JOB_ID", "status-test")
        .spawn()
        .unwrap();
    support::eventually("the rank to be counted", || ranks(&root) > before);
    rank.kill().unwrap();
    rank.wait().unwrap();
}

#[test]
fn fs_writes_reach_the_host() {
    let node = Node::start();
    let root = node.root();
    root.write_file("/fs/new.txt", b"written over 9P").unwrap();
    assert_eq!(
        std::fs::read(node.export.join("new.txt")).unwrap(),
        b"written over 9P"
    );
    root.mkdir("/fs/d", 0o755).unwrap();
    assert!(node.export.join("d").is_dir());
    root.remove("/fs/new.txt").unwrap();
    assert!(!node.export.join("new.txt").exists());
}

#[test]
fn ro_writes_stay_private_and_vanish_on_restart() {
    let mut node = Node::start();
    {
        let root = node.root();
        root.write_file("/ro/hello.txt", b"changed").unwrap();
        root.write_file("/ro/extra.txt", b"new").unwrap();
        assert_eq!(root.read_file("/ro/hello.txt").unwrap(), b"changed");
        // Another client of the same server sees the private copy…
        let other = node.root();
        assert_eq!(other.read_file("/ro/extra.txt").unwrap(), b"new");
        // …the host does not.
        assert_eq!(
            std::fs::read(node.export.join("hello.txt")).unwrap(),
            b"hello from the host\n"
        );
        assert!(!node.export.join("extra.txt").exists());
        assert_eq!(
            root.read_file("/fs/hello.txt").unwrap(),
            b"hello from the host\n"
        );
    }
    node.restart_with(ServerConfig::default());
    let root = node.root();
    assert_eq!(
        root.read_file("/ro/hello.txt").unwrap(),
        b"hello from the host\n"
    );
    assert_eq!(
        root.stat("/ro/extra.txt").unwrap_err().errno(),
        Some(ENOENT)
    );
}

#[test]
fn dotdot_and_symlinks_never_escape_the_export() {
    let node = Node::start();
    // A secret beside the export, and a symlink inside pointing at it.
    std::fs::write(node.dir.path().join("secret"), b"secret").unwrap();
    std::os::unix::fs::symlink("../secret", node.export.join("link")).unwrap();
    std::os::unix::fs::symlink(node.dir.path(), node.export.join("abs")).unwrap();
    let root = node.root();
    for tree in ["/fs", "/ro"] {
        // `..` past the export's root stops at the node's root, never the host's.
        let up = format!("{tree}/../../../secret");
        assert_eq!(root.stat(&up).unwrap_err().errno(), Some(ENOENT), "{up}");
        // Symlinks are not followed: reading through them fails.
        for link in ["link", "abs/secret"] {
            let p = format!("{tree}/{link}");
            assert!(root.read_file(&p).is_err(), "{p} was followed");
        }
        // The link itself is visible as a link.
        assert!(root.stat(&format!("{tree}/link")).unwrap().is_symlink());
    }
}
