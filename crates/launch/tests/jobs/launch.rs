//! The launcher with real processes: `nf-launch-testprog` ranks, started through the
//! library API or through `nf-launch-testrun` when the test must watch the launcher
//! from outside (its output, its exit code, signals sent to it).
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test launch`), which builds the programs it starts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use nf_launch::{Cause, LaunchError, LaunchSpec, Outcome};

/// Every job here ends in seconds; this only keeps a broken launcher from hanging the suite.
const BOUND: Duration = Duration::from_secs(20);

fn spec(n: usize, args: &[&str]) -> LaunchSpec {
    let mut spec = LaunchSpec::new(n, env!("CARGO_BIN_EXE_nf-launch-testprog"));
    spec.args = args.iter().map(OsString::from).collect();
    spec.timeout = Some(Duration::from_secs(60));
    spec
}

/// Runs a job through the API; returns its outcome, the hook's job id and the run time.
fn run(spec: &LaunchSpec) -> (Outcome, String, Duration) {
    let start = Instant::now();
    let mut hooked = None;
    let report = nf_launch::run_with(spec, |job| hooked = Some(job.to_owned())).expect("launch");
    let took = start.elapsed();
    assert_eq!(
        hooked.as_deref(),
        Some(report.job_id.as_str()),
        "cleanup hook called with the job id"
    );
    let pmi_dir = std::env::temp_dir().join(format!("nf-{}", report.job_id));
    assert!(
        !pmi_dir.exists(),
        "PMI directory {} removed",
        pmi_dir.display()
    );
    assert!(took < BOUND, "job took {took:?}");
    (report.outcome, report.job_id, took)
}

#[test]
fn four_ranks_wire_up() {
    let (outcome, job, _) = run(&spec(4, &["wireup", "3"]));
    assert_eq!(outcome, Outcome::Success, "{outcome}");
    assert_eq!(outcome.exit_code(), 0);
    assert!(
        job.starts_with(&format!("{}x", std::process::id())),
        "{job}"
    );
}

#[test]
fn a_failing_rank_fails_the_job_and_stops_the_others() {
    let (outcome, _, _) = run(&spec(4, &["exit", "2", "3"]));
    match &outcome {
        Outcome::RankFailed {
            rank: 2,
            cause: Cause::Exit(3),
            pid,
            host: None,
        } => assert!(pid.is_some_and(|p| p > 0)),
        other => panic!("expected rank 2 to fail with exit 3, got {other}"),
    }
    assert_eq!(outcome.exit_code(), 3);
    assert!(outcome.to_string().contains("rank 2"), "{outcome}");
}

#[test]
fn a_rank_killed_by_a_signal_is_reported() {
    let (outcome, _, _) = run(&spec(3, &["kill", "1"]));
    assert!(
        matches!(
            outcome,
            Outcome::RankFailed {
                rank: 1,
                cause: Cause::Signal(9),
                ..
            }
        ),
        "{outcome}"
    );
    assert!(
        outcome.to_string().contains("signal 9 (SIGKILL)"),
        "{outcome}"
    );
    assert_eq!(outcome.exit_code(), 137);
}

#[test]
fn a_pmi_abort_tears_the_job_down() {
    let (outcome, _, _) = run(&spec(3, &["abort", "1"]));
    match &outcome {
        Outcome::Aborted {
            rank: 1,
            message,
            status: None,
        } => assert!(message.contains("gives up"), "{message}"),
        other => panic!("expected rank 1 to abort, got {other}"),
    }
}

#[test]
fn the_timeout_stops_the_job() {
    let mut s = spec(2, &["sleep", "60"]);
    s.timeout = Some(Duration::from_millis(500));
    let (outcome, _, took) = run(&s);
    assert_eq!(
        outcome,
        Outcome::TimedOut {
            after: Duration::from_millis(500),
            killed: vec![0, 1],
        }
    );
    assert!(took >= Duration::from_millis(500));
    assert_eq!(outcome.exit_code(), 124);
}

#[test]
fn ranks_that_ignore_sigterm_are_killed_after_the_grace_period() {
    let mut s = LaunchSpec::new(2, "sh");
    s.args = vec!["-c".into(), "trap '' TERM; sleep 60".into()];
    s.timeout = Some(Duration::from_millis(300));
    let (outcome, _, _) = run(&s);
    assert!(matches!(outcome, Outcome::TimedOut { .. }), "{outcome}");
}

#[test]
fn bad_specs_are_refused_before_anything_starts() {
    let hook_must_not_run = |job: &str| panic!("cleanup hook ran for {job}");
    let err = nf_launch::run_with(&spec(0, &["wireup"]), hook_must_not_run).unwrap_err();
    assert!(matches!(err, LaunchError::NoRanks), "{err}");
    assert!(err.to_string().contains("at least one rank"), "{err}");

    let missing = LaunchSpec::new(2, "nf-no-such-program");
    let err = nf_launch::run_with(&missing, hook_must_not_run).unwrap_err();
    assert!(matches!(err, LaunchError::ProgramNotFound { .. }), "{err}");
    assert!(err.to_string().contains("nf-no-such-program"), "{err}");

    let not_exec = LaunchSpec::new(
        2,
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
    );
    let err = nf_launch::run_with(&not_exec, hook_must_not_run).unwrap_err();
    assert!(matches!(err, LaunchError::NotExecutable { .. }), "{err}");
    assert!(err.to_string().contains("Cargo.toml"), "{err}");
}

#[test]
fn extra_environment_reaches_the_ranks_but_not_over_the_contract() {
    let mut s = LaunchSpec::new(2, "sh");
    s.args = vec![
        "-c".into(),
        r#"test "$MY_VAR" = hello && test "$NF_SIZE" = 2 && test -S "$NF_PMI_ADDR""#.into(),
    ];
    s.env = vec![
        ("MY_VAR".into(), "hello".into()),
        ("NF_SIZE".into(), "7".into()),
    ];
    let (outcome, _, _) = run(&s);
    assert_eq!(outcome, Outcome::Success, "{outcome}");
}

/// Starts `nf-launch-testrun LAUNCHER_ARGS -- nf-launch-testprog PROG_ARGS` with piped output.
fn launcher(launcher_args: &[&str], prog_args: &[&str]) -> Child {
    launcher_command(launcher_args, prog_args)
        .spawn()
        .expect("start nf-launch-testrun")
}

/// The command of [`launcher`], to start as it is or with more set up.
fn launcher_command(launcher_args: &[&str], prog_args: &[&str]) -> Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nf-launch-testrun"));
    // The launcher keeps an ignored SIGINT ignored (nohup's contract), and a test run
    // started in the background of a script inherits SIGINT ignored: give the launcher
    // the default, as an interactive shell would.
    // SAFETY: signal() between fork and exec is async-signal-safe and touches no
    // memory of ours.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.args(launcher_args)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_nf-launch-testprog"))
        .args(prog_args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Waits for a launcher process, at most [`BOUND`].
fn finish(child: Child) -> Output {
    nf_testkit::finish_within(child, BOUND, "the launcher")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn tagged_output_prefixes_every_line_with_the_rank() {
    let out = finish(launcher(&["-n", "3", "--tag-output"], &["print"]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stderr: {stderr}");
    for r in 0..3 {
        let mine: Vec<&str> = stdout
            .lines()
            .filter(|l| l.starts_with(&format!("[{r}] ")))
            .collect();
        let want = [
            format!("[{r}] hello from {r}"),
            "[{r}] second line".replace("{r}", &r.to_string()),
        ];
        assert_eq!(&mine[..2], &want[..], "stdout:\n{stdout}");
        assert_eq!(
            mine[2],
            format!("[{r}] no newline"),
            "partial last line flushed"
        );
        assert!(
            stderr
                .lines()
                .any(|l| l == format!("[{r}] warning from {r}")),
            "stderr:\n{stderr}"
        );
    }
    assert_eq!(stdout.lines().count(), 9, "stdout:\n{stdout}");
    assert!(stdout.ends_with('\n'));
}

#[test]
fn bind_to_core_pins_each_rank_to_one_cpu() {
    let out = finish(launcher(
        &["-n", "2", "--tag-output", "--bind-to", "core"],
        &["affinity"],
    ));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let cpus: Vec<String> = (0..2)
        .map(|r| {
            let prefix = format!("[{r}] cpus: ");
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&prefix))
                .unwrap_or_else(|| panic!("{stdout}"));
            line[prefix.len()..].to_owned()
        })
        .collect();
    assert!(
        cpus.iter().all(|c| !c.contains(',')),
        "one CPU each: {cpus:?}"
    );
    let available = thread::available_parallelism().map_or(1, |n| n.get());
    if available >= 2 {
        assert_ne!(cpus[0], cpus[1], "ranks on different CPUs");
    }
}

/// How many children of process `parent` run the program at `exe` (from `/proc`).
fn children_running(parent: u32, exe: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.filter_map(|e| Some(e.ok()?.path()))
        .filter(|proc| {
            let stat = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
            // `PID (COMM) STATE PPID …`; COMM may hold spaces, so split after its `)`.
            let ppid = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u32>().ok());
            ppid == Some(parent)
                && std::fs::read_link(proc.join("exe")).is_ok_and(|p| p.as_os_str() == exe)
        })
        .count()
}

#[test]
fn sigint_to_the_launcher_is_passed_on_and_reported() {
    let child = launcher(&["-n", "3"], &["sleep", "60"]);
    // The signal reaches a running job: its three ranks are the launcher's children.
    nf_testkit::eventually("the launcher's three ranks", BOUND, || {
        children_running(child.id(), env!("CARGO_BIN_EXE_nf-launch-testprog")) == 3
    });
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: plain kill of our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let out = finish(child);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "stderr: {stderr}");
    assert!(
        stderr.contains("interrupted by signal 2 (SIGINT)"),
        "{stderr}"
    );
    assert!(stderr.contains("cleanup: "), "cleanup hook ran: {stderr}");
}

#[test]
fn more_ranks_per_cpu_than_the_bound_are_refused_before_any_starts() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("started");
    let n = nf_launch::capacity::usable_cpus().max(1) * nf_launch::capacity::MAX_RANKS_PER_CPU + 1;
    let mut s = LaunchSpec::new(n, "sh");
    s.args = vec!["-c".into(), format!("touch {}", marker.display()).into()];
    match nf_launch::run(&s) {
        Err(e @ LaunchError::Oversubscribed { .. }) => {
            let text = e.to_string();
            assert!(text.contains(&format!("{n} ranks")), "{text}");
            assert!(text.contains("--oversubscribe"), "{text}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!marker.exists(), "a rank ran although the job was refused");
}

#[test]
fn sigterm_while_ranks_start_stops_the_start_and_those_started() {
    // Rank 0 signals the launcher as soon as it runs; the launcher must stop starting
    // ranks then, not after the last of the thousand, and stop those it started.
    const N: usize = 1000;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ranks");
    let script = format!(
        "echo $NF_RANK >> {log}; [ $NF_RANK = 0 ] && kill -TERM $PPID; sleep 60",
        log = log.display()
    );
    let child = Command::new(env!("CARGO_BIN_EXE_nf-launch-testrun"))
        .args([
            "-n",
            &N.to_string(),
            "--oversubscribe",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nf-launch-testrun");
    let out = nf_testkit::finish_within(child, Duration::from_secs(120), "the launcher");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(143), "stderr: {stderr}");
    assert!(
        stderr.contains("interrupted by signal 15 (SIGTERM)"),
        "{stderr}"
    );
    let started = std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(
        started < N / 2,
        "{started} of {N} ranks ran: the launcher went on starting ranks after SIGTERM"
    );
    // Each rank's shell keeps the script, with its unique log path, on its command line.
    nf_testkit::eventually("no rank left running", BOUND, || !any_process_runs(&script));
}

/// Whether a process whose command line contains `needle` runs.
fn any_process_runs(needle: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| std::fs::read(e.ok()?.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(needle))
}

/// Runs the test launcher with open-file limits `soft` and `hard`.
fn launcher_with_files(soft: u64, hard: u64, launcher_args: &[&str], prog_args: &[&str]) -> Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = launcher_command(launcher_args, prog_args);
    let limit = libc::rlimit {
        rlim_cur: soft,
        rlim_max: hard,
    };
    // SAFETY: setrlimit between fork and exec is async-signal-safe and reads only
    // `limit`, copied into the closure before the fork.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    finish(cmd.spawn().expect("start nf-launch-testrun"))
}

#[test]
fn the_launcher_raises_its_open_file_limit_or_refuses_the_job() {
    // 30 ranks with piped output hold 90 descriptors: a soft limit of 48 is raised to
    // the hard one, and every rank wires up.
    let out = launcher_with_files(48, 4096, &["-n", "30", "--tag-output"], &["wireup", "1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(text(&out.stdout).matches("wire-up ok").count(), 30);
    // A hard limit below that is said before any rank starts.
    let out = launcher_with_files(48, 48, &["-n", "30", "--tag-output"], &["wireup", "1"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "stderr: {stderr}");
    assert!(
        stderr.contains("open files") && stderr.contains("ulimit -n"),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains("wire-up ok"), "a rank started");
}

#[test]
fn root_of_a_user_namespace_is_held_to_the_process_limit() {
    use std::os::unix::fs::PermissionsExt;
    // A rootless container: user 65534 outside, root inside. The kernel holds it to
    // RLIMIT_NPROC, so the launcher must say so before any rank starts, not fail to
    // fork rank 1 halfway.
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = |exe: &str| {
        let to = dir
            .path()
            .join(std::path::Path::new(exe).file_name().unwrap());
        std::fs::copy(exe, &to).unwrap();
        to
    };
    let (run, prog) = (
        copy(env!("CARGO_BIN_EXE_nf-launch-testrun")),
        copy(env!("CARGO_BIN_EXE_nf-launch-testprog")),
    );
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
        .args([
            "unshare",
            "--user",
            "--map-root-user",
            "prlimit",
            "--nproc=3",
        ])
        .arg(&run)
        .args(["-n", "6", "--"])
        .arg(&prog)
        .args(["wireup", "1"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = finish(cmd.spawn().expect("setpriv (util-linux)"));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(99), "stderr: {stderr}");
    assert!(
        stderr.contains("exceed your process limit of 3") && stderr.contains("ulimit -u"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot start rank"), "{stderr}");
}
