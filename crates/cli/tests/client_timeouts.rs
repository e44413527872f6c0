//! The `nf` client never waits forever: pointed at a listener that never answers, or
//! at the plain 9P socket with `shm:`, it gives up after its connect timeout (10 s)
//! with exit status 4 and a sentence naming the likely mistake.

mod serve_support;

use serve_support::{nf, run_bounded, text, Served};

fn expect_timeout(args: Vec<String>) {
    let out = run_bounded(nf().args(&args));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "nf {args:?}: {err}");
    assert!(err.contains("no answer"), "nf {args:?}: {err}");
}

#[test]
fn a_silent_listener_and_a_wrong_address_kind_time_out() {
    // The kernel completes the connection in the backlog; nobody ever reads it.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let s = Served::start(&[]);
    let plain_as_shm = format!("shm:{}:/status", s.socket.display());
    let both = [
        vec!["ls".to_string(), format!("tcp:127.0.0.1:{port}:/")],
        vec!["cat".to_string(), plain_as_shm],
    ];
    let runs: Vec<_> = both
        .into_iter()
        .map(|args| std::thread::spawn(move || expect_timeout(args)))
        .collect();
    for r in runs {
        r.join().unwrap();
    }
    drop(silent);
}

/// `--timeout` bounds every reply too: a read of a pipe nobody writes gives up.
#[test]
fn timeout_bounds_a_reply_that_never_comes() {
    let s = Served::start(&[]);
    let out = run_bounded(nf().args(["cat", "--timeout", "2", &s.at("/pipe/nobody-writes")]));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("no answer") && err.contains("2s"), "{err}");
    // The server is fine afterwards.
    let out = run_bounded(nf().args(["cat", &s.at("/status")]));
    assert!(out.status.success(), "{}", text(&out.stderr));
}
