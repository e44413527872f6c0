//! `nf gateway` in front of real `nf serve` nodes, each on a namespace host, all over
//! TLS with certificates made by `nf cert`: files, status, views and jobs through one
//! gateway and through a gateway above it; members and gateways that die, stop and
//! come back under clients; many clients at once; and who may reach what. Clients
//! present the unprivileged test account's certificate, so everything done on a node
//! must be done as that account. Needs root and iproute2 (as every namespace test).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use nf_ninep::errno::{EACCES, EHOSTDOWN, ENOENT, ESTALE};
use nf_ninep::LOpenFlags;
use nf_testkit::users::second_test_account;
use support::{gateway_config, pseudo_random, text, wait_for, Hosts, BOUND};

/// How long a client may wait for an error once its member or gateway is gone.
const ERROR_BOUND: Duration = Duration::from_secs(15);
/// How long a restarted member may take to be shown up again.
const BACK_BOUND: Duration = Duration::from_secs(10);

/// `(nodeK, tls:…)` for the hosts `ks`, node K being host K.
fn members(h: &Hosts, ks: impl IntoIterator<Item = usize>) -> Vec<(String, String)> {
    ks.into_iter()
        .map(|k| (format!("node{k}"), h.addr(k)))
        .collect()
}

/// `ADDR:PATH`.
fn at(addr: &str, path: &str) -> String {
    format!("{addr}:{path}")
}

/// The names `nf ls` printed (directories without their `/`).
fn names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .map(|l| l.trim_end_matches('/').to_string())
        .collect()
}

/// The value of `key` in a `key value` status text.
fn field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
}

/// The errno of a failed client call, else a panic showing what came back.
fn errno_of<T: std::fmt::Debug>(r: Result<T, nf_ninep_client::ClientError>) -> u32 {
    match r {
        Err(e) => e
            .errno()
            .unwrap_or_else(|| panic!("not a server's error: {e}")),
        Ok(v) => panic!("succeeded: {v:?}"),
    }
}

