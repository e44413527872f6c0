//! Global Arrays acceptance: C programs using Debian's `ga.h`, linked the way
//! `ga-config --libs` says but with libarmci in place of ARMCI-MPI, run by `mpirun`
//! with 2 and 4 processes and across two namespace hosts (2 + 2). Each program checks
//! its results against a serial computation of its own.
//!
//! `NF_ARMCI_TEST_IMPL=armci-mpi` links them against ARMCI-MPI instead (the proof
//! that the programs are right).

mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{
    assert_all_passed, compile, expected_tests, lib_dir, mpirun, mpirun_hosts, symbols, Impl,
};
use nf_testkit::Netns;

/// Generous: a run takes seconds; this only stops a hang.
const LIMIT: Duration = Duration::from_secs(300);

/// Debian's `ga-config` for the Open MPI build of Global Arrays.
const GA_CONFIG: &str = "/usr/lib/x86_64-linux-gnu/ga/openmpi/bin/ga-config";

/// Debian's Global Arrays archive.
const LIBGA: &str = "/usr/lib/x86_64-linux-gnu/libga-openmpi.a";

/// The words of `ga-config ARG`.
fn ga_config(arg: &str) -> Vec<String> {
    let out = Command::new(GA_CONFIG)
        .arg(arg)
        .output()
        .unwrap_or_else(|e| {
            panic!("{GA_CONFIG} {arg}: {e}; install libglobalarrays-dev (scripts/setup.sh)")
        });
    assert!(out.status.success(), "{GA_CONFIG} {arg} failed");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

/// `ga-config --libs` without ARMCI-MPI, then the Fortran runtime GA needs.
fn ga_libs() -> Vec<String> {
    let mut libs: Vec<String> = ga_config("--libs")
        .into_iter()
        .filter(|w| w != "-larmci-openmpi")
        .collect();
    libs.extend(ga_config("--flibs"));
    libs
}

fn source(name: &str) -> PathBuf {
    common::crate_dir()
        .join("tests/ga")
        .join(format!("{name}.c"))
}

fn build(name: &str) -> (Impl, PathBuf) {
    let imp = Impl::from_env();
    (imp, build_for(imp, name))
}

/// Builds GA program `name` against `imp`.
fn build_for(imp: Impl, name: &str) -> PathBuf {
    let libs = ga_libs();
    let libs: Vec<&str> = libs.iter().map(String::as_str).collect();
    let include = format!("-I{}", common::crate_dir().join("tests/ga").display());
    let mut pre = vec![include.as_str()];
    pre.extend(libs);
    compile(imp, name, &[source(name)], &pre)
}

/// Runs GA program `name` with 2 and 4 processes and on two hosts with 2 each.
fn run_ga(name: &str) {
    let (imp, prog) = build(name);
    let names = expected_tests(&source(name), imp);
    for np in [2, 4] {
        let out = mpirun(np, &prog, &[], LIMIT);
        assert_all_passed(&format!("{name} -np {np} ({imp:?})"), &out, &names);
    }
    let net = Netns::create(2).expect("two namespace hosts");
    let out = mpirun_hosts(&net, 2, &prog, &[], LIMIT);
    assert_all_passed(&format!("{name} on 2 hosts x 2 ({imp:?})"), &out, &names);
}

#[test]
fn ga_create_destroy_patches() {
    run_ga("ga_arrays");
}

#[test]
fn ga_dgemm_ddot() {
    run_ga("ga_algebra");
}

#[test]
fn ga_read_inc_and_lock() {
    run_ga("ga_sync");
}

#[test]
fn ga_processor_groups() {
    run_ga("ga_groups");
}

/// The patch operations GA reduces flags for with "&&" and the step functions, with
/// 4 processes on libarmci and on ARMCI-MPI: both pass their serial checks and
/// print the same values.
#[test]
fn ga_patch_ops_and_step_functions_match_armci_mpi() {
    let names = expected_tests(&source("ga_patch_ops"), Impl::Ninefold);
    let values = |imp: Impl| {
        let prog = build_for(imp, "ga_patch_ops");
        let out = mpirun(4, &prog, &[], LIMIT);
        assert_all_passed(&format!("ga_patch_ops -np 4 ({imp:?})"), &out, &names);
        let v: Vec<String> = out
            .stdout
            .lines()
            .filter(|l| l.starts_with("value "))
            .map(str::to_owned)
            .collect();
        assert_eq!(v.len(), 7, "({imp:?}) value lines:\n{}", out.both());
        v
    };
    assert_eq!(values(Impl::Ninefold), values(Impl::ArmciMpi));
}

/// Every ARMCI symbol Debian's libga references, the armci_tcgmsg_* family
/// included, is exported by libarmci.so.
#[test]
fn libarmci_exports_everything_libga_references() {
    let lib = lib_dir().join("libarmci.so");
    let lib = lib.to_str().expect("utf-8 path");
    let exported = symbols(&["-D", "--defined-only"], lib, true);
    let referenced: BTreeSet<String> = symbols(&["-u"], LIBGA, false)
        .into_iter()
        .filter(|s| s.to_lowercase().contains("armci"))
        .collect();
    let ga_own = symbols(&[], LIBGA, true);
    let needed: Vec<&String> = referenced
        .iter()
        .filter(|s| !ga_own.contains(*s) || s.starts_with("armci_tcgmsg_"))
        .collect();
    assert!(
        needed.len() > 90,
        "only {} ARMCI symbols found in {LIBGA}",
        needed.len()
    );
    let missing: Vec<&&String> = needed.iter().filter(|s| !exported.contains(**s)).collect();
    assert!(
        missing.is_empty(),
        "libarmci.so does not export {missing:?}"
    );
}

/// A GA program built here takes every ARMCI symbol from libarmci.so: none is
/// defined in the executable (ARMCI-MPI is a static archive, so linking it would
/// define them there), and the dynamic linker finds libarmci.so (by its soname,
/// libarmci.so.0).
#[test]
fn ga_programs_link_libarmci_not_armci_mpi() {
    assert!(!ga_libs().iter().any(|w| w.contains("armci-openmpi")));
    let (imp, prog) = build("ga_algebra");
    if imp == Impl::ArmciMpi {
        panic!("this check is about libarmci; NF_ARMCI_TEST_IMPL=armci-mpi links ARMCI-MPI");
    }
    let prog = prog.to_str().expect("utf-8 path");
    let defined = symbols(&[], prog, true);
    assert!(
        !defined
            .iter()
            .any(|s| s.starts_with("ARMCI_") || s.starts_with("PARMCI_")),
        "the executable defines ARMCI symbols itself"
    );
    assert!(symbols(&["-u"], prog, false).contains("ARMCI_Init"));
    // Without cargo's LD_LIBRARY_PATH, which names the uplifted copy in target/<profile>.
    let ldd = Command::new("ldd")
        .arg(prog)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("ldd");
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    let ours = lib_dir().join("libarmci.so.0");
    assert!(
        ldd.contains(&format!("libarmci.so.0 => {}", ours.display())),
        "ldd does not resolve libarmci.so to {}:\n{ldd}",
        ours.display()
    );
}

/// The wrappers of `bench/mpi/armci_prof_calls.h` without a `PARMCI_` twin, as the
/// linker flags that route calls to them (`bench/compare-ga.sh` reads the same lines).
fn profiler_wraps(table: &str) -> Vec<String> {
    table
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("WV(").or_else(|| {
                // W(ret, name, ...): the name is the second field.
                l.strip_prefix("W(")
                    .and_then(|r| r.split_once(',').map(|(_, n)| n))
            })?;
            let name = rest.split(',').next()?.trim();
            Some(format!("-Wl,--wrap={name}"))
        })
        .collect()
}

