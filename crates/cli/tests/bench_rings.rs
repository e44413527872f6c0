//! `nf bench rings` as a user runs it: local ranks, and ranks on two namespace hosts.
//! Figures are not asserted (they are timings); shapes, ranges and names are.

mod bench_support;

use bench_support::{finish, nf, on_two_hosts, report, text};

const QUICK: &[&str] = &[
    "--iters",
    "30",
    "--bw-iters",
    "3",
    "--warmup",
    "3",
    "--bw-size",
    "100000",
];

fn matrix(v: &serde_json::Value, key: &str, n: usize) -> Vec<Vec<f64>> {
    let m: Vec<Vec<f64>> = serde_json::from_value(v[key].clone()).expect(key);
    assert_eq!(m.len(), n, "{key}");
    m
}

/// Pair matrices are symmetric, zero on the diagonal and positive elsewhere; rings
/// are permutations with a positive figure per rank.
fn check_shape(v: &serde_json::Value, n: usize) {
    assert_eq!(v["ranks"], n);
    for key in ["pair_latency_us", "pair_bandwidth_mb_s"] {
        let m = matrix(v, key, n);
        for (i, row) in m.iter().enumerate() {
            assert_eq!(row[i], 0.0, "{key} diagonal");
            for (j, &x) in row.iter().enumerate().filter(|(j, _)| *j != i) {
                assert!(x > 0.0 && x.is_finite(), "{key}[{i}][{j}] = {x}");
                assert_eq!(x, m[j][i], "{key} symmetric");
            }
        }
    }
    let p = &v["pingpong_latency_us"];
    assert!(p["min"].as_f64() <= p["avg"].as_f64() && p["avg"].as_f64() <= p["max"].as_f64());
    let order: Vec<usize> = serde_json::from_value(v["natural"]["order"].clone()).unwrap();
    assert_eq!(order, (0..n).collect::<Vec<_>>());
    let random = v["random"].as_array().expect("random rings");
    assert_eq!(random.len(), 2);
    for r in random.iter().chain([&v["natural"]]) {
        let mut o: Vec<usize> = serde_json::from_value(r["order"].clone()).unwrap();
        o.sort_unstable();
        assert_eq!(o, (0..n).collect::<Vec<_>>());
        for key in ["latency_us", "bandwidth_mb_s"] {
            let per: Vec<f64> = serde_json::from_value(r[key].clone()).unwrap();
            assert_eq!(per.len(), n);
            assert!(
                per.iter().all(|x| *x > 0.0 && x.is_finite()),
                "{key}: {per:?}"
            );
        }
    }
}

#[test]
fn local_ranks_measure_every_pair_and_ring_with_json_csv_and_a_heat_map() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, png) = (
        dir.path().join("r.json"),
        dir.path().join("r.csv"),
        dir.path().join("r.png"),
    );
    let out = finish(
        nf(&["bench", "rings", "-n", "3", "--orderings", "2", "--quiet"])
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
    for row in [
        "pingpong_latency_us",
        "natural_ring_bandwidth_mb_s",
        "random_ring_latency_us",
    ] {
        assert!(stdout.contains(row), "{stdout}");
    }
    let v = report(&json);
    check_shape(&v, 3);
    let t: Vec<Vec<String>> = serde_json::from_value(v["transport"].clone()).unwrap();
    assert_eq!(t[0], ["self", "shm", "shm"]);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("pair,")).count(),
        6,
        "{csv}"
    );
    assert_eq!(
        csv.lines().filter(|l| l.starts_with("random1,")).count(),
        3,
        "{csv}"
    );
    let png = std::fs::read(&png).unwrap();
    assert!(png.len() > 1000 && png.starts_with(b"\x89PNG"));
}

#[test]
fn bad_arguments_are_refused_before_any_rank_starts() {
    for (args, want) in [
        (&["--ranks", "1"][..], "at least 2"),
        (&["--iters", "0"][..], "at least 1"),
    ] {
        let out = finish(nf(&["bench", "rings"]).args(args));
        assert!(!out.status.success());
        assert!(text(&out.stderr).contains(want), "{}", text(&out.stderr));
    }
}

#[test]
fn ranks_on_two_namespace_hosts_say_which_transport_each_pair_used() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let json_arg = json.to_str().unwrap();
    let mut args = vec!["rings", "--orderings", "2", "--quiet", "--json", json_arg];
    args.extend_from_slice(QUICK);
    let out = on_two_hosts(2, &args);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let v = report(&json);
    check_shape(&v, 4);
    let hosts: Vec<String> = serde_json::from_value(v["hosts"].clone()).unwrap();
    assert_ne!(hosts[0], hosts[2], "{hosts:?}");
    assert_eq!(hosts[0], hosts[1], "{hosts:?}");
    let t: Vec<Vec<String>> = serde_json::from_value(v["transport"].clone()).unwrap();
    assert_eq!(t[0][1], "shm", "{t:?}");
    assert!(["tcp", "ofi"].contains(&t[0][2].as_str()), "{t:?}");
    assert_eq!(t[2][0], t[0][2], "{t:?}");
}