/// Runs `nf exec` and checks that every copy ran as the test account on a host of
/// `allowed`, printing its user and network namespace; gives the hosts used per copy.
fn exec_where(
    h: &Hosts,
    from: usize,
    target: &str,
    copies: usize,
    allowed: &[usize],
) -> Vec<usize> {
    let out = h.nf(
        from,
        &[
            "exec",
            "-n",
            &copies.to_string(),
            target,
            "--",
            "sh",
            "-c",
            "echo \"user $(id -un)\"; echo \"ns $(readlink /proc/self/ns/net)\"",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "nf exec {target}: stdout:\n{stdout}\nstderr:\n{}",
        text(&out.stderr)
    );
    let mut per_copy: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in stdout.lines() {
        let (tag, said) = line.rsplit_once(": ").expect("a tagged line");
        per_copy
            .entry(tag.to_string())
            .or_default()
            .push(said.to_string());
    }
    assert_eq!(per_copy.len(), copies, "{stdout}");
    per_copy
        .values()
        .map(|said| {
            assert!(said.contains(&format!("user {}", h.user.name)), "{said:?}");
            let ns = said
                .iter()
                .find_map(|s| s.strip_prefix("ns "))
                .unwrap_or_else(|| panic!("{said:?}"));
            let host = h.host_of_ns(ns).expect("a namespace host");
            assert!(allowed.contains(&host), "ran on host {host}: {stdout}");
            host
        })
        .collect()
}

/// What test 1 checks through a gateway at `gw`, whose root is `top` (`""` for gw1
/// itself, `/n/rack1` for gw1 seen through gw2): listings, each node's status, a
/// file written and read back, `/mem`, the gpu view and unique qids.
fn check_eight_nodes_through(h: &Hosts, from: usize, gw: &str, top: &str, node: usize) {
    let p = |path: &str| at(gw, &format!("{top}{path}"));
    let all: Vec<String> = (0..8).map(|k| format!("node{k}")).collect();
    assert_eq!(names(&h.nf_ok(from, &["ls", &p("/n")])), all);
    for k in 0..8 {
        let status = h.nf_ok(from, &["cat", &p(&format!("/n/node{k}/status"))]);
        let labels: Vec<&str> = field(&status, "labels")
            .unwrap_or_else(|| panic!("no labels in {status}"))
            .split(',')
            .collect();
        assert!(labels.contains(&format!("node{k}").as_str()), "{status}");
        assert_eq!(labels.contains(&"gpu"), k % 2 == 0, "{status}");
        assert!(field(&status, "host").is_some(), "{status}");
    }

    // A file written through the gateway is the node's, made as the user.
    let data = pseudo_random(node as u64, 300_000);
    let name = format!("written-via-{}", if top.is_empty() { "gw1" } else { "gw2" });
    let local = h.file(&name);
    std::fs::write(&local, &data).unwrap();
    let remote = p(&format!("/n/node{node}/fs/{name}"));
    h.nf_ok(from, &["cp", &local, &remote]);
    let back = h.file(&format!("{name}.back"));
    h.nf_ok(from, &["cp", &remote, &back]);
    assert!(std::fs::read(&back).unwrap() == data, "read back differs");
    let on_host = h.export(node).join(&name);
    assert!(
        std::fs::read(&on_host).unwrap() == data,
        "the export differs"
    );
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&on_host).unwrap());
    assert_eq!(owner, h.user.uid, "{} is not the user's", on_host.display());

    h.nf_ok(from, &["ls", &p("/n/node0/mem")]);
    let gpu = names(&h.nf_ok(from, &["ls", &p("/views/gpu/n")]));
    assert_eq!(gpu, ["node0", "node2", "node4", "node6"]);

    let stat = h.nf_ok(
        from,
        &["stat", &p("/n/node0/status"), &p("/n/node1/status")],
    );
    let qids: Vec<&str> = stat.lines().filter(|l| l.starts_with("qid ")).collect();
    assert_eq!(qids.len(), 2, "{stat}");
    assert_ne!(qids[0], qids[1], "two nodes' status files share a qid");
}

