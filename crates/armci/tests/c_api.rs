//! The ARMCI C API as a C program uses it: each program in tests/c/ is built with
//! `mpicc` against libarmci and run by Open MPI's `mpirun` with 2 and 4 processes
//! (and, for the ones about the network, across two namespace hosts).
//!
//! `NF_ARMCI_TEST_IMPL=armci-mpi cargo test -p nf-armci --test c_api` runs the same
//! programs against Debian's ARMCI-MPI, which proves the tests themselves right.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::{
    assert_all_passed, compile, expected_tests, mpirun, mpirun_hosts, mpirun_hosts_with,
    mpirun_with, Impl,
};
use nf_testkit::Netns;

/// Generous: a run takes seconds; this only stops a hang.
const LIMIT: Duration = Duration::from_secs(240);
/// A bad call aborts at once; this only stops a hang.
const BAD_LIMIT: Duration = Duration::from_secs(60);

fn source(name: &str) -> PathBuf {
    common::crate_dir()
        .join("tests/c")
        .join(format!("{name}.c"))
}

fn build(name: &str) -> (Impl, PathBuf) {
    let imp = Impl::from_env();
    (imp, compile(imp, name, &[source(name)], &[]))
}

/// Runs program `name` with each process count and checks every test passed.
fn run_c(name: &str, nps: &[usize], args: &[&str]) {
    let (imp, prog) = build(name);
    let names = expected_tests(&source(name), imp);
    for &np in nps {
        let out = mpirun(np, &prog, args, LIMIT);
        assert_all_passed(&format!("{name} -np {np} ({imp:?})"), &out, &names);
    }
}

/// Runs program `name` on two namespace hosts with two processes each.
fn run_c_two_hosts(name: &str, args: &[&str]) {
    let (imp, prog) = build(name);
    let names = expected_tests(&source(name), imp);
    let net = Netns::create(2).expect("two namespace hosts");
    let out = mpirun_hosts(&net, 2, &prog, args, LIMIT);
    assert_all_passed(&format!("{name} on 2 hosts x 2 ({imp:?})"), &out, &names);
}

#[test]
fn setup_init_finalize() {
    run_c("t_setup", &[2, 4], &[]);
}

/// ARMCI_Init and a fresh ARMCI_Malloc make few collectives across the world, and
/// start-up leaves libfabric alone with the tcp provider (`t_rounds` counts the
/// library's MPI calls through the PMPI names).
#[test]
fn start_up_and_allocation_rounds() {
    run_c("t_rounds", &[2, 4], &[]);
    run_c_two_hosts("t_rounds", &[]);
}

#[test]
fn memory_allocation() {
    run_c("t_memory", &[2, 4], &[]);
}

#[test]
fn contiguous_put_get_acc() {
    run_c("t_contig", &[2, 4], &[]);
}

#[test]
fn strided_one_to_four_levels() {
    run_c("t_strided", &[2, 4], &[]);
}

#[test]
fn vector_operations() {
    run_c("t_vector", &[2, 4], &[]);
}

#[test]
fn nonblocking_handles() {
    run_c("t_nonblocking", &[2, 4], &[]);
}

#[test]
fn rmw_accumulate_atomicity_mutexes() {
    run_c("t_atomics", &[2, 4], &[]);
}

/// Collectives by path on each of `np` ranks, `[mpi, node, team]`, from
/// `NF_ARMCI_STATS`'s line at `ARMCI_Finalize`.
fn path_counts(out: &common::RunOutput, np: usize) -> Vec<[u64; 3]> {
    (0..np)
        .map(|rank| {
            let head = format!("libarmci: rank {rank}: ARMCI_Finalize: collectives: ");
            let line = out
                .stderr
                .lines()
                .find_map(|l| l.strip_prefix(head.as_str()))
                .unwrap_or_else(|| panic!("no {head:?} in:\n{}", out.both()));
            let n: Vec<u64> = line
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|w| w.parse().ok())
                .collect();
            match n[..] {
                [mpi, node, team] => [mpi, node, team],
                _ => panic!("not 3 counts in {line:?}:\n{}", out.both()),
            }
        })
        .collect()
}

