//! Tree spawn with a child node that stops answering (`SIGSTOP`): once the session on
//! the first node has ended, none of the first node's threads waits on the child —
//! neither the forwarder (its request to the child) nor the relay of the child's
//! `tree` — so a paused or wedged node cannot pile up threads on the nodes above it.

mod serve_support;

use std::time::{Duration, Instant};

use nf_ninep::LOpenFlags;
use nf_ninep_client::Client;
use serve_support::{signal, Served};

/// Threads of `pid` whose name starts with `prefix`.
fn threads_named(pid: u32, prefix: &str) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .filter(|comm| comm.starts_with(prefix))
        .count()
}

#[test]
fn a_paused_child_holds_no_thread_of_the_first_node_once_the_session_ends() {
    let head = Served::start(&["--xcpu-linger", "1"]);
    let child = Served::start(&[]);
    let root = Client::connect_unix(&head.socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    let mut hold = root.open("/xcpu/clone", LOpenFlags::RDONLY).unwrap();
    let id = String::from_utf8(hold.read_to_end().unwrap()).unwrap();
    let dir = format!("/xcpu/{}", id.trim());
    root.write_file(
        &format!("{dir}/ctl"),
        format!("clone 1 {}", child.addr()).as_bytes(),
    )
    .unwrap();
    root.write_file(&format!("{dir}/argv"), b"/bin/sleep 60")
        .unwrap();
    root.read_file(&format!("{dir}/clones")).unwrap();
    let tree = root
        .open(&format!("{dir}/tree"), LOpenFlags::RDONLY)
        .unwrap();
    root.write_file(&format!("{dir}/ctl"), b"exec").unwrap();
    let head_pid = head.child.id();
    assert_eq!(threads_named(head_pid, "xcpu-relay"), 1, "the relay runs");
    // The child's copy is running; then the child stops answering anything.
    let croot = Client::connect_unix(&child.socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&croot.read_file("/xcpu/procs").unwrap()).contains("sleep") {
        assert!(Instant::now() < deadline, "the child never ran the job");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(croot);
    signal(child.child.id(), "STOP");
    let stopped = || {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.child.id())).unwrap();
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !stopped() {
        assert!(Instant::now() < deadline, "the child did not stop");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A write to hand on: the forwarder now waits for the paused child's answer, and
    // the relay for the child's output. Then the user goes: the session ends after
    // its linger (1 s).
    root.write_file(&format!("{dir}/fs/late"), b"late").unwrap();
    drop(tree);
    drop(hold);
    drop(root);
    let deadline = Instant::now() + Duration::from_secs(20);
    let left = loop {
        let n = threads_named(head_pid, "xcpu-relay") + threads_named(head_pid, "xcpu-fwd");
        if n == 0 || Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    signal(child.child.id(), "CONT");
    assert_eq!(
        left, 0,
        "threads of the first node still wait on the paused child"
    );
}
