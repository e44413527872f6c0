//! The rma layer over real processes started by the real launcher: same host with
//! direct access, same host through the service threads (`NF_RMA_DIRECT=0`), and two
//! network-namespace hosts of two ranks each.
//!
//! Each test runs `nf-rma-check MODE …` (src/bin) and checks the job's outcome and
//! that no segment file outlives it.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use nf_launch::{HostSlots, Hosts, LaunchSpec, Outcome, RemoteTemplate};
use nf_testkit::Netns;

/// A safety net only: every job here ends in well under a minute.
const BOUND: Duration = Duration::from_secs(180);

/// How the procs reach each other's memory.
#[derive(Clone, Copy, Debug)]
enum Path_ {
    /// One host, segments mapped by every proc.
    Direct,
    /// One host, every other proc through its service thread on loopback.
    Service,
}

struct Job {
    shm: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        Job {
            shm: tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm"),
        }
    }

    fn spec(&self, n: usize, args: &[&str], path: Path_) -> LaunchSpec {
        let mut env: Vec<(OsString, OsString)> =
            vec![("NF_SHM_DIR".into(), self.shm.path().into())];
        if let Path_::Service = path {
            env.push(("NF_RMA_DIRECT".into(), "0".into()));
        }
        LaunchSpec {
            nprocs: n,
            program: env!("CARGO_BIN_EXE_nf-rma-check").into(),
            args: args.iter().map(OsString::from).collect(),
            timeout: Some(BOUND),
            tag_output: true,
            bind: nf_launch::Binding::None,
            env,
        }
    }

    fn expect_success(&self, n: usize, args: &[&str], path: Path_) {
        self.expect_success_with(n, args, path, &[]);
    }

    fn expect_success_with(&self, n: usize, args: &[&str], path: Path_, env: &[(&str, &str)]) {
        let mut spec = self.spec(n, args, path);
        spec.env.extend(
            env.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let report = nf_launch::run(&spec).expect("launch");
        leftovers_are_gone(self.shm.path());
        assert!(
            matches!(report.outcome, Outcome::Success),
            "{args:?} on {n} ranks ({path:?}): {}",
            report.outcome
        );
    }

    /// Runs on both single-host paths.
    fn both(&self, n: usize, args: &[&str]) {
        self.expect_success(n, args, Path_::Direct);
        self.expect_success(n, args, Path_::Service);
    }
}

/// Segment files are unlinked once mapped, so nothing remains once a job is over.
fn leftovers_are_gone(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "segments left behind: {left:?}");
}

#[test]
fn contiguous_put_get_acc_between_every_pair() {
    Job::new().both(3, &["contig"]);
}

#[test]
fn strided_one_to_four_levels_with_differing_strides() {
    Job::new().both(3, &["strided"]);
}

#[test]
fn vector_put_get_acc() {
    Job::new().both(3, &["vector"]);
}

#[test]
fn non_blocking_handles_test_wait_and_implicit() {
    Job::new().both(3, &["nonblocking"]);
}

#[test]
fn randomized_stress_matches_the_serial_model() {
    let job = Job::new();
    job.expect_success(4, &["stress", "1", "400"], Path_::Direct);
    job.expect_success(4, &["stress", "2", "300"], Path_::Service);
}

#[test]
fn small_pieces_cut_at_element_boundaries() {
    // 4100 B pieces are not a multiple of a complex double: accumulates must still be
    // cut between elements, and strided transfers span many pieces.
    let job = Job::new();
    let small = [("NF_RMA_CHUNK", "4100")];
    job.expect_success_with(3, &["atomicity", "10"], Path_::Service, &small);
    job.expect_success_with(3, &["strided"], Path_::Service, &small);
    job.expect_success_with(3, &["contig"], Path_::Service, &small);
}

#[test]
fn concurrent_accumulates_are_atomic() {
    Job::new().both(4, &["atomicity", "60"]);
}

#[test]
fn counter_under_a_mutex_is_exact() {
    Job::new().both(4, &["mutex", "60"]);
}

#[test]
fn rmw_tickets_are_unique_and_swaps_chain() {
    Job::new().both(4, &["rmw", "100"]);
}

#[test]
fn a_computing_target_does_not_stall_gets_on_its_memory() {
    // The service path is the one that needs asynchronous progress.
    Job::new().expect_success(2, &["progress", "2"], Path_::Service);
}

#[test]
fn teams_allocate_transfer_and_free() {
    Job::new().both(4, &["teams"]);
}

#[test]
fn typed_global_arrays() {
    Job::new().both(3, &["typed"]);
}

#[test]
fn bad_input_gets_typed_errors_and_changes_nothing() {
    Job::new().both(2, &["badinput"]);
}

#[test]
fn oversubscribed_eight_procs_stress_and_mutex() {
    let job = Job::new();
    job.expect_success(8, &["mutex", "20"], Path_::Service);
    job.expect_success(8, &["stress", "3", "100"], Path_::Direct);
}

#[test]
fn a_vanished_target_is_an_error_not_a_hang() {
    Job::new().expect_success(3, &["vanish"], Path_::Service);
}

#[test]
fn a_mutex_holder_that_leaves_fails_the_waiters() {
    // Direct: the waiters see the holder's pid gone; service: its connection closes
    // and its host poisons the mutex.
    // Waiters check for dead holders every 50 ms instead of 250 (these jobs end without
    // the world's finalize, so the core's own checks are not in play).
    let job = Job::new();
    let quick = [("NF_PEER_CHECK_MS", "50")];
    job.expect_success_with(3, &["holderdies"], Path_::Direct, &quick);
    job.expect_success_with(3, &["holderdies"], Path_::Service, &quick);
}

/// Two namespace hosts of two ranks each, the launcher inside host 0.
fn across_hosts(args: &[&str]) {
    let net = Netns::create(2)
        .unwrap_or_else(|e| panic!("multi-host tests need network namespaces: {e}"));
    let job = Job::new();
    let hosts = Hosts {
        hosts: vec![
            HostSlots {
                name: net.host(0).to_owned(),
                ranks: 2,
            },
            HostSlots {
                name: net.host(1).to_owned(),
                ranks: 2,
            },
        ],
        remote: RemoteTemplate::parse("ip netns exec {host}").unwrap(),
        pmi_bind: Some(SocketAddr::new(net.addr(0), 0)),
    };
    let spec = job.spec(4, args, Path_::Direct);
    let report = net
        .within(0, || nf_launch::run_on_hosts(&spec, &hosts, |_| {}))
        .expect("enter host 0")
        .expect("launch");
    leftovers_are_gone(job.shm.path());
    assert!(
        matches!(report.outcome, Outcome::Success),
        "{args:?} across two hosts: {}",
        report.outcome
    );
}

#[test]
fn two_hosts_contig_strided_vector() {
    for mode in ["contig", "strided", "vector"] {
        across_hosts(&[mode]);
    }
}

#[test]
fn two_hosts_stress_atomicity_mutex_rmw() {
    across_hosts(&["stress", "4", "300"]);
    across_hosts(&["atomicity", "30"]);
    across_hosts(&["mutex", "30"]);
    across_hosts(&["rmw", "50"]);
}

#[test]
fn two_hosts_progress_and_bad_input() {
    across_hosts(&["progress", "2"]);
    across_hosts(&["badinput"]);
}
