//! Wire-up from launchers other than `nf run`: Open MPI's `mpirun` (PMIx) and MPICH's
//! hydra (`mpiexec.hydra`, the PMI-2 wire protocol) start `nf-core-check` directly, and
//! every rank must say it joined through that launcher as rank r of 4 and pass its
//! data checks. Half-set launcher environments must fail naming the variable.
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test core_bootstrap`), which builds the programs it starts.

use std::process::{Command, Output};
use std::time::Duration;

/// Every job here takes seconds; this only keeps a broken launcher from hanging the suite.
const BOUND: Duration = Duration::from_secs(120);

const CHECK: &str = env!("CARGO_BIN_EXE_nf-core-check");

/// Runs `cmd` to completion within [`BOUND`].
fn run(mut cmd: Command) -> Output {
    nf_testkit::output_within(&mut cmd, BOUND)
}

/// Asserts that the job succeeded and every rank of `n` joined through `source` and
/// printed `ok_text`.
fn expect_job(out: &Output, n: usize, source: &str, ok_text: &str) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    for r in 0..n {
        let joined = format!("rank {r} of {n} via {source}");
        assert!(
            stdout.lines().any(|l| l == joined),
            "want {joined:?} in\n{stdout}"
        );
        let ok = format!("rank {r}: {ok_text}");
        assert!(
            stdout.lines().any(|l| l.starts_with(&ok)),
            "want {ok:?} in\n{stdout}"
        );
    }
}

/// `mpirun -np N` of `nf-core-check ARGS` on this host (as root: allowed explicitly).
fn mpirun(n: usize, args: &[&str]) -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        &n.to_string(),
    ])
    .args(["-x", "NF_CHECK_SAY_SOURCE=1"])
    .arg(CHECK)
    .args(args);
    cmd
}

#[test]
fn mpirun_np_4_integrity_through_pmix() {
    let out = run(mpirun(4, &["integrity", "3", "8", "3000000"]));
    expect_job(&out, 4, "PMIx", "integrity ok");
}

#[test]
fn mpirun_np_3_collectives_through_pmix() {
    let out = run(mpirun(3, &["collectives"]));
    expect_job(&out, 3, "PMIx", "collectives ok");
}

#[test]
fn hydra_np_4_integrity_and_collectives_through_pmi2() {
    for (args, ok) in [
        (&["integrity", "4", "8", "3000000"][..], "integrity ok"),
        (&["collectives"], "collectives ok"),
    ] {
        let mut cmd = Command::new("mpiexec.hydra");
        cmd.args(["-launcher", "fork", "-n", "4"])
            .env("NF_CHECK_SAY_SOURCE", "1")
            .arg(CHECK)
            .args(args);
        expect_job(&run(cmd), 4, "PMI-2", ok);
    }
}

/// Runs `nf-core-check collectives` alone with `vars` set; it must fail naming `want`.
fn expect_refused(vars: &[(&str, &str)], want: &[&str]) {
    let mut cmd = Command::new(CHECK);
    cmd.arg("collectives")
        .env_remove("NF_PMI_ADDR")
        .envs(vars.iter().copied());
    let out = run(cmd);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{vars:?}: {stderr}");
    for w in want {
        assert!(stderr.contains(w), "{vars:?}: want {w:?} in {stderr}");
    }
}

#[test]
fn half_set_launcher_environments_are_errors_naming_the_variable() {
    expect_refused(
        &[("PMIX_NAMESPACE", "123")],
        &["PMIX_RANK is not set", "PMIx"],
    );
    expect_refused(
        &[("PMIX_NAMESPACE", "123"), ("PMIX_RANK", "one")],
        &["PMIX_RANK is \"one\""],
    );
    expect_refused(
        &[("PMI_FD", "0"), ("PMI_SIZE", "2")],
        &["PMI_RANK is not set", "PMI-2"],
    );
    expect_refused(
        &[("PMI_FD", "0"), ("PMI_RANK", "0"), ("PMI_SIZE", "2")],
        &["PMI_FD is 0, which is not a socket"],
    );
}

#[test]
fn without_a_launcher_a_program_is_a_singleton() {
    let mut cmd = Command::new(CHECK);
    cmd.arg("collectives")
        .env("NF_CHECK_SAY_SOURCE", "1")
        .env_remove("NF_PMI_ADDR");
    expect_job(&run(cmd), 1, "singleton", "collectives ok");
}