/// Also on two hosts, where a group of every process in reverse order spans both and
/// holds whole nodes (its collectives and allocations on the nodes' shared memory, MPI
/// among the leaders), the upper half holds the second host, the even ranks hold one
/// process of each (MPI), and all but the last process hold the first host and part
/// of the second (each node's shared memory through the group's team, MPI among the
/// leaders).
///
/// The paths, counted by `NF_ARMCI_STATS`: at 4 ranks on one host the halves' 40
/// rounds of at least 24 collectives each run on their part-node teams, and on two
/// hosts the 10 rounds of at least 12 of all but the last process.
#[test]
fn groups() {
    run_c("t_groups", &[2], &[]);
    let (imp, prog) = build("t_groups");
    let names = expected_tests(&source("t_groups"), imp);
    let stats = ["-x", "NF_ARMCI_STATS=1"];
    let out = mpirun_with(4, &stats, &prog, &[], LIMIT);
    assert_all_passed(&format!("t_groups -np 4 ({imp:?})"), &out, &names);
    if imp == Impl::Ninefold {
        let counts = path_counts(&out, 4);
        assert!(
            counts.iter().all(|c| c[2] >= 40 * 24),
            "collectives [mpi, node, team] per rank on one host: {counts:?}"
        );
    }
    let net = Netns::create(2).expect("two namespace hosts");
    let out = mpirun_hosts_with(&net, 2, &stats, &prog, &[], LIMIT);
    assert_all_passed(&format!("t_groups on 2 hosts x 2 ({imp:?})"), &out, &names);
    if imp == Impl::Ninefold {
        let counts = path_counts(&out, 4);
        assert!(
            counts[..3].iter().all(|c| c[2] >= 10 * 12),
            "collectives [mpi, node, team] per rank on 2 hosts x 2: {counts:?}"
        );
    }
}

/// ARMCI-MPI's additions: Init_thread (and _comm over a reversed communicator),
/// NbPutValue*, Access_begin / _end, ARMCIX group split / dup, mutex handles, progress.
#[test]
fn armci_mpi_extensions() {
    run_c("t_armcix", &[2, 4], &[]);
    run_c("t_armcix", &[2, 4], &["reversed"]);
}

#[test]
fn armci_msg() {
    run_c("t_msg", &[2, 4], &[]);
}

/// Against ARMCI-MPI the program needs Debian's libga, which holds GA's own
/// armci_tcgmsg_*; against ninefold, libarmci's are the ones under test.
#[test]
fn tcgmsg_under_ga_names() {
    let imp = Impl::from_env();
    let ga_libs = if imp == Impl::ArmciMpi {
        vec![
            "-lga-openmpi",
            "-lscalapack-openmpi",
            "-llapack",
            "-lblas",
            "-lgfortran",
        ]
    } else {
        Vec::new()
    };
    let prog = compile(imp, "t_tcgmsg", &[source("t_tcgmsg")], &ga_libs);
    let names = expected_tests(&source("t_tcgmsg"), imp);
    for np in [2, 4] {
        let out = mpirun(np, &prog, &[], LIMIT);
        assert_all_passed(&format!("t_tcgmsg -np {np} ({imp:?})"), &out, &names);
    }
}

#[test]
fn topology_one_host() {
    run_c("t_topology", &[2, 4], &["1"]);
}

/// Barrier, every gop type x operator, broadcast from every root, at lengths of one
/// shared-memory step and of several; ordering of stores and puts by the barriers.
#[test]
fn collectives_against_plain_computation() {
    run_c("t_coll", &[1, 2, 4], &[]);
}

