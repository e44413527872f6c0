//! Tree spawn between real node servers on unix sockets: `ctl clone` hands a session
//! on, files stream down the tree, `exec` reaches every node, and a node that is gone
//! or dies part-way is reported with its subtree while the rest go on. (A root server
//! does not hand sessions on over plain tcp: `attack_jobs.rs`.)

use std::time::Duration;

use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, Root};
use nf_node::xcpu::XcpuConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};

struct Cluster {
    dir: tempfile::TempDir,
    nodes: Vec<Option<Daemon>>,
    addrs: Vec<String>,
}

impl Cluster {
    fn start(n: usize) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let mut nodes = Vec::new();
        let mut addrs = Vec::new();
        for i in 0..n {
            let socket = dir.path().join(format!("n{i}.sock"));
            let config = ServeConfig {
                unix: Some(socket.clone()),
                node: NodeConfig {
                    xcpu: XcpuConfig {
                        dir: Some(dir.path().join(format!("xcpu{i}"))),
                        ..XcpuConfig::default()
                    },
                    mem_registry: Some(dir.path().join("mem")),
                    ..NodeConfig::default()
                },
                ..ServeConfig::default()
            };
            let d = Daemon::start(&config).expect("start a node");
            addrs.push(format!("unix:{}", socket.display()));
            nodes.push(Some(d));
        }
        Cluster { dir, nodes, addrs }
    }

    fn root(&self, i: usize) -> Root {
        let socket = self.addrs[i].trim_start_matches("unix:");
        Client::connect_unix(socket)
            .unwrap()
            .attach("root", "")
            .unwrap()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for d in self.nodes.iter_mut().filter_map(Option::take) {
            d.shutdown(Duration::from_secs(5));
        }
    }
}

fn read(root: &Root, path: &str) -> String {
    String::from_utf8(
        root.read_file(path)
            .unwrap_or_else(|e| panic!("{path}: {e}")),
    )
    .unwrap()
}

fn clone(root: &Root) -> (nf_ninep_client::File, u64) {
    let mut f = root.open("/xcpu/clone", LOpenFlags::RDONLY).unwrap();
    let id = String::from_utf8(f.read_to_end().unwrap()).unwrap();
    (f, id.trim().parse().unwrap())
}

