//! The comparison scripts' shared pieces (bench/): installs are announced before they
//! run and can be skipped; a side that crashed leaves the other results standing.
//! Only what runs without namespaces, MPI or a network: `apt_install` against a stand-in
//! apt-get, and compare-net's report over a made-up out directory.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

const REPO: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
/// Each run takes well under a second; this only keeps a broken one from hanging.
const BOUND: Duration = Duration::from_secs(60);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `apt_install PKGS` from bench/lib.sh, as the script `compare-x.sh`, with an apt-get
/// that only logs its calls: the log holds what the script said and what apt-get was
/// asked, in order.
fn apt_install(dir: &Path, envs: &[(&str, &str)]) -> (Output, String) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("calls");
    let fake = bin.join("apt-get");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho \"apt-get $*\" >>{log}\n\
             case \" $* \" in *' -s '*) echo 'Inst python3-matplotlib (3.6 Debian)'; \
             echo 'Inst python3-pil (9.4 Debian)';; esac\n",
            log = log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = dir.join("compare-x.sh");
    // What it says (stderr) and what apt-get is asked go to one log, in order.
    std::fs::write(
        &script,
        format!(
            "#!/usr/bin/env bash\nset -euo pipefail\nrepo={REPO}\nsource \"$repo/bench/lib.sh\"\n\
             apt_install python3-matplotlib pdsh 2>>{log} || echo skipped\n",
            log = log.display()
        ),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(&script)
        .env("PATH", path)
        .env_remove("NF_BENCH_NO_INSTALL")
        .envs(envs.iter().copied());
    let out = nf_testkit::output_within(&mut cmd, BOUND);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    (out, calls)
}

