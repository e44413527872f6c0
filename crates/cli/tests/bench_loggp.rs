//! `nf bench loggp` as a user runs it, on local ranks and across two namespace hosts.
//! The parameters are timings, so their values are not asserted; what is: each is
//! non-negative with an interval around it, the model plus its residual is the
//! measurement, and the measured T(s) is what `nf bench pingpong` measures on the same
//! ranks and sizes.

mod bench_support;

use bench_support::{finish, nf, on_two_hosts, ranks_alone, report, text};

const SIZES: &str = "8,4096,65536";
const QUICK: &[&str] = &["--sizes", SIZES, "--iters", "2000", "--stream", "10"];
const PARAMS: [&str; 5] = ["l_us", "o_s_us", "o_r_us", "g_us", "big_g_us_per_byte"];

fn check(json: &std::path::Path) -> serde_json::Value {
    let v = report(json);
    let m = &v["model"];
    for key in PARAMS {
        let f = |k: &str| m[key][k].as_f64().unwrap_or(f64::NAN);
        let (value, lo, hi) = (f("value"), f("lo"), f("hi"));
        assert!(
            value.is_finite() && lo.is_finite() && hi.is_finite(),
            "{key} has no value with an interval: {m}"
        );
        assert!(
            0.0 <= lo && lo <= value && value <= hi,
            "{key}: not 0 <= lo <= value <= hi: {m}"
        );
    }
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for p in points {
        let f = |k: &str| p[k].as_f64().unwrap();
        assert!(
            f("t_us") > 0.0 && f("o_s_us") >= 0.0 && f("o_r_us") >= 0.0,
            "{p}"
        );
        assert!(
            (f("t_model_us") + f("residual_us") - f("t_us")).abs() < 1e-6,
            "{p}"
        );
    }
    v
}

/// Median half round trip per size from a `nf bench pingpong` JSON report.
fn pingpong_medians(json: &std::path::Path) -> Vec<(u64, f64)> {
    report(json)["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["size"].as_u64().unwrap(),
                r["median_us"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn loggp_on_local_ranks_gives_non_negative_parameters_with_intervals() {
    let _alone = ranks_alone();
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, png) = (
        dir.path().join("l.json"),
        dir.path().join("l.csv"),
        dir.path().join("l.png"),
    );
    let out = finish(
        nf(&["bench", "loggp"])
            .args(QUICK)
            .arg("--json")
            .arg(&json)
            .arg("--csv")
            .arg(&csv)
            .arg("--plot")
            .arg(&png),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("G_mb_per_s") && stdout.contains('['),
        "{stdout}"
    );
    assert_eq!(check(&json)["transport"], "shm");
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 4);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}

#[test]
fn loggp_refuses_too_few_sizes_as_a_usage_error() {
    let out = finish(&mut nf(&["bench", "loggp", "--sizes", "8,64"]));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("at least 3 different sizes"));
}

/// Sizes where the two agree on a loaded 2-core machine. At 8 B the half round trip
/// is a few hundred ns and jumps between modes (0.17, 0.4, 0.5 µs) with how the two
/// ranks happen to be scheduled, in either benchmark.
const STABLE: [u64; 2] = [4096, 65536];

/// Alternating pairs of runs (loggp, then pingpong at once) whose ratios are pooled.
const PAIRS: usize = 3;

/// How far the pooled median ratio loggp / pingpong may stray from 1.
const TOLERANCE: f64 = 0.15;

#[test]
fn loggp_measures_t_as_pingpong_does() {
    let _alone = ranks_alone();
    // On a loaded 2-core VM a whole run lands in one scheduling mode (T at 4 KiB
    // 0.45 or 1.4 µs, load 8), and single sizes of a pair were 10-22 % apart in either
    // direction while the pair's other size agreed: a per-pair bound failed a fresh
    // clone's run. What tells a method that measures T as pingpong does from one that
    // does not is the bias, so the ratios of every pair and stable size are pooled and
    // their median must be within 15 % of 1 (the old loggp was 15-60 % off, always
    // the same way; the pooled median of a failing per-pair run was 0.98).
    let dir = tempfile::tempdir().unwrap();
    let (lj, pj) = (dir.path().join("l.json"), dir.path().join("p.json"));
    let mut seen = Vec::new();
    let mut ratios = Vec::new();
    let mut refusals = 0;
    while seen.len() < PAIRS {
        let out = finish(nf(&["bench", "loggp"]).args(QUICK).arg("--json").arg(&lj));
        if out.status.code() == Some(1) && text(&out.stderr).contains("no LogGP parameters") {
            // A refusal is an honest answer of a run in a bad scheduling mode, not a
            // disagreement; another pair is tried, a bounded number of times.
            refusals += 1;
            assert!(refusals <= PAIRS, "loggp refused {refusals} runs in a row");
            continue;
        }
        assert!(out.status.success(), "{}", text(&out.stderr));
        let out = finish(
            nf(&["bench", "pingpong", "--quiet", "--sizes", SIZES])
                .args(["--iters", "2000", "--warmup", "200", "--json"])
                .arg(&pj),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let loggp = report(&lj);
        let points = loggp["points"].as_array().unwrap();
        let pair: Vec<(u64, f64, f64)> = pingpong_medians(&pj)
            .into_iter()
            .filter(|(size, _)| STABLE.contains(size))
            .map(|(size, pp)| {
                let p = points.iter().find(|p| p["size"] == size).unwrap();
                (size, p["t_us"].as_f64().unwrap(), pp)
            })
            .collect();
        assert_eq!(pair.len(), STABLE.len(), "every run measures every size");
        ratios.extend(pair.iter().map(|&(_, t, pp)| t / pp));
        seen.push(pair);
    }
    ratios.sort_by(f64::total_cmp);
    let median = (ratios[(ratios.len() - 1) / 2] + ratios[ratios.len() / 2]) / 2.0;
    assert!(
        (median - 1.0).abs() <= TOLERANCE,
        "T loggp / pingpong: pooled median {median:.3}, beyond 1 ± {TOLERANCE}; \
         (size, loggp µs, pingpong µs) per pair: {seen:?}"
    );
}

#[test]
fn loggp_across_two_namespace_hosts_measures_the_network_route() {
    let _alone = ranks_alone();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("l.json");
    let mut args = vec!["loggp", "--json", json.to_str().unwrap()];
    args.extend_from_slice(QUICK);
    let out = on_two_hosts(1, &args);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let v = check(&json);
    assert!(
        ["tcp", "ofi"].contains(&v["transport"].as_str().unwrap()),
        "{}",
        v["transport"]
    );
}
