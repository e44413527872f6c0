//! A call waiting alone on a connection receives its own reply (the `rpc` module's
//! docs): the connection's reader thread is not woken to hand it over. Counted by the
//! reader thread's voluntary context switches, which the kernel keeps per thread
//! (`/proc/self/task/TID/status`): one per reply when the reader thread receives
//! everything, a few (its idle checks) when callers receive. Alone in its file, so
//! the process has one client and one `9p-client-reader` thread.

use std::fs;

use nf_ninep_client::Client;
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::PassthroughFs;
use nf_testkit::ninep::{serve, Via};

/// The voluntary context switches of this process's threads named `name` (as the
/// kernel keeps it: its first 15 bytes), one per thread.
fn switches_of(name: &str) -> Vec<u64> {
    let name = &name[..name.len().min(15)];
    let mut found = Vec::new();
    for task in fs::read_dir("/proc/self/task").unwrap() {
        let dir = task.unwrap().path();
        let comm = fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let status = fs::read_to_string(dir.join("status")).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with("voluntary_ctxt_switches:"))
            .unwrap();
        found.push(line.split_whitespace().nth(1).unwrap().parse().unwrap());
    }
    found
}

/// The one reader thread's switches, once it has run far enough to name itself (a
/// new thread bears its parent's name until then; with callers receiving, it may not
/// have been scheduled yet).
fn reader_switches() -> u64 {
    loop {
        let found = switches_of("9p-client-reader");
        assert!(found.len() <= 1, "one client, one reader thread: {found:?}");
        if let [n] = found[..] {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_lone_caller_receives_its_replies_without_waking_the_reader_thread() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("f"), "hello").unwrap();
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let path = served.unix_path();
    let client = Client::connect_unix(&path).unwrap();
    let root = client.attach("t", "").unwrap();
    let calls = 400;
    let before = reader_switches();
    for _ in 0..calls {
        assert_eq!(root.read_file("/f").unwrap(), b"hello");
    }
    let woken = reader_switches() - before;
    // Each read_file is four calls (walk, open, read, clunk). Handed over, the reader
    // thread sleeps and wakes for each reply: at least `calls` times. Received by the
    // caller, it wakes only for its idle checks (every 100 ms) while the calls run.
    assert!(
        woken < calls / 4,
        "the reader thread was woken {woken} times for {calls} read_files"
    );
}