#[test]
fn installs_are_announced_with_what_they_pull_in_before_apt_get_installs() {
    let dir = tempfile::tempdir().unwrap();
    let (out, calls) = apt_install(dir.path(), &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<&str> = calls.lines().collect();
    let said = lines
        .iter()
        .position(|l| l.starts_with("compare-x: installing") && l.contains("pdsh"))
        .unwrap_or_else(|| panic!("no announcement:\n{calls}"));
    // What the packages pull in is named (from apt-get's simulation).
    assert!(lines[said].contains("python3-pil"), "{calls}");
    let installed = lines
        .iter()
        .position(|l| l.starts_with("apt-get") && l.contains(" install ") && !l.contains(" -s "))
        .unwrap_or_else(|| panic!("apt-get install never ran:\n{calls}"));
    assert!(said < installed, "announced after installing:\n{calls}");
    assert!(
        lines[installed].contains("--no-install-recommends"),
        "{calls}"
    );
}

#[test]
fn nf_bench_no_install_skips_installing_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (out, calls) = apt_install(dir.path(), &[("NF_BENCH_NO_INSTALL", "1")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!calls.contains("apt-get"), "apt-get ran:\n{calls}");
    assert!(
        calls.contains("not installing python3-matplotlib pdsh (NF_BENCH_NO_INSTALL=1)"),
        "{calls}"
    );
    assert!(
        text(&out.stdout).contains("skipped"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn no_bench_script_calls_apt_get_install_itself() {
    for entry in std::fs::read_dir(Path::new(REPO).join("bench")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension() != Some("sh".as_ref()) || path.ends_with("lib.sh") {
            continue;
        }
        let code = std::fs::read_to_string(&path).unwrap();
        for line in code.lines().filter(|l| !l.trim_start().starts_with('#')) {
            // Hints in quotes ("apt-get install gcc") are fine; a command is not.
            let unquoted: String = line.split('"').step_by(2).collect();
            assert!(
                !unquoted.contains("apt-get install"),
                "{}: installs without apt_install (announced, skippable): {line}",
                path.display()
            );
        }
    }
}

/// A ping-pong report of one round (the fields compare_report reads).
fn pingpong(transport: &str, us: f64) -> String {
    let row = |size: u64| {
        let t = us * (1.0 + size as f64 / 1e6);
        format!(
            "{{\"size\":{size},\"iters\":100,\"min_us\":{t},\"avg_us\":{t},\"median_us\":{t},\
             \"max_us\":{t},\"stddev_us\":0.0,\"mb_per_s\":{}}}",
            size as f64 / t
        )
    };
    format!(
        "{{\"transport\":\"{transport}\",\"results\":[{},{}]}}",
        row(8),
        row(4 << 20)
    )
}

fn iperf(mb_per_s: f64, streams: u32) -> String {
    format!(
        "{{\"start\":{{\"test_start\":{{\"num_streams\":{streams}}}}},\
         \"end\":{{\"sum_received\":{{\"bits_per_second\":{}}}}}}}",
        mb_per_s * 8e6
    )
}

/// A compare-net out directory of two rounds without ofi, where `lost` rounds of
/// openmpi-tcp failed (listed in failed.txt as the script lists them).
fn net_out(dir: &Path, lost: &[u32]) {
    for k in 1..=2 {
        for (side, us) in [
            ("nf-tcp", 10.0),
            ("nf-default", 10.0),
            ("raw-tcp", 9.0),
            ("raw-busy", 8.0),
            ("shm-mixed", 0.2),
            ("shm-only", 0.2),
            ("openmpi-tcp", 11.0),
        ] {
            if side == "openmpi-tcp" && lost.contains(&k) {
                continue;
            }
            std::fs::write(dir.join(format!("{side}-{k}.json")), pingpong(side, us)).unwrap();
        }
        std::fs::write(dir.join(format!("iperf3-{k}.json")), iperf(2000.0, 1)).unwrap();
        std::fs::write(dir.join(format!("iperf3-p4-{k}.json")), iperf(2500.0, 4)).unwrap();
    }
    let failed: String = lost
        .iter()
        .map(|k| format!("openmpi-tcp round {k}: mpirun exited 1; see openmpi-tcp-{k}.txt\n"))
        .collect();
    if !failed.is_empty() {
        std::fs::write(dir.join("failed.txt"), failed).unwrap();
    }
}

fn net_report(dir: &Path) -> Output {
    let mut cmd = Command::new("python3");
    cmd.arg(Path::new(REPO).join("bench/compare_net_report.py"))
        .args(["--dir", dir.to_str().unwrap(), "--rounds", "2", "--no-ofi"]);
    nf_testkit::output_within(&mut cmd, BOUND)
}

#[test]
fn compare_net_report_keeps_the_rounds_that_ran_and_names_the_side_that_failed() {
    let dir = tempfile::tempdir().unwrap();
    net_out(dir.path(), &[2]);
    let out = net_report(dir.path());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Open MPI's first round still counts: its ratio is there.
    assert!(
        stdout.contains("tcp 8 B vs Open MPI tcp")
            && !stdout.contains("Open MPI tcp  not measured"),
        "{stdout}"
    );
    let open_mpi = stdout
        .lines()
        .find(|l| l.contains("tcp 8 B vs Open MPI tcp"))
        .unwrap();
    assert!(!open_mpi.contains("not measured"), "{open_mpi}");
    assert!(stdout.contains("failed runs"), "{stdout}");
    assert!(
        stdout.contains("openmpi-tcp round 2: mpirun exited 1"),
        "{stdout}"
    );
    let targets = std::fs::read_to_string(dir.path().join("targets.json")).unwrap();
    assert!(targets.contains("openmpi-tcp round 2"), "{targets}");
}

#[test]
fn compare_net_report_leaves_out_a_side_with_no_round_and_reports_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    net_out(dir.path(), &[1, 2]);
    let out = net_report(dir.path());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("nf-tcp vs openmpi-tcp: left out, openmpi-tcp: no successful round"),
        "{stdout}"
    );
    // The other sides' figures are all there.
    let raw = stdout
        .lines()
        .find(|l| l.contains("tcp 8 B vs raw socket"))
        .unwrap();
    assert!(!raw.contains("not measured"), "{raw}");
    let mpi = stdout
        .lines()
        .find(|l| l.contains("tcp 8 B vs Open MPI tcp"))
        .unwrap();
    assert!(mpi.contains("not measured"), "{mpi}");
}
