//! The single-copy threshold measured at start-up (`nf_core::calibrate`), over real
//! processes started by the real launcher: the first job on a host measures it and
//! caches it, the next one uses the cache, and a threshold given by a setting, a
//! measurement switched off or one that runs out of time keep what they must.
//!
//! Run as a test of the `nf-checks` package (`crates/checks/Cargo.toml`: `cargo test -p
//! nf-checks --test core_calibrate`), which builds the programs it starts.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use nf_core::calibrate::SIZES;
use nf_core::tune::Tuned;
use nf_launch::{Binding, LaunchSpec, Outcome};

/// Runs `nf-core-check rndvsource ARGS` on `n` ranks with the tune cache at `cache`.
fn job(n: usize, cache: &Path, args: &[&str], env: &[(&str, &str)]) {
    let shm = tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm");
    let mut vars: Vec<(OsString, OsString)> =
        env.iter().map(|(k, v)| (k.into(), v.into())).collect();
    vars.push(("NF_SHM_DIR".into(), shm.path().into()));
    vars.push(("NF_TUNE_FILE".into(), cache.into()));
    let spec = LaunchSpec {
        nprocs: n,
        program: env!("CARGO_BIN_EXE_nf-core-check").into(),
        args: std::iter::once("rndvsource")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect(),
        // A safety net only: each job ends in seconds.
        timeout: Some(Duration::from_secs(120)),
        tag_output: true,
        bind: Binding::None,
        env: vars,
        oversubscribe: false,
    };
    let outcome = nf_launch::run(&spec).expect("launch").outcome;
    assert!(
        matches!(outcome, Outcome::Success),
        "rndvsource {args:?} on {n} ranks: {outcome}"
    );
}

fn cached(cache: &Path) -> Tuned {
    let text = std::fs::read_to_string(cache).expect("the tune cache was written");
    serde_json::from_str(&text).expect("the tune cache is JSON")
}

/// A budget no busy test machine exhausts: the measurement must finish.
const AMPLE: (&str, &str) = ("NF_RNDV_CALIBRATE", "30000");

#[test]
fn the_first_job_measures_for_every_rank_of_the_host_and_the_next_uses_the_cache() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("tune.json");
    // Driver, follower and a bystander, which adopts the driver's choice.
    job(3, &cache, &["measured"], &[AMPLE]);
    let t = cached(&cache);
    assert_eq!(t.rndv_measured.len(), 1, "one entry, this host's: {t:?}");
    let m = t.rndv_measured.values().next().unwrap();
    let threshold = m.threshold.expect("a conclusive measurement");
    assert!(SIZES.contains(&threshold), "{threshold} is a measured size");
    assert_eq!(t.rndv_threshold, None, "nf tune's own value stays unset");
    // The next job measures nothing and starts from the cached value.
    job(2, &cache, &["cached", &threshold.to_string()], &[AMPLE]);
    assert_eq!(cached(&cache).rndv_measured.values().next(), Some(m));
}

#[test]
fn a_given_threshold_or_a_measurement_switched_off_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("tune.json");
    job(
        2,
        &cache,
        &["given", "12345"],
        &[AMPLE, ("NF_RNDV_THRESHOLD", "12345")],
    );
    job(
        2,
        &cache,
        &[
            "default",
            &nf_core::config::DEFAULT_RNDV_THRESHOLD.to_string(),
        ],
        &[("NF_RNDV_CALIBRATE", "off")],
    );
    assert!(!cache.exists(), "nothing was measured, so nothing cached");
}

#[test]
fn a_measurement_out_of_time_keeps_the_default_and_waits_before_it_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("tune.json");
    let default = nf_core::config::DEFAULT_RNDV_THRESHOLD.to_string();
    job(
        2,
        &cache,
        &["default", &default],
        &[("NF_RNDV_CALIBRATE", "0")],
    );
    let first = cached(&cache).rndv_measured;
    assert_eq!(first.values().next().map(|m| m.threshold), Some(None));
    // Within the retry wait, even an ample budget measures nothing again.
    job(2, &cache, &["default", &default], &[AMPLE]);
    assert_eq!(cached(&cache).rndv_measured, first);
}

#[test]
fn a_peer_that_refuses_the_payloads_or_a_low_payload_limit_cannot_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let default = nf_core::config::DEFAULT_RNDV_THRESHOLD.to_string();
    // Rank 1 refuses anything above 1 KiB: the driver's first PING is never answered,
    // so the measurement runs out of time (1 s) and the default stands.
    let cache = dir.path().join("refused.json");
    job(
        2,
        &cache,
        &["default", &default],
        &[
            ("NF_RNDV_CALIBRATE", "1000"),
            ("NF_CHECK_RANK1_MAX_PAYLOAD", "1024"),
        ],
    );
    let m = cached(&cache).rndv_measured;
    assert_eq!(m.values().next().map(|m| m.threshold), Some(None));
    // Every rank's limit below the largest size: only the sizes allowed are measured.
    let cache = dir.path().join("limited.json");
    job(
        2,
        &cache,
        &["measured"],
        &[AMPLE, ("NF_MAX_PAYLOAD", &(1 << 20).to_string())],
    );
    let t = cached(&cache)
        .rndv_measured
        .values()
        .next()
        .unwrap()
        .threshold;
    assert!(t.is_some_and(|t| t <= 1 << 20), "{t:?}");
}