/// The same checks on the other paths: MPI forced by `NF_ARMCI_COLL_MAX=0`, MPI with
/// every process a node of its own (`NF_RMA_DIRECT=0`), and shared memory at every
/// length (broadcasts of several 32 KiB steps, which stay on MPI by default).
#[test]
fn collectives_on_every_path() {
    let (imp, prog) = build("t_coll");
    let names = expected_tests(&source("t_coll"), imp);
    for env in [
        "NF_ARMCI_COLL_MAX=0",
        "NF_RMA_DIRECT=0",
        "NF_ARMCI_COLL_MAX=1073741824",
    ] {
        let out = mpirun_with(4, &["-x", env], &prog, &[], LIMIT);
        assert_all_passed(&format!("t_coll -np 4 with {env} ({imp:?})"), &out, &names);
    }
}

/// Across two hosts: each node's shared memory, MPI among the leaders; by default,
/// and with every length on shared memory (broadcasts of several steps, each with
/// its leaders' step).
#[test]
fn collectives_across_two_hosts() {
    run_c_two_hosts("t_coll", &[]);
    let (imp, prog) = build("t_coll");
    let names = expected_tests(&source("t_coll"), imp);
    let net = Netns::create(2).expect("two namespace hosts");
    let opts = ["-x", "NF_ARMCI_COLL_MAX=1073741824"];
    let out = mpirun_hosts_with(&net, 2, &opts, &prog, &[], LIMIT);
    assert_all_passed(
        &format!("t_coll on 2 hosts x 2, all on shared memory ({imp:?})"),
        &out,
        &names,
    );
}

/// A process killed while the others wait in a barrier ends the job, naming it: under
/// plain `mpirun` (which ends a job whose process died), and when `mpirun` keeps the
/// job going after a death (`orte_enable_recovery`; it then exits 0 whatever the
/// processes did), where the waiting processes notice the death themselves, leader or
/// not, and abort with a message naming it; likewise in a group's barrier (a group of
/// whole nodes, on the node's shared memory; a group holding part of the node, on its
/// team's).
#[test]
fn a_process_killed_in_a_barrier_ends_the_job() {
    let (imp, prog) = build("t_coll");
    for (mode, victim, call, op) in [
        ("kill", 3, "armci_msg_barrier", "node barrier"),
        ("kill-leader", 0, "armci_msg_barrier", "node barrier"),
        ("kill-group", 3, "armci_msg_group_barrier", "node barrier"),
        ("kill-part", 3, "armci_msg_group_barrier", "team barrier"),
    ] {
        let out = mpirun(4, &prog, &[mode], BAD_LIMIT);
        assert!(!out.timed_out, "{mode}: the others hung\n{}", out.both());
        assert_ne!(
            out.code,
            Some(0),
            "{mode}: the job succeeded\n{}",
            out.both()
        );
        assert!(!out.stdout.contains("passed a barrier"), "{}", out.both());
        if imp == Impl::ArmciMpi {
            continue; // its MPI barrier waits for the dead process forever under recovery
        }
        let opts = ["--mca", "orte_enable_recovery", "1"];
        let out = mpirun_with(4, &opts, &prog, &[mode], BAD_LIMIT);
        assert!(!out.timed_out, "{mode}: the others hung\n{}", out.both());
        assert!(!out.stdout.contains("passed a barrier"), "{}", out.both());
        let says = format!("{call}: {op}: proc {victim} ");
        assert!(
            out.stderr.contains(&says) && out.stderr.contains("died"),
            "{mode}: no process says {says:?}...died\n{}",
            out.both()
        );
    }
}

#[test]
fn randomized_stress_against_a_serial_model() {
    run_c("t_stress", &[2, 4], &[]);
}

#[test]
fn progress_while_the_target_computes() {
    run_c("t_progress", &[2, 4], &[]);
}

#[test]
fn across_two_hosts_topology_progress_stress() {
    run_c_two_hosts("t_topology", &["2"]);
    run_c_two_hosts("t_progress", &[]);
    run_c_two_hosts("t_stress", &[]);
}

