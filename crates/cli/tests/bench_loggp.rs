//! `nf bench loggp` as a user runs it, on local ranks and across two namespace hosts.
//! The parameters are timings and not asserted; the report's shape and the fit's
//! consistency (model + residual = measurement) are.

mod bench_support;

use bench_support::{finish, nf, on_two_hosts, report, text};

const QUICK: &[&str] = &["--sizes", "8,1024,65536", "--iters", "20", "--stream", "10"];

fn check(json: &std::path::Path) -> serde_json::Value {
    let v = report(json);
    let m = &v["model"];
    for key in [
        "l_us",
        "o_s_us",
        "o_r_us",
        "g_us",
        "big_g_us_per_byte",
        "gap_fit_rms_us",
    ] {
        assert!(m[key].as_f64().is_some_and(f64::is_finite), "{key}: {m}");
    }
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for p in points {
        let f = |k: &str| p[k].as_f64().unwrap();
        assert!(
            f("t_us") > 0.0 && f("o_s_us") >= 0.0 && f("o_r_us") >= 0.0 && f("g_us") >= 0.0,
            "{p}"
        );
        assert!(
            (f("t_model_us") + f("residual_us") - f("t_us")).abs() < 1e-6,
            "{p}"
        );
    }
    v
}

#[test]
fn loggp_on_local_ranks_writes_the_model_and_a_plot() {
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
    assert!(
        text(&out.stdout).contains("G_mb_per_s"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(check(&json)["transport"], "shm");
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 4);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
    let out = finish(&mut nf(&["bench", "loggp", "--sizes", "8"]));
    assert!(!out.status.success() && text(&out.stderr).contains("two different sizes"));
}

#[test]
fn loggp_across_two_namespace_hosts_measures_the_network_route() {
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