#[test]
fn eight_nodes_through_a_gateway_and_a_gateway_above_it() {
    let mut h = Hosts::new(10);
    let (gw1, gw2) = (8, 9);
    for k in 0..8 {
        let label = format!("node{k}");
        let mut extra = vec!["--trust-gateway", "gw1", "--label", &label];
        if k % 2 == 0 {
            extra.extend(["--label", "gpu"]);
        }
        h.start_node(k, &extra);
    }
    let view = "[[view]]\nname = \"gpu\"\nlabels = [\"gpu\"]\n";
    h.start_gateway(
        gw1,
        "gw1",
        &gateway_config(&["gw2"], &members(&h, 0..8), view),
    );
    let rack = [("rack1".to_string(), h.addr(gw1))];
    h.start_gateway(gw2, "gw2", &gateway_config(&[], &rack, ""));
    let (a1, a2) = (h.addr(gw1), h.addr(gw2));

    // Both gateways see every node up.
    let r1 = h.attach(gw2, &a1);
    let s1 = h.wait_text(&r1, "/status", |t| t.starts_with("members 8 up 8 down 0\n"));
    assert!(s1.contains("\nnodes 8 up 8\n"), "{s1}");
    for k in 0..8 {
        assert!(s1.contains(&format!("\nnode{k} up node ")), "{s1}");
    }
    let r2 = h.attach(gw2, &a2);
    let s2 = h.wait_text(&r2, "/status", |t| {
        t.lines()
            .any(|l| l.starts_with("rack1 up cluster nodes=8/8 "))
    });
    assert!(
        s2.starts_with("members 1 up 1 down 0\nnodes 8 up 8\n"),
        "{s2}"
    );
    // The nf command says the same.
    assert_eq!(
        h.nf_ok(gw2, &["cat", &at(&a1, "/status")]).lines().next(),
        Some("members 8 up 8 down 0")
    );
    assert!(h
        .nf_ok(gw2, &["cat", &at(&a2, "/status")])
        .contains("\nrack1 up cluster nodes=8/8 "));

    let j1: serde_json::Value =
        serde_json::from_str(&h.nf_ok(gw2, &["cat", &at(&a1, "/status.json")])).unwrap();
    assert_eq!(
        (j1["members"].as_u64(), j1["up"].as_u64()),
        (Some(8), Some(8)),
        "{j1}"
    );
    assert_eq!(j1["totals"]["nodes_up"].as_u64(), Some(8), "{j1}");
    let list = j1["list"].as_array().unwrap();
    assert_eq!(list.len(), 8, "{j1}");
    assert!(
        list.iter()
            .all(|m| m["state"] == "up" && m["kind"] == "node"),
        "{j1}"
    );
    let j2: serde_json::Value =
        serde_json::from_str(&h.nf_ok(gw2, &["cat", &at(&a2, "/status.json")])).unwrap();
    assert_eq!(
        (j2["members"].as_u64(), j2["up"].as_u64()),
        (Some(1), Some(1)),
        "{j2}"
    );
    assert_eq!(j2["totals"]["nodes"].as_u64(), Some(8), "{j2}");
    assert_eq!(j2["totals"]["nodes_up"].as_u64(), Some(8), "{j2}");
    assert_eq!(j2["list"][0]["kind"], "cluster", "{j2}");
    assert_eq!(
        j2["totals"]["cores"], j1["totals"]["cores"],
        "gw2 adds up gw1's cores"
    );

    check_eight_nodes_through(&h, gw2, &a1, "", 3);
    check_eight_nodes_through(&h, gw2, &a2, "/n/rack1", 5);

    // Jobs placed through the gpu view run as the user on gpu nodes only.
    let gpu_hosts = [0, 2, 4, 6];
    let mut ran_on = exec_where(&h, gw2, &at(&a1, "/views/gpu"), 4, &gpu_hosts);
    // gw1's procs name the same nodes (`G member M`, node K on host K).
    let procs = h.nf_ok(gw2, &["cat", &at(&a1, "/xcpu/procs")]);
    let mut placed: Vec<String> = procs
        .lines()
        .map(|l| {
            l.split(' ')
                .nth(1)
                .unwrap_or_else(|| panic!("{procs}"))
                .to_string()
        })
        .collect();
    placed.sort();
    ran_on.sort();
    let ran_on: Vec<String> = ran_on.iter().map(|k| format!("node{k}")).collect();
    assert_eq!(placed, ran_on, "{procs}");
    // Through gw2 into gw1: placed again below.
    exec_where(&h, gw2, &at(&a2, "/n/rack1/views/gpu"), 2, &gpu_hosts);
    let all: Vec<usize> = (0..8).collect();
    exec_where(&h, gw2, &at(&a2, "/n/rack1"), 1, &all);
    let procs2 = h.nf_ok(gw2, &["cat", &at(&a2, "/xcpu/procs")]);
    assert_eq!(
        procs2, "",
        "gw2 placed nothing itself (its scopes were gw1's)"
    );
}

/// Gateway gw1 on host 0 with the members node1 and node2 (`nf serve` on hosts 1 and
/// 2, trusting gw1), once both are up; clients run on host 0.
fn gateway_and_two_nodes() -> Hosts {
    let mut h = Hosts::new(3);
    for k in 1..=2 {
        h.start_node(k, &["--trust-gateway", "gw1"]);
    }
    h.start_gateway(0, "gw1", &gateway_config(&[], &members(&h, 1..=2), ""));
    let root = h.attach(0, &h.addr(0));
    h.wait_text(&root, "/status", |t| {
        t.starts_with("members 2 up 2 down 0\n")
    });
    h
}

