//! `nf host-ranks`, the per-host starter of `nf run --hosts` down the `/xcpu` tree
//! (`nf_launch::host_ranks`), run here as a host's session would run it: it picks its
//! host's ranks from the layout and its place, gives each its contract without the
//! tree's variables, and reports their lines and ends as records short enough that a
//! node never cuts one.

use std::process::Command;
use std::time::Duration;

const NF: &str = env!("CARGO_BIN_EXE_nf");
const BOUND: Duration = Duration::from_secs(60);

/// The contract of rank 0 of 3 as the launcher writes it into the head's `env`, the
/// layout, and the tree's place of the second host.
fn starter(args: &[&str]) -> Command {
    let mut cmd = Command::new(NF);
    cmd.arg("host-ranks").arg("--").args(args);
    contract(&mut cmd);
    cmd
}

/// The environment of [`starter`].
fn contract(cmd: &mut Command) -> &mut Command {
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("NF_RANK", "0")
        .env("NF_SIZE", "3")
        .env("NF_LOCAL_RANK", "0")
        .env("NF_LOCAL_SIZE", "1")
        .env("NF_JOB_ID", "1x0000abcd")
        .env("NF_PMI_ADDR", "tcp:127.0.0.1:9")
        .env("NF_PMI_SECRET", "s3cret")
        .env("NF_HOST", "a")
        .env("NF_RUN_HOSTS", "a:0:1,b:1:2")
        .env("NF_EXEC_RANK", "1")
        .env("NF_EXEC_SIZE", "2")
        .env("NF_EXEC_NODE", "tls:b:564")
}

#[test]
fn the_starter_runs_its_hosts_ranks_and_reports_each_in_records() {
    let script = "echo \"$NF_RANK $NF_SIZE $NF_LOCAL_RANK $NF_LOCAL_SIZE $NF_HOST $NF_PMI_SECRET ${NF_EXEC_RANK:-none} ${NF_RUN_HOSTS:-none}\"\n\
                  head -c 20000 /dev/zero | tr '\\0' x\n\
                  echo oops >&2\n\
                  exit $NF_RANK";
    let out = nf_testkit::output_within(&mut starter(&["/bin/sh", "-c", script]), BOUND);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let limit = nf_launch::host_ranks::CHUNK + "2 out ".len();
    assert!(
        stdout.lines().all(|l| l.len() <= limit),
        "a record over {limit} bytes"
    );
    for (rank, local) in [(1, 0), (2, 1)] {
        let mine: Vec<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_prefix(&format!("{rank} ")))
            .collect();
        assert_eq!(
            mine[0],
            format!("out {rank} 3 {local} 2 b s3cret none none"),
            "{stdout}"
        );
        let text: String = mine
            .iter()
            .filter_map(|l| l.strip_prefix("out "))
            .skip(1)
            .collect();
        assert_eq!(
            text,
            "x".repeat(20000),
            "rank {rank}'s long line, cut and whole"
        );
        assert!(mine.contains(&"err oops"), "{stdout}");
        assert_eq!(
            mine.last(),
            Some(&format!("exit {rank}").as_str()),
            "the end comes last"
        );
    }
    assert!(
        !stdout.lines().any(|l| l.starts_with("0 ")),
        "rank 0 is host a's"
    );
}

#[test]
fn a_starter_without_a_place_says_so() {
    let out = nf_testkit::output_within(starter(&["/bin/true"]).env("NF_EXEC_RANK", "5"), BOUND);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("NF_EXEC_RANK"), "{stderr}");
}

/// Host b's share of a job: ranks 1..=`count` after host a's rank 0.
fn share_of(cmd: &mut Command, count: usize) -> &mut Command {
    cmd.env("NF_SIZE", (count + 1).to_string())
        .env("NF_RUN_HOSTS", format!("a:0:1,b:1:{count}"))
}

#[test]
fn a_starter_holds_its_ranks_to_the_bound_per_cpu_unless_oversubscribed() {
    // Confined to one CPU, so the bound is the same on any machine.
    let count = nf_launch::capacity::MAX_RANKS_PER_CPU + 1;
    let confined = |extra: &[&str]| {
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", "0", NF, "host-ranks"]).args(extra).args([
            "--",
            "/bin/sh",
            "-c",
            "echo started",
        ]);
        contract(&mut cmd);
        share_of(&mut cmd, count);
        cmd
    };
    let out = nf_testkit::output_within(&mut confined(&[]), BOUND);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!("{count} ranks")) && stderr.contains("--oversubscribe"),
        "{stderr}"
    );
    assert!(stderr.contains("on b:"), "the host is named: {stderr}");
    assert!(!stdout.contains("started"), "a rank ran: {stdout}");

    let out = nf_testkit::output_within(&mut confined(&["--oversubscribe"]), BOUND);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.matches("out started").count(), count, "{stdout}");
}