/// Each bad call: the words the error must contain (call, argument, what is wrong)
/// and the job's exit code.
const BAD_INPUT: &[(&str, &[&str], i32)] = &[
    ("put-null-src", &["ARMCI_Put", "'src'", "NULL"], 65),
    ("get-null-dst", &["ARMCI_Get", "'dst'", "NULL"], 65),
    ("put-outside", &["ARMCI_Put", "'dst'", "outside"], 65),
    ("get-crosses-end", &["ARMCI_Get", "'src'", "outside"], 65),
    ("get-proc-range", &["ARMCI_Get", "'proc'", "0 .. 1"], 65),
    ("put-negative-bytes", &["ARMCI_Put", "'bytes'", "-8"], 65),
    (
        "puts-too-many-levels",
        &["ARMCI_PutS", "'stride_levels'", "9"],
        65,
    ),
    ("gets-bad-count", &["ARMCI_GetS", "'count[1]'", "-1"], 65),
    ("acc-bad-type", &["ARMCI_Acc", "'datatype'", "99"], 65),
    ("acc-null-scale", &["ARMCI_Acc", "'scale'", "NULL"], 65),
    ("malloc-null", &["ARMCI_Malloc", "'ptr_arr'", "NULL"], 65),
    ("rmw-bad-op", &["ARMCI_Rmw", "'op'", "17"], 65),
    ("lock-bad-mutex", &["ARMCI_Lock", "'mutex'", "5"], 65),
    ("free-not-allocated", &["ARMCI_Free", "'ptr'"], 65),
    (
        "group-bad-pid",
        &["ARMCI_Group_create", "'pid_list[1]'"],
        65,
    ),
    (
        "malloc-over-limit",
        &["ARMCI_Malloc", "'bytes'", "ARMCI_Set_shm_limit"],
        65,
    ),
    (
        "memdev-unknown-device",
        &["ARMCI_Malloc_memdev", "'device'", "HBM"],
        65,
    ),
    ("wait-bad-handle", &["ARMCI_Wait", "'handle'", "12345"], 65),
    (
        "error-call",
        &["ARMCI_Error", "the program gave up", "code 7"],
        7,
    ),
    ("msg-abort", &["armci_msg_abort(9)"], 9),
    (
        "gop-unknown-op",
        &["armci_msg_gop", "'op'", "\"xor\"", "\"&&\""],
        65,
    ),
    (
        "gop-bitwise-double",
        &["armci_msg_gop", "'op'", "\"|\"", "ARMCI_DOUBLE", "bitwise"],
        65,
    ),
];

#[test]
fn bad_input_aborts_with_a_clear_error() {
    let (imp, prog) = build("t_badinput");
    let mut missed = Vec::new();
    for &(case, words, code) in BAD_INPUT {
        let out = mpirun(2, &prog, &[case], BAD_LIMIT);
        if imp == Impl::ArmciMpi {
            // The reference has its own messages; it must at least fail the job.
            if out.timed_out || out.code == Some(0) || out.stderr.contains("returned") {
                missed.push(case);
            }
            continue;
        }
        assert!(!out.timed_out, "{case}: hung\n{}", out.both());
        assert_eq!(out.code, Some(code), "{case}: exit code\n{}", out.both());
        for w in words {
            assert!(
                out.stderr.contains(w),
                "{case}: the error does not say {w:?}\n{}",
                out.both()
            );
        }
    }
    assert!(
        missed.is_empty(),
        "{imp:?} let these bad calls through: {missed:?}"
    );
}

#[test]
fn init_before_mpi_init_is_refused() {
    let (imp, prog) = build("t_badinput");
    let out = mpirun(1, &prog, &["init-before-mpi"], BAD_LIMIT);
    assert!(
        !out.timed_out && out.code != Some(0) && out.code != Some(3),
        "{}",
        out.both()
    );
    if imp == Impl::Ninefold {
        assert!(
            out.stderr.contains("ARMCI_Init") && out.stderr.contains("MPI_Init"),
            "{}",
            out.both()
        );
    }
}