/// Reads `file` from offset 0 to its end over and over, checking every byte against
/// `want`, until a read fails: gives that error, and counts bytes in `read`.
fn stream(
    mut file: nf_ninep_client::File,
    want: &[u8],
    read: &AtomicU64,
) -> nf_ninep_client::ClientError {
    let mut offset = 0u64;
    loop {
        match file.read_chunk(offset, file.chunk()) {
            Ok(data) if data.is_empty() => offset = 0,
            Ok(data) => {
                let at = offset as usize;
                assert!(
                    data[..] == want[at..at + data.len()],
                    "wrong bytes at {offset}"
                );
                offset += data.len() as u64;
                read.fetch_add(data.len() as u64, Ordering::Relaxed);
            }
            Err(e) => return e,
        }
        file.seek_to(offset);
    }
}

#[test]
fn a_node_restarted_under_streaming_clients_gets_errors_not_hangs() {
    let mut h = gateway_and_two_nodes();
    let gw = h.addr(0);
    let big = pseudo_random(16, 16 << 20);
    std::fs::write(h.export(1).join("big.bin"), &big).unwrap();
    let root = h.attach(0, &gw);

    // Clients on node1: nf tail -f of its log, a reader streaming a 16 MiB file over
    // and over, and an open fid left idle.
    let tail_out = h.file("tail.out");
    let mut tail = h.nf_command(0, &h.user.name, &["tail", "-f", &at(&gw, "/n/node1/log")]);
    tail.stdout(std::fs::File::create(&tail_out).unwrap())
        .stderr(std::process::Stdio::piped());
    let tail = tail.spawn().unwrap();
    let idle = root
        .open("/n/node1/fs/big.bin", LOpenFlags::RDONLY)
        .unwrap();
    let streamed = Arc::new(AtomicU64::new(0));
    let (tx, rx) = mpsc::channel();
    {
        let file = root
            .open("/n/node1/fs/big.bin", LOpenFlags::RDONLY)
            .unwrap();
        let (big, streamed) = (big.clone(), Arc::clone(&streamed));
        std::thread::spawn(move || {
            let e = stream(file, &big, &streamed);
            let _ = tx.send((e.errno(), e.to_string(), Instant::now()));
        });
    }
    wait_for("tail -f following and a whole pass streamed", BOUND, || {
        let caught_up = std::fs::metadata(&tail_out).is_ok_and(|m| m.len() > 0);
        let n = streamed.load(Ordering::Relaxed);
        if caught_up && n >= big.len() as u64 {
            Ok(())
        } else {
            Err(format!("tail output: {caught_up}, streamed {n}"))
        }
    });

    let killed = Instant::now();
    h.kill(1);
    let (errno, said, when) = rx
        .recv_timeout(ERROR_BOUND)
        .expect("the streaming reader got no error: it hangs");
    assert_eq!(errno, Some(EHOSTDOWN), "{said}");
    eprintln!(
        "the streaming reader failed {:?} after the kill",
        when - killed
    );
    let out = nf_testkit::finish_within(tail, ERROR_BOUND, "nf tail -f of the killed node");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Host is down"),
        "{}",
        text(&out.stderr)
    );

    let status = h.wait_text(&root, "/status", |t| t.contains("\nnode1 down "));
    assert!(status.starts_with("members 2 up 1 down 1\n"), "{status}");
    assert_eq!(errno_of(idle.read_chunk(0, 10)), EHOSTDOWN);
    let out = h.nf(0, &["cat", &at(&gw, "/n/node1/status")]);
    assert!(
        text(&out.stderr).contains("Host is down"),
        "{}",
        text(&out.stderr)
    );
    h.nf_ok(0, &["cat", &at(&gw, "/n/node2/status")]);

    // Back within BACK_BOUND; the old fid is stale, a new walk reads again.
    h.restart(1);
    let restarted = Instant::now();
    wait_for("node1 shown up again", BACK_BOUND, || {
        let t = text(&root.read_file("/status").map_err(|e| e.to_string())?);
        t.lines()
            .any(|l| l.starts_with("node1 up "))
            .then_some(())
            .ok_or(t)
    });
    eprintln!("node1 back after {:?}", restarted.elapsed());
    let copy = h.file("big.back");
    h.nf_ok(0, &["cp", &at(&gw, "/n/node1/fs/big.bin"), &copy]);
    assert!(
        std::fs::read(&copy).unwrap() == big,
        "big.bin read back differs"
    );
    assert_eq!(errno_of(idle.read_chunk(0, 10)), ESTALE);

    // A stopped node: the probe's deadline fails what waits on it.
    h.signal(2, "STOP");
    let stopped = Instant::now();
    let mut cat = h.nf_command(0, &h.user.name, &["cat", &at(&gw, "/n/node2/status")]);
    let out = nf_testkit::output_within(&mut cat, ERROR_BOUND);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("Host is down"),
        "{}",
        text(&out.stderr)
    );
    // About one probe interval (2 s) and the probe's deadline (5 s).
    eprintln!(
        "a read of the stopped node failed after {:?}",
        stopped.elapsed()
    );
    let status = h.wait_text(&root, "/status", |t| t.contains("\nnode2 down "));
    assert!(status.contains("reading its status failed"), "{status}");
    h.signal(2, "CONT");
    wait_for("node2 shown up again", BOUND, || {
        let t = text(&root.read_file("/status").map_err(|e| e.to_string())?);
        t.lines()
            .any(|l| l.starts_with("node2 up "))
            .then_some(())
            .ok_or(t)
    });
    h.nf_ok(0, &["cat", &at(&gw, "/n/node2/status")]);
}

