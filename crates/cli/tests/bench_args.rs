//! Benchmark arguments are checked before any rank starts: one error, from the command
//! the user typed, and nothing measured.

use std::process::{Command, Output};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(60);

fn nf(args: &[&str]) -> Output {
    nf_testkit::output_within(Command::new(env!("CARGO_BIN_EXE_nf")).args(args), BOUND)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `nf ARGS` fails as a usage error with exactly one stderr line holding `want`,
/// prints nothing on stdout (nothing was measured) and never mentions `nf run`.
fn refused_once(args: &[&str], want: &str) {
    let out = nf(args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        stdout.is_empty(),
        "{args:?} measured before failing:\n{stdout}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: want one error line:\n{stderr}");
    assert!(
        lines[0].contains(want),
        "{args:?}: want {want:?} in {stderr}"
    );
    assert!(!stderr.contains("nf run"), "{args:?}: {stderr}");
}

#[test]
fn bad_sizes_are_one_error_before_any_rank_starts() {
    refused_once(
        &["bench", "rma", "--sizes", "12"],
        "--sizes 12: not a positive multiple of 8",
    );
    refused_once(&["bench", "pingpong", "--iters", "0"], "--iters 0");
}

#[test]
fn unwritable_outputs_are_refused_before_measuring() {
    let args = ["--sizes", "8", "--iters", "20", "--warmup", "2"];
    for bench in ["pingpong", "rma"] {
        let mut a = vec!["bench", bench];
        a.extend(args);
        a.extend(["--json", "/nonexistent/dir/x.json"]);
        refused_once(&a, "--json /nonexistent/dir/x.json: cannot be written");
    }
    let dir = tempfile::tempdir().unwrap();
    refused_once(
        &["bench", "pingpong", "--csv", dir.path().to_str().unwrap()],
        "is a directory",
    );
}

/// Lines on stderr of `nf bench pingpong` over `sizes` with stderr not a terminal.
fn pingpong_stderr(extra: &[&str]) -> String {
    let mut args = vec!["bench", "pingpong", "--sizes", "8,64,512", "--iters", "20"];
    args.extend(extra);
    let out = nf(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stderr)
}

#[test]
fn progress_off_a_terminal_is_one_line_per_size_and_quiet_is_silent() {
    let err = pingpong_stderr(&[]);
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("pingpong: "))
        .collect();
    assert_eq!(
        progress,
        [
            "pingpong: 1/3 8 B",
            "pingpong: 2/3 64 B",
            "pingpong: 3/3 512 B"
        ],
        "{err}"
    );
    assert_eq!(err.lines().count(), 3, "nothing else on stderr:\n{err}");
    let err = pingpong_stderr(&["--quiet"]);
    assert!(err.is_empty(), "{err}");
}

/// `nf bench rma` off a terminal: one line per case (operation × layout), after its
/// sweep of sizes, not one per size.
#[test]
fn rma_progress_off_a_terminal_is_one_line_per_case() {
    let out = nf(&[
        "bench",
        "rma",
        "--ops",
        "put,get",
        "--layouts",
        "contig",
        "--sizes",
        "8,64,512",
        "--iters",
        "5",
        "--warmup",
        "1",
    ]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let progress: Vec<&str> = err.lines().filter(|l| l.starts_with("rma: ")).collect();
    assert_eq!(progress.len(), 2, "{err}");
    assert!(
        progress[0].starts_with("rma: 3/6 put contig 512 B"),
        "{err}"
    );
    assert!(
        progress[1].starts_with("rma: 6/6 get contig 512 B"),
        "{err}"
    );
}