/// `(calls, bytes)` of `call` in one rank's profile (armci_prof.c's JSON, rule 3).
fn profiled(json: &str, call: &str) -> Option<(u64, u64)> {
    let at = json.find(&format!("\"{call}\": {{"))?;
    let entry = &json[at..at + json[at..].find('}')?];
    let field = |name: &str| -> Option<u64> {
        let v = &entry[entry.find(&format!("\"{name}\": "))? + name.len() + 4..];
        v.split([',', '}']).next()?.trim().parse().ok()
    };
    Some((field("calls")?, field("bytes")?))
}

/// The ARMCI call profiler of `bench/compare-ga.sh`, linked first into a GA program
/// over libarmci and over ARMCI-MPI: each rank writes its profile at
/// `ARMCI_Finalize`, with the same counts and bytes of the one-sided calls the program
/// makes on both (ten rounds of one 4-byte put, each between two `GA_Sync`s), and
/// the collectives it reaches only through the link-time wrappers (`armci_msg_*`).
#[test]
fn armci_profiler_counts_the_same_calls_over_both_libraries() {
    let bench = common::crate_dir().join("../../bench/mpi");
    let table = std::fs::read_to_string(bench.join("armci_prof_calls.h")).expect("the table");
    let wraps = profiler_wraps(&table);
    assert!(wraps.iter().any(|w| w == "-Wl,--wrap=armci_msg_barrier"));
    let mut counts = Vec::new();
    for imp in [Impl::Ninefold, Impl::ArmciMpi] {
        let mut pre: Vec<String> = wraps.clone();
        pre.extend(ga_libs());
        let pre: Vec<&str> = pre.iter().map(String::as_str).collect();
        let sources = [bench.join("ga_kernels.c"), bench.join("armci_prof.c")];
        let prog = compile(imp, "ga_kernels_prof", &sources, &pre);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("armci-prof-{imp:?}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the profile folder");
        let env = format!("ARMCI_PROF_DIR={}", dir.display());
        let args = ["--kernel", "sync", "--rounds", "10"];
        let out = common::mpirun_with(2, &["-x", &env], &prog, &args, LIMIT);
        assert_eq!(out.code, Some(0), "({imp:?}):\n{}", out.both());
        for rank in 0..2 {
            let path = dir.join(format!("prof-{rank}.json"));
            let json = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("({imp:?}) {}: {e}\n{}", path.display(), out.both()));
            let puts = profiled(&json, "ARMCI_PutS").expect("ARMCI_PutS in the profile");
            let (barriers, _) =
                profiled(&json, "armci_msg_barrier").expect("armci_msg_barrier in the profile");
            assert_eq!(puts, (10, 40), "({imp:?}) rank {rank}:\n{json}");
            assert!(barriers >= 20, "({imp:?}) rank {rank}:\n{json}");
            assert_eq!(profiled(&json, "ARMCI_Finalize").map(|c| c.0), Some(1));
            counts.push((puts, profiled(&json, "ARMCI_Malloc").map(|c| c.0)));
        }
    }
    assert_eq!(
        counts[..2],
        counts[2..],
        "libarmci's counts, then ARMCI-MPI's"
    );
}