/// `ADDR ID` lines of a listing, as (node index, session).
fn listed(c: &Cluster, listing: &str) -> Vec<(usize, Option<u64>)> {
    let mut out: Vec<(usize, Option<u64>)> = listing
        .lines()
        .map(|l| {
            let mut w = l.split(' ');
            let addr = w.next().unwrap();
            let i = c.addrs.iter().position(|a| a == addr).unwrap_or(usize::MAX);
            (i, w.next().and_then(|id| id.parse().ok()))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_session_handed_on_runs_everywhere_with_the_same_files() {
    let c = Cluster::start(7);
    let head = c.root(0);
    let (_hold, id) = clone(&head);
    let dir = format!("/xcpu/{id}");
    // Written before the upload: every byte streams on as it arrives.
    let rest = c.addrs[1..].join(" ");
    head.write_file(&format!("{dir}/ctl"), format!("clone 2 {rest}").as_bytes())
        .unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let f = head
        .create(&format!("{dir}/fs/data"), LOpenFlags::WRONLY, 0o640)
        .unwrap();
    f.write_all_at(&data, 0).unwrap();
    drop(f);
    head.write_file(&format!("{dir}/argv"), b"/usr/bin/cksum data")
        .unwrap();
    let listing = read(&head, &format!("{dir}/clones"));
    let nodes = listed(&c, &listing);
    assert_eq!(nodes.len(), 6, "{listing}");
    assert!(
        nodes.iter().all(|(i, id)| *i < 7 && id.is_some()),
        "{listing}"
    );
    // After the barrier every node holds the whole file with its mode.
    for (i, sid) in &nodes {
        let r = c.root(*i);
        let sid = sid.unwrap();
        let got = r.read_file(&format!("/xcpu/{sid}/fs/data")).unwrap();
        assert!(got == data, "node {i} has the file");
        let st = r.stat(&format!("/xcpu/{sid}/fs/data")).unwrap();
        assert_eq!(st.permissions() & 0o777, 0o640);
        assert_eq!(
            read(&r, &format!("/xcpu/{sid}/argv")),
            "/usr/bin/cksum data"
        );
    }
    // exec here starts every node's copy.
    head.write_file(&format!("{dir}/ctl"), b"exec").unwrap();
    let expected = read(&head, &format!("{dir}/stdout"));
    assert!(expected.ends_with(" 3000000 data\n"), "{expected}");
    for (i, sid) in &nodes {
        let r = c.root(*i);
        let sid = sid.unwrap();
        assert_eq!(read(&r, &format!("/xcpu/{sid}/wait")), "exit 0\n");
        assert_eq!(read(&r, &format!("/xcpu/{sid}/stdout")), expected);
    }
    // wipe here ends them all.
    head.write_file(&format!("{dir}/ctl"), b"wipe").unwrap();
    for (i, sid) in &nodes {
        let r = c.root(*i);
        let gone = (0..1000).any(|_| {
            std::thread::sleep(Duration::from_millis(10));
            r.stat(&format!("/xcpu/{}", sid.unwrap())).is_err()
        });
        assert!(gone, "node {i}'s session ended with the head's wipe");
    }
}

#[test]
fn an_unreachable_node_is_reported_with_its_subtree() {
    let c = Cluster::start(3);
    // A socket nothing listens on.
    let dead = format!("unix:{}", c.dir.path().join("dead.sock").display());
    let head = c.root(0);
    let (_hold, id) = clone(&head);
    let dir = format!("/xcpu/{id}");
    // Fan-out 2 over [dead, n1, n2]: dead heads the first group (with n1 below it).
    let line = format!("clone 2 {dead} {} {}", c.addrs[1], c.addrs[2]);
    head.write_file(&format!("{dir}/ctl"), line.as_bytes())
        .unwrap();
    let listing = read(&head, &format!("{dir}/clones"));
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 3, "{listing}");
    assert!(
        lines[0].starts_with(&format!("{dead} - failed: connecting")),
        "{listing}"
    );
    assert_eq!(
        lines[1],
        format!("{} - failed: not reached ({dead} failed)", c.addrs[1])
    );
    assert!(lines[2].starts_with(&format!("{} ", c.addrs[2])));
    assert!(lines[2].split(' ').nth(1).unwrap().parse::<u64>().is_ok());
    // Bad clone lines say why.
    let (_h2, id2) = clone(&head);
    let err = head
        .write_file(&format!("/xcpu/{id2}/ctl"), b"clone 2 nonsense")
        .unwrap_err();
    assert_eq!(err.errno(), Some(nf_ninep::errno::EINVAL));
    assert!(read(&head, &format!("/xcpu/{id2}/state")).contains("clone: \"nonsense\""));
}

#[test]
fn a_node_killed_part_way_is_cut_off_and_the_rest_finish() {
    let mut c = Cluster::start(4);
    let head = c.root(0);
    let (_hold, id) = clone(&head);
    let dir = format!("/xcpu/{id}");
    // Fan-out 3: each of n1, n2, n3 a child of the head.
    let rest = c.addrs[1..].join(" ");
    head.write_file(&format!("{dir}/ctl"), format!("clone 3 {rest}").as_bytes())
        .unwrap();
    let f = head
        .create(&format!("{dir}/fs/data"), LOpenFlags::WRONLY, 0o644)
        .unwrap();
    let chunk = vec![7u8; 1 << 20];
    for i in 0..4u64 {
        f.write_all_at(&chunk, i << 20).unwrap();
    }
    // n2 dies in the middle of the upload.
    c.nodes[2].take().unwrap().shutdown(Duration::from_secs(5));
    for i in 4..8u64 {
        f.write_all_at(&chunk, i << 20).unwrap();
    }
    drop(f);
    let listing = read(&head, &format!("{dir}/clones"));
    let nodes = listed(&c, &listing);
    assert_eq!(nodes.len(), 3, "{listing}");
    for (i, sid) in nodes {
        if i == 2 {
            assert_eq!(sid, None, "the dead node is failed: {listing}");
            continue;
        }
        let sid = sid.expect("the live nodes have their sessions");
        let st = c.root(i).stat(&format!("/xcpu/{sid}/fs/data")).unwrap();
        assert_eq!(st.size(), 8 << 20, "node {i} has the whole file");
    }
}

/// A link the job (or another of the user's jobs) plants in the upload directory is
/// not followed when the session is handed on: the node reads as root there.
#[test]
fn links_planted_in_the_upload_directory_are_not_handed_on() {
    let c = Cluster::start(2);
    let secret = c.dir.path().join("secret");
    std::fs::write(&secret, b"root only").unwrap();
    let head = c.root(0);
    let (_hold, id) = clone(&head);
    let dir = format!("/xcpu/{id}");
    head.write_file(&format!("{dir}/fs/fine"), b"data").unwrap();
    let host_dir = c.dir.path().join(format!("xcpu0/{id}"));
    std::os::unix::fs::symlink(&secret, host_dir.join("evil")).unwrap();
    head.write_file(
        &format!("{dir}/ctl"),
        format!("clone 1 {}", c.addrs[1]).as_bytes(),
    )
    .unwrap();
    let listing = read(&head, &format!("{dir}/clones"));
    let child: u64 = listing.split(' ').nth(1).unwrap().trim().parse().unwrap();
    let r = c.root(1);
    let names: Vec<String> = r
        .readdir(&format!("/xcpu/{child}/fs"))
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .filter(|n| n != "." && n != "..")
        .collect();
    assert_eq!(names, ["fine"], "the link was not followed");
    let child_dir = c.dir.path().join(format!("xcpu1/{child}"));
    assert!(!child_dir.join("evil").exists());
    assert_eq!(std::fs::read(child_dir.join("fine")).unwrap(), b"data");
}

/// `tree` records as (node, kind, text), sorted: their order across nodes is free.
fn records(text: &str) -> Vec<(String, String, String)> {
    let mut out: Vec<_> = text
        .lines()
        .map(|l| {
            let mut w = l.splitn(3, ' ');
            let node = w.next().unwrap().to_string();
            let kind = w.next().unwrap_or_default().to_string();
            (node, kind, w.next().unwrap_or_default().to_string())
        })
        .collect();
    out.sort();
    out
}

#[test]
fn the_head_s_tree_file_carries_every_node_s_output_rank_and_exit() {
    let c = Cluster::start(7);
    let head = c.root(0);
    let (_hold, id) = clone(&head);
    let dir = format!("/xcpu/{id}");
    // The first node's env only: the tree places the others (rank = position).
    head.write_file(
        &format!("{dir}/env"),
        format!(
            "NF_EXEC_RANK=0\nNF_EXEC_SIZE=7\nNF_EXEC_NODE={}\n",
            c.addrs[0]
        )
        .as_bytes(),
    )
    .unwrap();
    let rest = c.addrs[1..].join(" ");
    head.write_file(&format!("{dir}/ctl"), format!("clone 2 {rest}").as_bytes())
        .unwrap();
    let script = "echo rank $NF_EXEC_RANK of $NF_EXEC_SIZE on $NF_EXEC_NODE\n\
                  printf 'to stderr, no newline' >&2\nexit $NF_EXEC_RANK\n";
    head.write_file(&format!("{dir}/fs/job.sh"), script.as_bytes())
        .unwrap();
    head.write_file(&format!("{dir}/argv"), b"/bin/sh job.sh")
        .unwrap();
    let listing = read(&head, &format!("{dir}/clones"));
    assert_eq!(listed(&c, &listing).len(), 6, "{listing}");
    // Opened before exec: nothing is missed.
    let mut tree = head
        .open(&format!("{dir}/tree"), LOpenFlags::RDONLY)
        .unwrap();
    head.write_file(&format!("{dir}/ctl"), b"exec").unwrap();
    // Ends (end of file) once every node has ended.
    let text = String::from_utf8(tree.read_to_end().unwrap()).unwrap();
    let got = records(&text);
    let mut want = Vec::new();
    for (rank, addr) in c.addrs.iter().enumerate() {
        let node = if rank == 0 {
            ".".to_string()
        } else {
            addr.clone()
        };
        want.push((node.clone(), "err".into(), "to stderr, no newline".into()));
        want.push((node.clone(), "exit".into(), rank.to_string()));
        want.push((node, "out".into(), format!("rank {rank} of 7 on {addr}")));
    }
    want.sort();
    assert_eq!(got, want, "{text}");
}

#[test]
fn a_node_that_cannot_run_the_job_ends_in_the_tree_with_why() {
    let mut c = Cluster::start(4);
    let dead = format!("unix:{}", c.dir.path().join("dead.sock").display());
    let head = c.root(0);
    let (_hold, id) = clone(&head);
    let dir = format!("/xcpu/{id}");
    // Fan-out 2 over [dead, n1, n2, n3]: dead heads [dead, n1], n2 heads [n2, n3].
    let line = format!(
        "clone 2 {dead} {} {} {}",
        c.addrs[1], c.addrs[2], c.addrs[3]
    );
    head.write_file(&format!("{dir}/ctl"), line.as_bytes())
        .unwrap();
    head.write_file(&format!("{dir}/argv"), b"/bin/sleep 1")
        .unwrap();
    read(&head, &format!("{dir}/clones"));
    let mut tree = head
        .open(&format!("{dir}/tree"), LOpenFlags::RDONLY)
        .unwrap();
    head.write_file(&format!("{dir}/ctl"), b"exec").unwrap();
    // n3 (below n2) goes away while the job runs.
    c.nodes[3].take().unwrap().shutdown(Duration::from_secs(5));
    let text = String::from_utf8(tree.read_to_end().unwrap()).unwrap();
    let got = records(&text);
    let ends: Vec<(&str, &str)> = got
        .iter()
        .map(|(n, k, _)| (n.as_str(), k.as_str()))
        .collect();
    let mut want = vec![
        (".", "exit"),
        (dead.as_str(), "failed"),
        (c.addrs[1].as_str(), "failed"),
        (c.addrs[2].as_str(), "exit"),
        (c.addrs[3].as_str(), "failed"),
    ];
    want.sort();
    assert_eq!(ends, want, "{text}");
    let why = |n: &str| &got.iter().find(|r| r.0 == n).unwrap().2;
    assert!(why(&dead).starts_with("connecting"), "{text}");
    assert_eq!(why(&c.addrs[1]), &format!("not reached ({dead} failed)"));
}

#[test]
fn kill_reaches_the_tree_after_the_head_s_own_job_has_ended_and_quiet_jobs_are_not_lost() {
    let c = Cluster::start(3);
    let head = c.root(0);
    let (_hold, id) = clone(&head);
    let dir = format!("/xcpu/{id}");
    head.write_file(&format!("{dir}/env"), b"NF_EXEC_RANK=0\n")
        .unwrap();
    let rest = c.addrs[1..].join(" ");
    head.write_file(&format!("{dir}/ctl"), format!("clone 2 {rest}").as_bytes())
        .unwrap();
    // The head's job ends at once; the others would run for a minute.
    head.write_file(
        &format!("{dir}/argv"),
        b"/bin/sh -c '[ $NF_EXEC_RANK = 0 ] || exec sleep 60'",
    )
    .unwrap();
    read(&head, &format!("{dir}/clones"));
    let tree = head
        .open(&format!("{dir}/tree"), LOpenFlags::RDONLY)
        .unwrap();
    head.write_file(&format!("{dir}/ctl"), b"exec").unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(tree));
    let first = lines.next().unwrap().unwrap();
    assert_eq!(first, ". exit 0", "the head's job ended first");
    // Quiet for longer than a node's connect bound (10 s): the relays wait as long as
    // the jobs run, without calling the children lost.
    std::thread::sleep(Duration::from_secs(11));
    // The head's job is gone: the kill is for the tree below.
    let _ = head.write_file(&format!("{dir}/ctl"), b"kill KILL");
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let mut want = vec![
        format!("{} signal 9", c.addrs[1]),
        format!("{} signal 9", c.addrs[2]),
    ];
    want.sort();
    let mut got = rest.clone();
    got.sort();
    assert_eq!(got, want, "{rest:?}");
}
