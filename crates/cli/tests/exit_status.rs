//! One rule for exit status (`nf --help`): 0 success, 1 a runtime error, 2 a usage
//! error found before anything runs (arguments or `NF_*` settings), 3 an error the 9P
//! server answered, 4 a timeout; a failed job passes on its rank's own status. Each
//! case says what went wrong exactly once.

mod serve_support;

use std::process::Output;

use serve_support::{nf, run_bounded, text, Served};

/// `nf ARGS` with `env` set.
fn nf_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = nf();
    cmd.args(args).env_remove("NF_LOG").env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_bounded(&mut cmd)
}

/// That `out` exited with `code` and its stderr holds `says` exactly once.
fn exits(out: &Output, code: i32, says: &str, what: &str) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{what}: {err}");
    assert_eq!(
        err.matches(says).count(),
        1,
        "{what}: want {says:?} once in:\n{err}"
    );
}

/// A usage error: status 2, one line of stderr holding `says`, nothing on stdout
/// (nothing ran).
fn refused_once(out: &Output, says: &str, what: &str) {
    exits(out, 2, says, what);
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{what}: want one line:\n{err}");
    assert!(out.stdout.is_empty(), "{what}: ran:\n{}", text(&out.stdout));
}

#[test]
fn success_is_0_and_a_failed_rank_passes_its_own_status() {
    let out = nf_env(&["run", "-n", "2", "--", "true"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let script = r#"[ "$NF_RANK" = 1 ] && exit 5; sleep 30"#;
    let out = nf_env(&["run", "-n", "2", "--", "sh", "-c", script], &[]);
    exits(&out, 5, "rank 1", "a rank exiting with 5");
}

#[test]
fn a_program_that_cannot_start_is_a_runtime_error_1() {
    let out = nf_env(&["run", "-n", "1", "--", "/nonexistent/prog"], &[]);
    exits(&out, 1, "/nonexistent/prog", "a missing program");
}

#[test]
fn an_error_the_server_answered_is_3() {
    let s = Served::start(&[]);
    let out = s.run(&["cat", &s.at("/no/such/file")]);
    exits(&out, 3, "/no/such/file", "a missing remote file");
}

#[test]
fn the_run_timeout_is_4_naming_the_ranks_it_killed() {
    let out = nf_env(
        &["run", "-n", "2", "--timeout", "1", "--", "sleep", "30"],
        &[],
    );
    exits(&out, 4, "timeout", "nf run --timeout");
    let err = text(&out.stderr);
    assert!(
        err.contains("the timeout of 1.0 s fired; ranks 0, 1 were still running and killed"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line, no warning:\n{err}");
}

#[test]
fn impossible_rank_counts_are_usage_errors() {
    for (args, says) in [
        (
            &["run", "-n", "0", "--", "true"][..],
            "at least one rank, got 0",
        ),
        (&["demo", "-n", "0"], "at least one rank, got 0"),
        (&["bench", "rings", "-n", "1"], "--ranks must be at least 2"),
    ] {
        refused_once(&nf_env(args, &[]), says, &format!("{args:?}"));
    }
}

#[test]
fn a_bad_setting_is_one_usage_error_before_any_rank_starts() {
    let bench = [
        "bench", "pingpong", "--sizes", "8", "--iters", "20", "--warmup", "2",
    ];
    let run = ["run", "-n", "2", "--", "sh", "-c", "echo started"];
    for (name, value, allowed) in [
        ("NF_SHM_FRAME_SIZE", "100", "multiple of 64"),
        ("NF_WAIT", "bogus", "spin, yield or auto"),
        ("NF_SHM_FRAMES", "3", "power of two"),
        // Read only by the rma layer and the PMI client: a ping-pong's ranks never
        // look at them, so only the launcher's check can refuse them.
        ("NF_RMA_OFI", "maybe", "auto, on or off"),
        ("NF_PMI_TIMEOUT", "soon", "seconds"),
    ] {
        let says = format!("{name}=\"{value}\" is invalid");
        for args in [&bench[..], &run[..]] {
            let out = nf_env(args, &[(name, value)]);
            let what = format!("{name}={value} nf {args:?}");
            refused_once(&out, &says, &what);
            assert!(text(&out.stderr).contains(allowed), "{what}");
        }
    }
}

#[test]
fn empty_zero_and_non_numeric_sizes_are_refused_by_every_bench() {
    let benches: [&[&str]; 4] = [
        &["pingpong", "--iters", "20", "--warmup", "2"],
        &["rma", "--iters", "20", "--warmup", "2", "--ops", "put"],
        &["loggp", "--iters", "2", "--stream", "2"],
        &[
            "watch",
            "--iters",
            "20",
            "--interval",
            "0.2",
            "--duration",
            "0.2",
        ],
    ];
    for bench in benches {
        for (sizes, says) in [
            ("0", "at least 1 byte"),
            ("8,0", "at least 1 byte"),
            ("", "not a size in bytes"),
            ("8,x", "not a size in bytes"),
        ] {
            let mut args = vec!["bench"];
            args.extend(bench);
            args.extend(["--sizes", sizes]);
            let out = nf_env(&args, &[]);
            exits(&out, 2, says, &format!("{args:?}"));
            assert!(out.stdout.is_empty(), "{args:?} ran");
        }
    }
}

#[test]
fn bench_arguments_refused_before_running_are_usage_errors() {
    for (args, says) in [
        (&["bench", "loggp", "--sizes", "8,8"][..], "--sizes 8,8"),
        (&["bench", "loggp", "--stream", "0"], "--stream 0"),
        (&["bench", "watch", "--alpha", "2"], "--alpha 2"),
        (&["bench", "watch", "--interval", "0"], "--interval 0"),
    ] {
        refused_once(&nf_env(args, &[]), says, &format!("{args:?}"));
    }
}
