//! What a user expects of any Unix command: log levels from the environment, no colour
//! escapes in files, exit statuses that tell failures apart, readable times.

mod serve_support;

use serve_support::{nf, run_bounded, text, Served};

#[test]
fn rust_log_and_nf_log_set_the_level_without_colour_off_a_terminal() {
    let out = run_bounded(
        nf().args(["run", "-n", "1", "--", "true"])
            .env("RUST_LOG", "info"),
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("starting job"),
        "RUST_LOG=info was ignored:\n{err}"
    );
    assert!(!err.contains('\x1b'), "colour escapes in a pipe:\n{err:?}");
    // NF_LOG wins over RUST_LOG.
    let out = run_bounded(
        nf().args(["run", "-n", "1", "--", "true"])
            .env("RUST_LOG", "info")
            .env("NF_LOG", "error"),
    );
    assert!(
        !text(&out.stderr).contains("starting job"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_bad_log_setting_is_a_warning_not_silence() {
    let out = run_bounded(
        nf().args(["run", "-n", "1", "--", "true"])
            .env("NF_LOG", "nf=loud"),
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("NF_LOG=\"nf=loud\" is not a log filter"),
        "{err}"
    );
}

#[test]
fn exit_statuses_tell_usage_runtime_and_remote_errors_apart() {
    let s = Served::start(&[]);
    let code = |args: &[&str]| s.run(args).status.code();
    assert_eq!(
        code(&["cat", &s.at("/no/such/file")]),
        Some(3),
        "remote 9P error"
    );
    assert_eq!(code(&["ls", "tcp:nohostport:/"]), Some(2), "bad address");
    assert_eq!(
        code(&["ls", "unix:/nonexistent/sock:/"]),
        Some(1),
        "cannot connect"
    );
    assert_eq!(
        code(&["bench", "rma", "--sizes", "12"]),
        Some(2),
        "bad argument"
    );
    assert_eq!(code(&["cp", "a", "b"]), Some(2), "nothing remote to copy");
    assert_eq!(
        code(&["run", "-n", "1", "--timeout", "1e400", "--", "true"]),
        Some(2),
        "an infinite timeout"
    );
    let help = text(&s.run(&["--help"]).stdout);
    for want in [
        "Exit status",
        "2  a usage error",
        "3  the 9P server",
        "NF_LOG",
    ] {
        assert!(help.contains(want), "want {want:?} in nf --help:\n{help}");
    }
}

#[test]
fn stat_shows_mtime_as_local_time_and_epoch_on_request() {
    let s = Served::start(&[]);
    let field = |args: &[&str]| {
        let out = s.run(args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let line = stdout
            .lines()
            .find(|l| l.starts_with("mtime "))
            .unwrap()
            .to_owned();
        line["mtime ".len()..].to_owned()
    };
    let local = field(&["stat", &s.at("/fs/hello.txt")]);
    // 2026-11-25 19:55:07.123456789 +0000
    let parts: Vec<&str> = local.split(' ').collect();
    assert_eq!(parts.len(), 3, "{local}");
    assert_eq!(parts[0].split('-').count(), 3, "{local}");
    assert_eq!(parts[1].split(':').count(), 3, "{local}");
    assert!(
        parts[2].starts_with(['+', '-']) && parts[2].len() == 5,
        "{local}"
    );
    let epoch = field(&["stat", "--epoch", &s.at("/fs/hello.txt")]);
    let secs: f64 = epoch.parse().unwrap_or_else(|_| panic!("{epoch}"));
    let meta = std::fs::metadata(s.export.join("hello.txt")).unwrap();
    let want = meta
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!((secs - want).abs() < 1.0, "{secs} vs {want}");
}
