//! `nf bench watch` as a user runs it: repetitions over time on local ranks and on
//! two namespace hosts, and a comparison with an earlier run. Timings are not
//! asserted; the shape of the report, the repetition times and the comparison's
//! output are, and that two runs of one build back to back are not called different.

mod bench_support;

use bench_support::{finish, nf, on_two_hosts, ranks_alone, report, text};

const QUICK: &[&str] = &[
    "--sizes",
    "8,4096",
    "--iters",
    "50",
    "--warmup",
    "5",
    "--interval",
    "0.2",
    "--duration",
    "0.5",
    "--quiet",
];

/// Three repetitions (at 0, 0.2 and 0.4 s) of both sizes, every sample kept.
fn check_shape(v: &serde_json::Value) {
    let reps = v["repetitions"].as_array().expect("repetitions");
    assert_eq!(reps.len(), 6, "{v}");
    let times: Vec<f64> = reps.iter().map(|r| r["t_s"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    // The third repetition is not started before it is due (no upper bound: timing).
    assert!(times[5] >= 0.4, "{times:?}");
    for r in reps {
        assert_eq!(r["samples_us"].as_array().unwrap().len(), 50);
        let t = &r["tail"];
        let (med, p99, max) = (
            t["median"].as_f64().unwrap(),
            t["p99"].as_f64().unwrap(),
            t["max"].as_f64().unwrap(),
        );
        assert!(med > 0.0 && med <= p99 && p99 <= max, "{t}");
    }
    let overall = v["overall"].as_array().unwrap();
    assert_eq!(overall.len(), 2);
    assert_eq!(overall[0]["tail"]["n"], 150);
}

#[test]
fn a_watch_keeps_every_repetition_and_compares_with_an_earlier_one() {
    let _alone = ranks_alone();
    let dir = tempfile::tempdir().unwrap();
    let (first, second, csv, png) = (
        dir.path().join("w1.json"),
        dir.path().join("w2.json"),
        dir.path().join("w2.csv"),
        dir.path().join("w2.png"),
    );
    let out = finish(
        nf(&["bench", "watch"])
            .args(QUICK)
            .arg("--json")
            .arg(&first),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    check_shape(&report(&first));
    let out = finish(
        nf(&["bench", "watch"])
            .args(QUICK)
            .arg("--compare-with")
            .arg(&first)
            .arg("--json")
            .arg(&second)
            .arg("--csv")
            .arg(&csv)
            .arg("--plot")
            .arg(&png),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = report(&second);
    check_shape(&v);
    let versus = v["comparison"].as_array().expect("a comparison");
    assert_eq!(versus.len(), 2);
    for c in versus {
        let f = |k: &str| c[k].as_f64().unwrap_or_else(|| panic!("{k} in {c}"));
        assert!(
            f("ratio_lo") <= f("ratio") && f("ratio") <= f("ratio_hi"),
            "{c}"
        );
        assert_eq!(
            (c["reps"].as_u64(), c["earlier_reps"].as_u64()),
            (Some(3), Some(3))
        );
        // The defaults: 90 % intervals, a 5 % margin; the verdict follows from them.
        assert_eq!((f("confidence"), f("margin")), (0.9, 0.05), "{c}");
        let within = f("ratio_lo") >= 1.0 / 1.05 && f("ratio_hi") <= 1.05;
        let outside = f("ratio_lo") > 1.05 || f("ratio_hi") < 1.0 / 1.05;
        let want = if within {
            "no-difference"
        } else if outside {
            "differs"
        } else {
            "inconclusive"
        };
        assert_eq!(c["verdict"], want, "{c}");
    }
    let stdout = text(&out.stdout);
    assert_eq!(stdout.matches("# against ").count(), 2, "{stdout}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 7);
    assert!(csv.starts_with("rep,") && csv.lines().next().unwrap().ends_with(",verdict"));
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}

/// Pairs tried before the test gives up. With busy loops beside it, a whole run can
/// land in another scheduling mode (8 B at 0.42 µs in one run and 1.05 µs in the next:
/// the machine changed between them, and "differs" is then the right answer), so one
/// pair of the same build may differ; the old test over every sample called every pair
/// "differs significantly".
const PAIRS: usize = 4;

/// Two identical runs back to back were once "differs significantly" (p = 3e-27)
/// because a test over every sample counts samples taken in a row as independent.
/// Thirty repetitions per run, each one observation: the comparison may say "no
/// difference" or "inconclusive", not "differs" (in one of PAIRS pairs). The margin is wide as this
/// runs on shared 2-core machines, where the levels of two runs a second apart were
/// seen 13–30 % apart (other jobs came and went): the machine changed, which the
/// default 5 % rightly reports; this checks the statistics, not the machine.
#[test]
fn two_runs_of_one_build_back_to_back_are_not_called_different() {
    let _alone = ranks_alone();
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("a.json"), dir.path().join("b.json"));
    let args = [
        "--sizes",
        "8,4096",
        "--iters",
        "200",
        "--warmup",
        "20",
        "--interval",
        "0.02",
        "--duration",
        "0.6",
        "--margin",
        "0.5",
        "--quiet",
    ];
    let mut seen = Vec::new();
    for _ in 0..PAIRS {
        let out = finish(nf(&["bench", "watch"]).args(args).arg("--json").arg(&first));
        assert!(out.status.success(), "{}", text(&out.stderr));
        let out = finish(
            nf(&["bench", "watch"])
                .args(args)
                .arg("--compare-with")
                .arg(&first)
                .arg("--json")
                .arg(&second),
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let lines: Vec<String> = stdout
            .lines()
            .filter(|l| l.starts_with("# against "))
            .map(str::to_owned)
            .collect();
        assert_eq!(lines.len(), 2, "{stdout}");
        for l in &lines {
            assert!(
                l.contains(" B no difference: ")
                    || l.contains(" B inconclusive: ")
                    || l.contains(" B differs: "),
                "{l}"
            );
        }
        let v = report(&second);
        let verdicts: Vec<String> = v["comparison"]
            .as_array()
            .expect("a comparison")
            .iter()
            .map(|c| {
                assert_eq!(
                    (c["reps"].as_u64(), c["earlier_reps"].as_u64()),
                    (Some(30), Some(30))
                );
                c["verdict"].as_str().unwrap().to_owned()
            })
            .collect();
        if verdicts.iter().all(|v| v != "differs") {
            // What the two runs gave, for the log of a passing run.
            println!("{}", lines.join("\n"));
            return;
        }
        seen.push(lines.join("\n"));
    }
    panic!(
        "every one of {PAIRS} pairs of the same build was called different:\n{}",
        seen.join("\n\n")
    );
}

#[test]
fn bad_arguments_and_a_bad_earlier_report_fail_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"not\": \"a watch\"}").unwrap();
    let bad = bad.to_str().unwrap();
    for (args, want) in [
        (&["--interval", "0"][..], "more than 0"),
        (&["--alpha", "2"][..], "probability"),
        (&["--margin", "0"][..], "--margin 0: a fraction"),
        (
            &["--bench", "rings"][..],
            "possible values: pingpong, rma-put",
        ),
        (
            &["--bench", "rma-acc", "--sizes", "12"][..],
            "multiple of 8",
        ),
        (
            &["--compare-with", bad][..],
            "not the JSON report of an nf bench watch",
        ),
    ] {
        let out = finish(nf(&["bench", "watch"]).args(args));
        assert!(!out.status.success(), "{args:?}");
        assert!(
            text(&out.stderr).contains(want),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn a_watch_across_two_namespace_hosts_names_the_network_transport() {
    let _alone = ranks_alone();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("w.json");
    let mut args = vec!["watch", "--json", json.to_str().unwrap()];
    args.extend_from_slice(QUICK);
    let out = on_two_hosts(1, &args);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let v = report(&json);
    check_shape(&v);
    assert!(
        ["tcp", "ofi"].contains(&v["transport"].as_str().unwrap()),
        "{}",
        v["transport"]
    );
}

#[test]
fn a_watch_repeats_one_sided_operations_locally_and_across_hosts() {
    let _alone = ranks_alone();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("g.json");
    let out = finish(
        nf(&["bench", "watch", "--bench", "rma-get", "--json"])
            .arg(&json)
            .args(QUICK),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = report(&json);
    check_shape(&v);
    assert_eq!(v["params"]["bench"], "rma-get");
    assert_eq!(v["transport"], "rma-direct");

    let json = dir.path().join("p.json");
    let mut args = vec![
        "watch",
        "--bench",
        "rma-put",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(QUICK);
    let out = on_two_hosts(1, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = report(&json);
    check_shape(&v);
    assert_eq!(v["params"]["bench"], "rma-put");
    assert!(
        v["transport"].as_str().unwrap().starts_with("rma-") && v["transport"] != "rma-direct",
        "{}",
        v["transport"]
    );
}
