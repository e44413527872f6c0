//! The rma layer over real processes started by the real launcher: same host with
//! direct access, same host through the service threads (`NF_RMA_DIRECT=0`,
//! `NF_RMA_OFI=off`), and two network-namespace hosts of two ranks each, once with put
//! and get over the ofi transport's native RMA (libfabric's tcp provider) and once
//! through the service threads. Every job on a path other than direct checks that
//! each proc really reaches the others that way (`NF_RMA_CHECK_ROUTE`).
//!
//! Each test runs `nf-rma-check MODE …` (`crates/checks/src/bin`) and checks the job's
//! outcome and that no segment file (nor memory-registry entry) outlives it.
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test rma`), which builds the programs it starts.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::time::Duration;

use nf_launch::{HostSlots, Hosts, LaunchSpec, Outcome, RemoteTemplate};
use nf_testkit::{leftovers_are_gone, Netns};

/// A safety net only: every job here ends in well under a minute.
const BOUND: Duration = Duration::from_secs(180);

/// How the procs reach each other's memory.
#[derive(Clone, Copy, Debug)]
enum Path_ {
    /// One host, segments mapped by every proc.
    Direct,
    /// Every other proc (one host), or every proc of the other host, through its
    /// service thread.
    Service,
    /// As `Service`, but put and get with the ofi transport's native RMA.
    Native,
}

impl Path_ {
    /// The settings that choose the path to other domains, and check it was taken.
    fn env(self) -> Vec<(&'static str, &'static str)> {
        match self {
            Path_::Direct => vec![],
            Path_::Service => vec![("NF_RMA_OFI", "off"), ("NF_RMA_CHECK_ROUTE", "service")],
            Path_::Native => vec![("NF_RMA_OFI", "on"), ("NF_RMA_CHECK_ROUTE", "native")],
        }
    }
}

struct Job {
    shm: tempfile::TempDir,
    /// The memory registry the procs publish in (`NF_MEM_REGISTRY`).
    registry: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        Job {
            shm: tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm"),
            registry: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    /// A job of `n` ranks; on one host, every path but `Direct` makes each proc a
    /// domain of its own (`NF_RMA_DIRECT=0`), across hosts only the hosts are.
    fn spec(&self, n: usize, args: &[&str], path: Path_, one_host: bool) -> LaunchSpec {
        let mut env: Vec<(OsString, OsString)> = vec![
            ("NF_SHM_DIR".into(), self.shm.path().into()),
            ("NF_MEM_REGISTRY".into(), self.registry.path().into()),
        ];
        if one_host && !matches!(path, Path_::Direct) {
            env.push(("NF_RMA_DIRECT".into(), "0".into()));
        }
        env.extend(path.env().into_iter().map(|(k, v)| (k.into(), v.into())));
        LaunchSpec {
            nprocs: n,
            program: env!("CARGO_BIN_EXE_nf-rma-check").into(),
            args: args.iter().map(OsString::from).collect(),
            timeout: Some(BOUND),
            tag_output: true,
            bind: nf_launch::Binding::None,
            env,
            oversubscribe: false,
        }
    }

    fn expect_success(&self, n: usize, args: &[&str], path: Path_) {
        self.expect_success_with(n, args, path, &[]);
    }

    fn expect_success_with(&self, n: usize, args: &[&str], path: Path_, env: &[(&str, &str)]) {
        let mut spec = self.spec(n, args, path, true);
        spec.env.extend(
            env.iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        let report = nf_launch::run(&spec).expect("launch");
        leftovers_are_gone(self.shm.path());
        // Each proc's memory-registry entry leaves with it; a proc that exits on purpose
        // without dropping its `Rma` leaves one behind, which must read as dead.
        if VANISHING.contains(&args[0]) {
            let live: Vec<_> = nf_memreg::scan(self.registry.path())
                .into_iter()
                .filter(|(e, _)| e.alive())
                .map(|(e, _)| e.file_name())
                .collect();
            assert!(
                live.is_empty(),
                "live registry entries after the job: {live:?}"
            );
        } else {
            leftovers_are_gone(self.registry.path());
        }
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

/// Checks in which a proc exits without dropping its `Rma` (on purpose).
const VANISHING: &[&str] = &["vanish", "holderdies"];

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
fn ofi_rma_on_where_it_cannot_run_fails_start_up_and_auto_falls_back() {
    let job = Job::new();
    let nowhere = [("NF_OFI_PROVIDER", "no-such-provider")];
    // Every proc gets the same error naming the setting and the proc (the job would
    // hang in a collective if one failed alone).
    job.expect_success_with(3, &["refused"], Path_::Native, &nowhere);
    // auto: the service thread carries put and get (the route check says so).
    let mut auto = nowhere.to_vec();
    auto.push(("NF_RMA_OFI", "auto"));
    job.expect_success_with(3, &["contig"], Path_::Service, &auto);
}

#[test]
fn teams_allocate_transfer_and_free() {
    Job::new().both(4, &["teams"]);
}

/// A team's collectives (`NodeTeam`) over every proc but the first: on the node's
/// shared memory, and with every proc its own domain through the leaders' step.
#[test]
fn node_team_collectives() {
    Job::new().both(4, &["nodeteam"]);
}

#[test]
fn freed_allocations_come_back_zeroed_and_reachable() {
    Job::new().both(3, &["reuse"]);
}

#[test]
fn typed_global_arrays() {
    Job::new().both(3, &["typed"]);
}

#[test]
fn bad_input_gets_typed_errors_and_changes_nothing() {
    Job::new().both(2, &["badinput"]);
}

/// Global Arrays' `enormous` on libarmci got every rank OOM-killed: the segment was
/// made, then touched. Twice the host's memory, asked for by 2 ranks of one host,
/// must fail on both at once with `NoRoom`, and leave the job able to go on.
#[test]
fn an_allocation_the_host_cannot_hold_fails_on_every_proc_not_in_the_oom_killer() {
    Job::new().both(2, &["toobig"]);
}

#[test]
fn an_adopted_range_is_reached_in_place_and_private_again_after_free() {
    Job::new().both(3, &["adopt"]);
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

/// Two namespace hosts, the launcher inside host 0; jobs run on `path`.
struct TwoHosts {
    net: Netns,
    job: Job,
    path: Path_,
}

impl TwoHosts {
    fn new(path: Path_) -> TwoHosts {
        let net = Netns::create(2)
            .unwrap_or_else(|e| panic!("multi-host tests need network namespaces: {e}"));
        TwoHosts {
            net,
            job: Job::new(),
            path,
        }
    }

    /// Runs `args` with `per_host` ranks on each host; expects success.
    fn run(&self, per_host: [usize; 2], args: &[&str]) {
        let hosts = Hosts {
            hosts: (0..2)
                .map(|i| HostSlots {
                    name: self.net.host(i).to_owned(),
                    ranks: per_host[i],
                })
                .collect(),
            remote: std::sync::Arc::new(RemoteTemplate::parse("ip netns exec {host}").unwrap()),
            pmi_bind: Some(SocketAddr::new(self.net.addr(0), 0)),
        };
        let spec = self.job.spec(per_host.iter().sum(), args, self.path, false);
        let report = self
            .net
            .within(0, || nf_launch::run_on_hosts(&spec, &hosts, |_| {}))
            .expect("enter host 0")
            .expect("launch");
        leftovers_are_gone(self.job.shm.path());
        assert!(
            matches!(report.outcome, Outcome::Success),
            "{args:?} across two hosts ({:?}): {}",
            self.path,
            report.outcome
        );
    }

    /// Two ranks per host (same-host pairs go direct, the others on `path`).
    fn each(&self, modes: &[&[&str]]) {
        for args in modes {
            self.run([2, 2], args);
        }
    }
}

/// Across hosts: put and get over the ofi transport's native RMA (accumulate, rmw and
/// mutexes through the service thread), or everything through the service thread.
fn remote_path(native: bool) -> Path_ {
    if native {
        Path_::Native
    } else {
        Path_::Service
    }
}

fn shapes_across_hosts(native: bool) {
    TwoHosts::new(remote_path(native)).each(&[
        &["contig"],
        &["strided"],
        &["vector"],
        &["nonblocking"],
        &["teams"],
        &["nodeteam"],
        &["typed"],
        &["reuse"],
        &["adopt"],
    ]);
}

fn sync_across_hosts(native: bool) {
    TwoHosts::new(remote_path(native)).each(&[
        &["stress", "4", "300"],
        &["atomicity", "30"],
        &["mutex", "30"],
        &["rmw", "50"],
    ]);
}

fn faults_across_hosts(native: bool) {
    let hosts = TwoHosts::new(remote_path(native));
    hosts.each(&[&["progress", "2"], &["badinput"]]);
    // One rank per host: the target vanishes while proc 0 reads its memory.
    hosts.run([1, 1], &["vanish"]);
}

#[test]
fn two_hosts_shapes_over_ofi_native_rma() {
    shapes_across_hosts(true);
}

#[test]
fn two_hosts_shapes_over_the_service_thread() {
    shapes_across_hosts(false);
}

#[test]
fn two_hosts_stress_atomicity_mutex_rmw_over_ofi_native_rma() {
    sync_across_hosts(true);
}

#[test]
fn two_hosts_stress_atomicity_mutex_rmw_over_the_service_thread() {
    sync_across_hosts(false);
}

#[test]
fn two_hosts_progress_bad_input_and_a_vanishing_target_over_ofi_native_rma() {
    faults_across_hosts(true);
}

#[test]
fn two_hosts_progress_bad_input_and_a_vanishing_target_over_the_service_thread() {
    faults_across_hosts(false);
}
