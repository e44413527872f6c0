//! `nf tune`: a choice for every knob (or the ofi one's skip note), the cache it
//! writes, and `--check`'s comparison report. Few round trips: this checks that it
//! works, not what it measures.

mod bench_support;

use std::path::Path;

use bench_support::{finish, nf, text};

const KNOBS: [&str; 5] = ["rndv", "frame", "fast", "tcp-hold", "ofi-packet"];

/// `nf tune ARGS` with its cache at `cache`; its stdout, after checking it succeeded.
fn tune(cache: &Path, args: &[&str]) -> String {
    let out = finish(
        nf(&[&["tune", "--iters", "20", "--rounds", "1"], args].concat())
            .env("NF_TUNE_FILE", cache),
    );
    assert!(
        out.status.success(),
        "nf tune {args:?} failed:\n{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn tune_chooses_every_knob_caches_them_and_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("tune.json");

    let dry = tune(&cache, &["--dry-run"]);
    let ofi_skipped = dry.contains("ofi-packet: skipped, the ofi transport is unavailable");
    for knob in KNOBS {
        let chosen = dry.contains(&format!("choice: {knob} NF_"));
        assert!(
            chosen || (knob == "ofi-packet" && ofi_skipped),
            "no choice for {knob}:\n{dry}"
        );
    }
    assert!(!cache.exists(), "a dry run wrote the cache");

    tune(&cache, &[]);
    let cached: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    for field in [
        "rndv_threshold",
        "shm_frame_size",
        "shm_fast_limit",
        "tcp_hot_us",
    ] {
        assert!(cached[field].is_u64(), "{field} missing: {cached}");
    }
    assert_eq!(cached["ofi_packet"].is_u64(), !ofi_skipped, "{cached}");

    let report = dir.path().join("check.json");
    let check = tune(&cache, &["--check", "--json", report.to_str().unwrap()]);
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(r["bench"], "tune-check", "{r}");
    let ratios = r["params"]["ratios"].as_array().expect("ratios");
    for knob in KNOBS
        .iter()
        .filter(|k| !(**k == "ofi-packet" && ofi_skipped))
    {
        let of_knob: Vec<_> = ratios.iter().filter(|x| x["knob"] == *knob).collect();
        assert!(!of_knob.is_empty(), "no ratio for {knob}: {check}");
        assert!(of_knob
            .iter()
            .all(|x| x["ratio"].as_f64().is_some_and(|v| v > 0.0)));
    }
    assert!(
        r["results"].as_array().is_some_and(|rows| !rows.is_empty()),
        "{r}"
    );
}

#[test]
fn check_without_a_cache_says_to_tune_first() {
    let dir = tempfile::tempdir().unwrap();
    let out = finish(nf(&["tune", "--check"]).env("NF_TUNE_FILE", dir.path().join("none.json")));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("run `nf tune` first"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_knobs_and_counts_are_usage_errors() {
    for args in [
        &["tune", "--knobs", "frame,bogus"][..],
        &["tune", "--rounds", "0"],
        &["tune", "--iters", "0"],
        &["tune", "--json", "x.json"],
    ] {
        let out = finish(&mut nf(args));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn ranks_with_different_frame_sizes_fail_naming_the_setting() {
    let nf_exe = env!("CARGO_BIN_EXE_nf");
    let rank = format!(
        "if [ \"$NF_RANK\" = 1 ]; then export NF_SHM_FRAME_SIZE=8192; fi; \
         exec {nf_exe} bench pingpong --sizes 8 --iters 20 --warmup 1 --quiet"
    );
    let out = finish(&mut nf(&[
        "run",
        "-n",
        "2",
        "--timeout",
        "60",
        "--",
        "sh",
        "-c",
        &rank,
    ]));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("NF_SHM_FRAME_SIZE must be equal on every rank of a host"),
        "{err}"
    );
}

/// `nf tune --route` between two namespace hosts: a table of both transports, a
/// choice, and the cache keyed by the other host's identity (its namespace name, the
/// `NF_HOST` the launcher gives its ranks).
#[test]
fn tune_route_measures_between_two_hosts_and_caches_for_the_other_one() {
    let net = nf_testkit::Netns::create(2)
        .unwrap_or_else(|e| panic!("multi-host tests need network namespaces: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("tune.json");
    let hosts = format!("{},{}", net.host(0), net.host(1));
    let bind = net.addr(0).to_string();
    let out = finish(
        net.exec(0, env!("CARGO_BIN_EXE_nf"))
            .args(["tune", "--iters", "20", "--rounds", "1", "--route", &hosts])
            .args(["--remote", "ip netns exec {host}", "--pmi-bind", &bind])
            .env("NF_TUNE_FILE", &cache),
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let ofi = nf_transport::ofi::available().is_ok();
    assert!(stdout.contains("route (NF_NET_ROUTE)"), "{stdout}");
    let row = |r: &str| {
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("{r} ")))
    };
    assert!(row("tcp") && row("ofi") == ofi, "{stdout}");
    let choice = stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("choice: route to {}: NF_NET_ROUTE=", net.host(1))))
        .unwrap_or_else(|| panic!("no choice for host 1:\n{stdout}"));
    let cached: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cache).unwrap()).unwrap();
    assert_eq!(cached["net_route"][net.host(1)], choice, "{cached}");
    assert!(
        choice.parse::<nf_core::netroute::NetRoute>().is_ok(),
        "{choice}"
    );
}

#[test]
fn tune_route_needs_two_hosts() {
    let out = finish(&mut nf(&["tune", "--route", "onlyone", "--remote", "true"]));
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("--route takes two hosts"),
        "{}",
        text(&out.stderr)
    );
}