/// Reads `file` on another thread: the result, or `None` if none came within
/// [`ERROR_BOUND`].
fn read_within(file: &Arc<nf_ninep_client::File>) -> Option<Result<Vec<u8>, String>> {
    let (tx, rx) = mpsc::channel();
    let file = Arc::clone(file);
    std::thread::spawn(move || {
        let _ = tx.send(file.read_chunk(0, 100).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(ERROR_BOUND).ok()
}

#[test]
fn a_restarted_gateway_fails_held_fids_and_takes_new_attaches() {
    let mut h = gateway_and_two_nodes();
    let gw = h.addr(0);
    std::fs::write(h.export(1).join("held.txt"), "held\n").unwrap();

    for how in ["TERM", "KILL"] {
        let root = h.attach(0, &gw);
        let held = Arc::new(
            root.open("/n/node1/fs/held.txt", LOpenFlags::RDONLY)
                .unwrap(),
        );
        assert_eq!(read_within(&held), Some(Ok(b"held\n".to_vec())));
        let mut tail = h.nf_command(0, &h.user.name, &["tail", "-f", &at(&gw, "/n/node1/log")]);
        tail.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let tail = tail.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(500));

        h.signal(0, how);
        let out = nf_testkit::finish_within(tail, ERROR_BOUND, "nf tail -f through the gateway");
        assert!(!out.status.success(), "{how}: {}", text(&out.stderr));
        match read_within(&held) {
            Some(Err(_)) => {}
            other => panic!("{how}: a held fid read {other:?} after the gateway went"),
        }
        let exited = h.wait_exit(0, ERROR_BOUND);
        eprintln!("gateway after SIG{how}: {exited}");

        h.restart(0);
        let fresh = h.attach(0, &gw);
        h.wait_text(&fresh, "/status", |t| {
            t.starts_with("members 2 up 2 down 0\n")
        });
        assert_eq!(fresh.read_file("/n/node1/fs/held.txt").unwrap(), b"held\n");
        assert!(read_within(&held).is_some_and(|r| r.is_err()));
    }
}

#[test]
fn sixty_four_clients_at_once_every_byte_checked() {
    const CLIENTS: usize = 64;
    const SIZE: usize = 1 << 20;
    let h = gateway_and_two_nodes();
    let gw = h.addr(0);
    let roots: Vec<_> = (0..CLIENTS).map(|_| h.attach(0, &gw)).collect();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let barrier = std::sync::Barrier::new(CLIENTS);
        let results: Vec<Result<(), String>> = std::thread::scope(|s| {
            let workers: Vec<_> = roots
                .iter()
                .enumerate()
                .map(|(c, root)| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        let data = pseudo_random(1000 + c as u64, SIZE);
                        let path = format!("/n/node{}/fs/client{c}.bin", 1 + c % 2);
                        barrier.wait();
                        root.write_file(&path, &data)
                            .map_err(|e| format!("client {c} writing {path}: {e}"))?;
                        let back = root
                            .read_file(&path)
                            .map_err(|e| format!("client {c} reading {path}: {e}"))?;
                        if back != data {
                            let first = back.iter().zip(&data).position(|(a, b)| a != b);
                            return Err(format!(
                                "client {c}: {} bytes back, first difference at {first:?}",
                                back.len()
                            ));
                        }
                        Ok(())
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let _ = tx.send(results);
    });
    let started = Instant::now();
    let results = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("64 clients did not finish within 120 s");
    eprintln!(
        "64 clients × 1 MiB written and read back in {:?}",
        started.elapsed()
    );
    let failed: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(failed.is_empty(), "{} failed: {failed:#?}", failed.len());
    for c in 0..CLIENTS {
        let on_host = h.export(1 + c % 2).join(format!("client{c}.bin"));
        let meta = std::fs::metadata(&on_host).unwrap();
        assert_eq!(meta.len(), SIZE as u64);
        assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), h.user.uid);
    }
}

#[test]
fn a_user_outside_a_view_gets_eacces() {
    let mut h = Hosts::new(2);
    h.start_node(1, &["--trust-gateway", "gw1"]);
    // node1 again, as a member only someone else may reach; and two views.
    let config = format!(
        "[[member]]\nname = \"hidden\"\naddr = \"{}\"\nusers = [\"someoneelse\"]\n\
         [[view]]\nname = \"mine\"\nusers = [\"{}\"]\n\
         [[view]]\nname = \"secret\"\nusers = [\"someoneelse\"]\n",
        h.addr(1),
        h.user.name
    );
    h.start_gateway(0, "gw1", &gateway_config(&[], &members(&h, [1]), &config));
    let gw = h.addr(0);
    let root = h.attach(0, &gw);
    h.wait_text(&root, "/status", |t| {
        t.starts_with("members 2 up 2 down 0\n")
    });

    assert_eq!(names(&h.nf_ok(0, &["ls", &at(&gw, "/views")])), ["mine"]);
    assert_eq!(names(&h.nf_ok(0, &["ls", &at(&gw, "/n")])), ["node1"]);
    assert_eq!(
        names(&h.nf_ok(0, &["ls", &at(&gw, "/views/mine/n")])),
        ["node1"]
    );
    for refused in ["/views/secret", "/views/secret/status", "/n/hidden/status"] {
        assert_eq!(errno_of(root.walk(refused)), EACCES, "{refused}");
        let out = h.nf(0, &["cat", &at(&gw, refused)]);
        assert!(
            text(&out.stderr).contains("Permission denied"),
            "{refused}: {}",
            text(&out.stderr)
        );
    }
    assert_eq!(errno_of(root.walk("/views/nosuch")), ENOENT);
}

#[test]
fn a_forged_delegated_attach_is_refused() {
    let mut h = Hosts::new(3);
    h.start_node(1, &["--trust-gateway", "gw1"]);
    h.start_node(2, &[]);
    h.start_gateway(0, "gw1", &gateway_config(&[], &members(&h, 1..=2), ""));
    let gw = h.addr(0);
    let user = h.user.name.clone();
    let root = h.attach(0, &gw);
    h.wait_text(&root, "/status", |t| t.contains("\nnode1 up "));
    root.read_file("/n/node1/status").unwrap();

    // node2 does not trust gw1: the gateway cannot act for anyone there.
    h.wait_text(&root, "/status", |t| {
        t.lines()
            .any(|l| l.starts_with("node2 down ") && l.contains("Permission denied"))
    });
    let out = h.nf(0, &["cat", &at(&gw, "/n/node2/status")]);
    assert!(!out.status.success());
    assert_eq!(
        errno_of(root.walk("/n/node2/status")),
        EACCES,
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );

    // A gateway certificate by another name, presented straight to node1 (which
    // trusts gw1 only), or to gw1 (which trusts no gateway), attaches for nobody.
    h.cert(&["gateway", "rogue", "--host", &h.ip(0).to_string()]);
    for target in [h.addr(1), gw.clone()] {
        let r = h.attach_with(0, &target, "rogue", &user, "");
        match r {
            Err(nf_ninep_client::connect::ConnectError::Client(e)) => {
                assert_eq!(e.errno(), Some(EACCES), "{target}: {e}")
            }
            Err(e) => panic!("{target}: {e}"),
            Ok(_) => panic!("{target} let the rogue gateway attach for {user}"),
        }
    }
    // gw1's own certificate attaches there for the user, and never as root.
    let as_gw1 = h.attach_with(0, &h.addr(1), "gw1", &user, "").unwrap();
    as_gw1.read_file("/status").unwrap();
    match h.attach_with(0, &h.addr(1), "gw1", "root", "") {
        Err(nf_ninep_client::connect::ConnectError::Client(e)) => {
            assert_eq!(e.errno(), Some(EACCES))
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("gw1 attached as root"),
    }
}

#[test]
fn a_user_cannot_reach_another_users_session() {
    let other = second_test_account().expect("the second test account");
    let h = gateway_and_two_nodes();
    h.user_cert(&other.name);
    let gw = h.addr(0);
    let a = h.attach(0, &gw);
    let b = h
        .attach_with(0, &gw, &other.name, "", "")
        .expect("the second user attaches");

    // A places a session and holds it open.
    let mut clone = a.open("/xcpu/clone", LOpenFlags::RDONLY).unwrap();
    let g = text(&clone.read_to_end().unwrap()).trim().to_string();
    let procs = text(&a.read_file("/xcpu/procs").unwrap());
    let line = procs
        .lines()
        .find(|l| l.starts_with(&format!("{g} ")))
        .unwrap_or_else(|| panic!("{g} not in {procs}"));
    let (member, m) = match line.split(' ').collect::<Vec<_>>()[..] {
        [_, member, m] => (member.to_string(), m.to_string()),
        _ => panic!("{procs}"),
    };
    assert_eq!(
        text(&a.read_file(&format!("/xcpu/{g}/state")).unwrap()),
        "new\n"
    );

    // B sees none of it.
    let gs = format!("/xcpu/{g}");
    let e = errno_of(b.walk(&gs));
    assert!(e == ENOENT || e == EACCES, "walking {gs} as B: errno {e}");
    let listed: BTreeSet<String> = b
        .readdir("/xcpu")
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert!(!listed.contains(&g), "{listed:?}");
    assert_eq!(b.read_file("/xcpu/procs").unwrap(), b"");
    let direct = format!("/n/{member}/xcpu/{m}");
    for f in ["state", "ctl", "stdout"] {
        let path = format!("{direct}/{f}");
        let e = errno_of(b.read_file(&path));
        assert_eq!(e, EACCES, "reading {path} as B");
    }
    assert_eq!(
        errno_of(b.write_file(&format!("{direct}/ctl"), b"exec\n")),
        EACCES
    );
    let out = h.nf_as(
        0,
        &other.name,
        &["cat", &at(&gw, &format!("{direct}/state"))],
    );
    assert!(
        text(&out.stderr).contains("Permission denied"),
        "{}",
        text(&out.stderr)
    );
    // A still can.
    assert_eq!(
        text(&a.read_file(&format!("{direct}/state")).unwrap()),
        "new\n"
    );
    drop(clone);
}
