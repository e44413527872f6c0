//! The core over real processes and real shared memory, started by the real launcher.
//!
//! Each test runs `nf-core-check MODE …` (`crates/checks/src/bin`) as an N-rank job
//! with segments in a private directory under /dev/shm, and checks the job's outcome
//! and that no segment outlives it.
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test core_world`), which builds the programs it starts.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use nf_launch::{Binding, Cause, LaunchSpec, Outcome};

use nf_testkit::leftovers_are_gone;

struct Job {
    shm: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        Job {
            shm: tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm"),
        }
    }

    fn spec(&self, n: usize, args: &[&str], env: &[(&str, &str)]) -> LaunchSpec {
        let mut env: Vec<(OsString, OsString)> =
            env.iter().map(|(k, v)| (k.into(), v.into())).collect();
        env.push(("NF_SHM_DIR".into(), self.shm.path().into()));
        LaunchSpec {
            nprocs: n,
            program: env!("CARGO_BIN_EXE_nf-core-check").into(),
            args: args.iter().map(OsString::from).collect(),
            // A safety net only: every test here finishes in seconds.
            timeout: Some(Duration::from_secs(120)),
            tag_output: true,
            bind: Binding::None,
            env,
            oversubscribe: false,
        }
    }

    fn run(&self, n: usize, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let spec = self.spec(n, args, env);
        let report = nf_launch::run(&spec).expect("launch");
        leftovers_are_gone(self.shm.path());
        report.outcome
    }

    fn expect_success(&self, n: usize, args: &[&str], env: &[(&str, &str)]) {
        let outcome = self.run(n, args, env);
        assert!(
            matches!(outcome, Outcome::Success),
            "{args:?} on {n} ranks: {outcome}"
        );
    }
}

#[test]
fn integrity_every_pair_random_sizes_up_to_16_mib() {
    Job::new().expect_success(4, &["integrity", "1", "12", &(16 << 20).to_string()], &[]);
}

#[test]
fn integrity_with_single_copy_from_20_kb_covers_plain_and_cooperative_reads() {
    // Below 256 KiB the receiver reads alone; from there the sender writes half.
    Job::new().expect_success(
        3,
        &["integrity", "4", "10", &(3 << 20).to_string()],
        &[("NF_RNDV_THRESHOLD", "20000")],
    );
}

#[test]
fn integrity_without_single_copy_goes_through_fragments() {
    let huge = (1u64 << 40).to_string();
    Job::new().expect_success(
        3,
        &["integrity", "2", "10", &(4 << 20).to_string()],
        &[("NF_RNDV_THRESHOLD", &huge)],
    );
}

#[test]
fn integrity_with_several_rings_and_tiny_frames() {
    let env = [
        ("NF_SHM_RINGS", "2"),
        ("NF_SHM_FRAMES", "8"),
        ("NF_SHM_FRAME_SIZE", "1024"),
    ];
    Job::new().expect_success(4, &["integrity", "3", "40", "70000"], &env);
}

#[test]
fn many_to_one_flood_loses_nothing() {
    let job = Job::new();
    job.expect_success(4, &["flood", "3000", "200"], &[]);
    job.expect_success(4, &["flood", "100", "100000"], &[]);
}

#[test]
fn head_to_head_large_sends_do_not_deadlock() {
    let job = Job::new();
    job.expect_success(2, &["headtohead", "40", &(4 << 20).to_string()], &[]);
    let huge = (1u64 << 40).to_string();
    job.expect_success(
        2,
        &["headtohead", "20", &(1 << 20).to_string()],
        &[("NF_RNDV_THRESHOLD", &huge)],
    );
}

#[test]
fn oversubscribed_flood_with_8_ranks_finishes() {
    Job::new().expect_success(8, &["flood", "500", "3000"], &[]);
}

#[test]
fn collectives_are_correct_for_1_2_3_4_7_ranks() {
    let job = Job::new();
    for n in [1, 2, 3, 4, 7] {
        job.expect_success(n, &["collectives"], &[]);
    }
}

#[test]
fn ranks_sharing_one_cpu_finish_their_collectives_and_leave() {
    // Every rank on the first CPU this test may use (they inherit this thread's
    // affinity). There a peer's next collective always arrived while the other still
    // counted the drain of `leave`, so every round looked busy and two ranks never left.
    nf_sys::cpus::confine_to_first_cpu().expect("confining the test to one CPU");
    let job = Job::new();
    for n in [2, 3] {
        job.expect_success(n, &["collectives"], &[]);
    }
}

#[test]
fn bad_input_gets_clear_errors_and_the_job_still_finishes() {
    Job::new().expect_success(2, &["badinput"], &[("NF_MAX_PAYLOAD", "4096")]);
}

/// Every peer over tcp on loopback, even on one host.
const TCP: [(&str, &str); 2] = [("NF_TRANSPORTS", "tcp"), ("NF_TCP_BIND", "127.0.0.1")];

#[test]
fn a_payload_above_the_receivers_limit_is_refused_there_and_the_pair_carries_on() {
    // 5 × 4096 B goes in fragments, 10 × 4096 B single-copy first (from 32 KiB).
    Job::new().expect_success(2, &["peerlimit", "4096"], &[("NF_RNDV_THRESHOLD", "32768")]);
}

#[test]
fn tcp_integrity_collectives_flood_and_head_to_head() {
    let job = Job::new();
    job.expect_success(3, &["integrity", "5", "8", &(4 << 20).to_string()], &TCP);
    job.expect_success(3, &["collectives"], &TCP);
    job.expect_success(4, &["flood", "2000", "3000"], &TCP);
    job.expect_success(2, &["headtohead", "10", &(2 << 20).to_string()], &TCP);
}

/// Every peer over ofi (libfabric's tcp provider on loopback), even on one host.
const OFI: [(&str, &str); 2] = [("NF_TRANSPORTS", "ofi"), ("NF_TCP_BIND", "127.0.0.1")];

#[test]
fn ofi_integrity_collectives_flood_and_head_to_head() {
    require_ofi();
    let job = Job::new();
    job.expect_success(3, &["integrity", "5", "8", &(4 << 20).to_string()], &OFI);
    job.expect_success(3, &["collectives"], &OFI);
    job.expect_success(4, &["flood", "2000", "3000"], &OFI);
    job.expect_success(2, &["headtohead", "10", &(2 << 20).to_string()], &OFI);
}

#[test]
fn ofi_large_messages_go_by_rma_read_intact_and_in_order_with_small_ones() {
    require_ofi();
    let job = Job::new();
    // The counters must show every message ≥ NF_OFI_RNDV (default 64 KiB) to or from
    // an ofi peer read by rendezvous; with the threshold out of reach, none.
    job.expect_success(3, &["netrndv", "2"], &OFI);
    let huge = (1u64 << 40).to_string();
    let off = [OFI[0], OFI[1], ("NF_OFI_RNDV", huge.as_str())];
    job.expect_success(2, &["netrndv", "1"], &off);
    // Two hosts of two ranks: shm inside, ofi (and its rendezvous) across only.
    let mut spec = job.spec(
        4,
        &[],
        &[("NF_TCP_BIND", "127.0.0.1"), ("NF_TRANSPORTS", "shm,ofi")],
    );
    let check = spec.program.clone();
    spec.program = "sh".into();
    spec.args = ["-c", r#"NF_HOST=host$((NF_RANK / 2)) exec "$0" "$@""#]
        .iter()
        .map(OsString::from)
        .chain([check.into_os_string(), "netrndv".into(), "1".into()])
        .collect();
    let report = nf_launch::run(&spec).expect("launch");
    leftovers_are_gone(job.shm.path());
    assert!(
        matches!(report.outcome, Outcome::Success),
        "{}",
        report.outcome
    );
}

#[test]
fn a_receiver_vanishing_mid_ofi_rendezvous_is_an_error_for_the_sender_not_a_hang() {
    require_ofi();
    let t = Instant::now();
    let env = [
        OFI[0],
        OFI[1],
        ("NF_DEAD_AFTER_MS", "2000"),
        ("NF_PEER_CHECK_MS", "50"),
    ];
    Job::new().expect_success(2, &["netrndvvanish", &(16 << 20).to_string()], &env);
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t.elapsed()
    );
}

/// Fails the test, saying what to install, unless libfabric loads here.
fn require_ofi() {
    if let Err(e) = nf_transport::ofi::available() {
        panic!("{e}\nthe ofi tests need libfabric: run scripts/setup.sh, then rebuild");
    }
}

/// Ranks 0,1 claim host "a", ranks 2,3 host "b": shared memory within each pair, the
/// network transport `net` (on loopback) between them — one process using two
/// transports at once.
fn mixed_job(net: &str) {
    let job = Job::new();
    let transports = format!("shm,{net}");
    let env = [("NF_TCP_BIND", "127.0.0.1"), ("NF_TRANSPORTS", &transports)];
    for mode in [
        &["routes", "host0,host0,host1,host1", net][..],
        &["integrity", "6", "10", "3000000"],
    ] {
        let mut spec = job.spec(4, &[], &env);
        let check = spec.program.clone();
        spec.program = "sh".into();
        spec.args = ["-c", r#"NF_HOST=host$((NF_RANK / 2)) exec "$0" "$@""#]
            .iter()
            .map(OsString::from)
            .chain(std::iter::once(check.into_os_string()))
            .chain(mode.iter().map(OsString::from))
            .collect();
        let report = nf_launch::run(&spec).expect("launch");
        leftovers_are_gone(job.shm.path());
        assert!(
            matches!(report.outcome, Outcome::Success),
            "{mode:?}: {}",
            report.outcome
        );
    }
}

#[test]
fn mixed_job_two_hosts_of_two_ranks_shm_inside_tcp_across() {
    mixed_job("tcp");
}

#[test]
fn mixed_job_two_hosts_of_two_ranks_shm_inside_ofi_across() {
    require_ofi();
    mixed_job("ofi");
}

#[test]
fn a_rank_killed_mid_run_fails_the_job_and_the_next_job_starts_cleanly() {
    let job = Job::new();
    let t = Instant::now();
    // Survivors' own liveness check is slowed down so that the launcher is the one
    // to notice: this test is about `nf run`'s report.
    let outcome = job.run(4, &["die", "2"], &[("NF_PEER_CHECK_MS", "20000")]);
    match outcome {
        Outcome::RankFailed { rank, cause, .. } => {
            assert_eq!(rank, 2, "{outcome}");
            assert!(matches!(cause, Cause::Signal(9)), "{outcome}");
        }
        other => panic!("expected rank 2 to be reported killed, got {other}"),
    }
    // Bounded, not timed: far below the 120 s safety timeout.
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t.elapsed()
    );
    job.expect_success(4, &["collectives"], &[]);
}

#[test]
fn a_vanished_peer_is_an_error_not_a_hang() {
    // The victim exits 0 without finalizing, so the launcher sees nothing wrong: only
    // the survivors' own liveness check can end their barrier. They exit 0 only if
    // they got PeerDied naming the victim.
    let job = Job::new();
    job.expect_success(3, &["vanish", "1"], &[("NF_PEER_CHECK_MS", "50")]);
}

/// A rank in yield mode sleeps on its shm doorbell (seen from outside in a futex
/// wait), wakes for each message, and a dead peer still ends its sleep
/// (`nf-core-check doorbell`).
#[test]
fn a_yielding_rank_sleeps_on_its_doorbell_wakes_for_messages_and_sees_a_peer_die() {
    let job = Job::new();
    job.expect_success(
        2,
        &["doorbell", "20"],
        &[("NF_WAIT", "yield"), ("NF_PEER_CHECK_MS", "100")],
    );
}

/// Ranks that disagree on `NF_TCP_LANES` (rank 0 opens lanes, rank 1 none) fail at
/// wire-up, at once, saying which setting differs — not a hang, not a bare PMI error.
#[test]
fn ranks_disagreeing_on_tcp_lanes_fail_at_wire_up_naming_the_setting() {
    let job = Job::new();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rank0.log");
    let script = format!(
        "if [ \"$NF_RANK\" = 0 ]; then exec env NF_TCP_LANES=3 {} integrity 1 4 300000 \
         > {} 2>&1; fi; exec {} integrity 1 4 300000",
        env!("CARGO_BIN_EXE_nf-core-check"),
        log.display(),
        env!("CARGO_BIN_EXE_nf-core-check"),
    );
    let mut spec = job.spec(2, &["-c", &script], &TCP);
    spec.program = "/bin/sh".into();
    let report = nf_launch::run(&spec).expect("launch");
    assert!(
        matches!(report.outcome, Outcome::RankFailed { .. }),
        "{}",
        report.outcome
    );
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("NF_TCP_LANES=\"3\" is invalid")
            && said.contains("set the same NF_TCP_LANES on every rank"),
        "{said}"
    );
}
