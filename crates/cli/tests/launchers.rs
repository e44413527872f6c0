//! `nf` under launchers other than its own, and MPI programs under `nf run`.
//!
//! Rank-side commands (`nf bench …`, `nf demo`, `nf tune`) started by `mpirun` (PMIx)
//! or hydra (PMI-2) must join that job, not start a job of their own per process; an
//! MPI program given to `nf run` must be refused with a pointer to mpirun.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

/// Every job here takes seconds; this only keeps a broken launcher from hanging the suite.
const BOUND: Duration = Duration::from_secs(120);

const NF: &str = env!("CARGO_BIN_EXE_nf");

fn run(mut cmd: Command) -> Output {
    nf_testkit::output_within(&mut cmd, BOUND)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const PINGPONG: [&str; 8] = [
    "bench", "pingpong", "--sizes", "8,1024", "--iters", "50", "--warmup", "5",
];

/// The job succeeded and printed exactly one ping-pong table, of a 2-rank job.
fn expect_one_two_rank_table(out: &Output) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let headings: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("pingpong over"))
        .collect();
    assert_eq!(headings.len(), 1, "want one table:\n{stdout}");
    assert!(headings[0].contains("2 ranks"), "{stdout}");
}

#[test]
fn mpirun_np_2_bench_pingpong_is_one_2_rank_job() {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2", NF])
        .args(PINGPONG);
    expect_one_two_rank_table(&run(cmd));
}

#[test]
fn hydra_n_2_bench_pingpong_is_one_2_rank_job() {
    let mut cmd = Command::new("mpiexec.hydra");
    cmd.args(["-launcher", "fork", "-n", "2", NF])
        .args(PINGPONG);
    expect_one_two_rank_table(&run(cmd));
}

/// Compiles `src` with mpicc (`mpi`) or cc into `dir`.
fn compile(dir: &Path, name: &str, src: &str, mpi: bool) -> PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(name);
    let out = run({
        let mut cmd = Command::new(if mpi { "mpicc" } else { "cc" });
        cmd.arg("-o").arg(&exe).arg(&c);
        cmd
    });
    assert!(out.status.success(), "{}", text(&out.stderr));
    exe
}

const MPI_PROG: &str = r#"#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int r, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    printf("rank %d of %d\n", r, n);
    MPI_Finalize();
    return 0;
}
"#;

const PLAIN_PROG: &str = r#"#include <stdio.h>
#include <stdlib.h>
int main(void) { printf("rank %s\n", getenv("NF_RANK")); return 0; }
"#;

#[test]
fn nf_run_refuses_an_mpi_program_and_says_to_use_mpirun() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "mpi_prog", MPI_PROG, true);
    let mut cmd = Command::new(NF);
    cmd.args(["run", "-n", "2", "--"]).arg(&exe);
    let out = run(cmd);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("MPI program") && err.contains("mpirun") && err.contains("--allow-mpi"),
        "{err}"
    );
    assert!(text(&out.stdout).is_empty(), "no rank may start");
    // Forced: it runs, each rank a singleton — what the refusal warns of.
    let mut cmd = Command::new(NF);
    cmd.args(["run", "-n", "2", "--allow-mpi", "--"]).arg(&exe);
    let out = run(cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches("rank 0 of 1").count(), 2);
}

#[test]
fn nf_run_starts_a_program_without_mpi() {
    let dir = tempfile::tempdir().unwrap();
    let exe = compile(dir.path(), "plain_prog", PLAIN_PROG, false);
    let mut cmd = Command::new(NF);
    cmd.args(["run", "-n", "2", "--"]).arg(&exe);
    let out = run(cmd);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("rank 0") && stdout.contains("rank 1"),
        "{stdout}"
    );
}

#[test]
fn a_bad_argument_under_mpirun_is_reported_once() {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2", NF])
        .args(["bench", "rma", "--sizes", "12"]);
    let out = run(cmd);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "{all}");
    assert_eq!(all.matches("--sizes 12").count(), 1, "{all}");
}

#[test]
fn a_bad_setting_under_mpirun_is_a_usage_error_reported_once() {
    // No nf launcher checks the settings here: each rank finds the bad one itself, and
    // rank 0 alone says so (the other ranks' echo is a usage error, kept quiet).
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "2", NF])
        .args(PINGPONG)
        .env("NF_WAIT", "bogus");
    let out = run(cmd);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert_eq!(all.matches("NF_WAIT=\"bogus\"").count(), 1, "{all}");
}
