//! Fixtures of the `nf bench` tests: running a bench bounded in time, on local ranks
//! or as ranks on two namespace hosts, and reading its JSON report.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use nf_testkit::Netns;

/// No bench here takes more than seconds; this only stops a broken one.
pub const BOUND: Duration = Duration::from_secs(120);

/// Bytes as text, for messages.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `cmd` to completion within [`BOUND`] (stdin closed, output captured).
pub fn finish(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nf");
    nf_testkit::finish_within(child, BOUND, "nf bench")
}

/// `nf ARGS` on this host (a bench started by hand starts its own ranks).
pub fn nf(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nf"));
    c.args(args);
    c
}

/// `nf bench ARGS` as the ranks of `nf run --hosts`, `per_host` on each of two
/// namespace hosts, launched from the first; the namespaces go when this returns.
pub fn on_two_hosts(per_host: usize, args: &[&str]) -> Output {
    let net = Netns::create(2)
        .unwrap_or_else(|e| panic!("multi-host tests need network namespaces: {e}"));
    let hosts = format!("{}:{per_host},{}:{per_host}", net.host(0), net.host(1));
    let bind = format!("{}:0", net.addr(0));
    finish(
        net.exec(0, env!("CARGO_BIN_EXE_nf"))
            .args([
                "run",
                "--hosts",
                &hosts,
                "--remote",
                "ip netns exec {host}",
                "--pmi-bind",
                &bind,
            ])
            .args(["--timeout", "100", "--"])
            .arg(env!("CARGO_BIN_EXE_nf"))
            .arg("bench")
            .args(args),
    )
}

/// A JSON report.
pub fn report(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON report")).expect("JSON")
}

/// Held by every test of a binary that starts ranks and compares timings: a binary's
/// tests run in parallel, and another test's ranks on the same cores put one of two
/// compared runs in another scheduling mode (a CI-like run: LogGP's T at 4 KiB 0.52
/// against the ping-pong's 0.72 µs in every pair).
pub fn ranks_alone() -> std::sync::MutexGuard<'static, ()> {
    static RANKS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    RANKS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
