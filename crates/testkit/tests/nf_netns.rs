//! The `nf-netns` binary that scripts use: it brings the hosts up, says so, and
//! removes them when its stdin closes or when it is told to stop with a signal.
//! Needs root and iproute2.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use nf_testkit::listed;

/// Starts `nf-netns --hosts k` and reads its announcement up to `ready`.
fn start(k: usize) -> (Child, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nf-netns"))
        .args(["--hosts", &k.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start nf-netns");
    let out: ChildStdout = child.stdout.take().expect("piped stdout");
    let mut lines = Vec::new();
    for line in BufReader::new(out).lines() {
        let line = line.expect("read nf-netns output");
        if line == "ready" {
            return (child, lines);
        }
        lines.push(line);
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("nf-netns ended before `ready`; it said {lines:?}");
}

/// Waits (at most 15 s) for `child` to exit; returns whether it succeeded.
fn finish(mut child: Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.success();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("nf-netns did not stop within 15 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The host names announced in `lines` (`host I NAME ADDR`), checking the rest.
fn hosts(lines: &[String], k: usize) -> Vec<String> {
    let names: Vec<String> = lines
        .iter()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.first() == Some(&"host")).then(|| {
                assert_eq!(w.len(), 4, "bad host line {l:?}");
                assert!(
                    w[3].starts_with("10.251."),
                    "address outside the fixture: {l:?}"
                );
                w[2].to_owned()
            })
        })
        .collect();
    assert_eq!(names.len(), k, "{lines:?}");
    assert!(lines
        .iter()
        .any(|l| l.starts_with("subnet 10.251.") && l.ends_with(".0/24")));
    assert!(lines.iter().any(|l| l.starts_with("bridge ")));
    names
}

#[test]
fn hosts_live_until_stdin_closes() {
    let (mut child, lines) = start(2);
    let names = hosts(&lines, 2);
    let before = listed();
    for n in &names {
        assert!(before.contains(n), "{n} not in {before:?}");
    }
    drop(child.stdin.take());
    assert!(finish(child), "nf-netns failed after its stdin closed");
    let after = listed();
    for n in &names {
        assert!(!after.contains(n), "{n} left behind: {after:?}");
    }
}

#[test]
fn a_signal_removes_the_hosts_too() {
    let (child, lines) = start(1);
    let names = hosts(&lines, 1);
    let pid = libc::pid_t::try_from(child.id()).expect("pid fits");
    // SAFETY: kill has no memory preconditions; the pid is our own child, still
    // running (its stdin is open, so it waits).
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    assert!(finish(child), "nf-netns failed on SIGTERM");
    let after = listed();
    assert!(!after.contains(&names[0]), "{} left behind", names[0]);
}
