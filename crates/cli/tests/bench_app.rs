//! `nf bench app` as a user runs it: the multiply on local ranks with blocks read
//! both ways (one-sided gets, and the node's `/mem` files through a real `nf serve`),
//! on two namespace hosts, and its errors. Every product is checked exactly by the
//! bench itself (a wrong one fails the run); figures are timings and not asserted.

mod bench_support;
mod serve_support;

use bench_support::{finish, nf, on_two_hosts, report, text};
use serve_support::Served;

/// `nf serve` with its `/mem` reading a fresh registry, and the env a job needs to
/// publish there.
fn node() -> (Served, tempfile::TempDir) {
    let registry = tempfile::tempdir().unwrap();
    let served = Served::start(&["--mem-registry", registry.path().to_str().unwrap()]);
    (served, registry)
}

fn shm_addr(s: &Served) -> String {
    format!("shm:{}.shm", s.socket.display())
}

#[test]
fn local_ranks_multiply_with_blocks_read_directly_and_through_files() {
    let (served, registry) = node();
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("a.json"), dir.path().join("a.csv"));
    // 97 rows over 3 ranks (33, 32, 32) in panels of 10: uneven blocks, partial panels.
    let out = finish(
        nf(&[
            "bench",
            "app",
            "-n",
            "3",
            "--n",
            "97",
            "--panel",
            "10",
            "--reps",
            "2",
            "--via",
            "direct,files",
            "--quiet",
            "--node",
        ])
        .arg(shm_addr(&served))
        .env("NF_MEM_REGISTRY", registry.path())
        .arg("--json")
        .arg(&json)
        .arg("--csv")
        .arg(&csv),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("vs direct"), "{stdout}");
    let v = report(&json);
    assert_eq!(v["bench"], "app");
    assert!(v["command"].as_str().unwrap().contains("bench app"));
    let rows = v["rows"].as_array().unwrap();
    let got: Vec<(u64, &str)> = rows
        .iter()
        .map(|r| (r["ranks"].as_u64().unwrap(), r["via"].as_str().unwrap()))
        .collect();
    assert_eq!(
        got,
        [
            (1, "direct"),
            (1, "files"),
            (2, "direct"),
            (2, "files"),
            (3, "direct"),
            (3, "files")
        ]
    );
    for r in rows {
        assert_eq!(r["checked"], true);
        let routes: Vec<&str> = r["routes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        match (r["ranks"].as_u64().unwrap(), r["via"].as_str().unwrap()) {
            (1, _) => assert!(routes.is_empty(), "{r}"),
            (_, "direct") => assert_eq!(routes, ["rma-direct"]),
            _ => assert_eq!(routes, ["9p-files"]),
        }
        assert_eq!(r["hosts"], 1);
        let (best, median) = (
            r["best_s"].as_f64().unwrap(),
            r["median_s"].as_f64().unwrap(),
        );
        assert!(best > 0.0 && best <= median, "{r}");
        let gflops = r["gflops"].as_f64().unwrap();
        assert!((gflops - 2.0 * 97f64.powi(3) / best / 1e9).abs() < 1e-9 * gflops.max(1.0));
        if r["ranks"] == 1 {
            assert_eq!(r["efficiency"], 1.0);
        }
    }
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(
        csv.lines().filter(|l| !l.starts_with('#')).count(),
        7,
        "{csv}"
    );
    // The job's segments left the registry with it.
    assert_eq!(std::fs::read_dir(registry.path()).unwrap().count(), 0);
}

#[test]
fn two_hosts_multiply_directly_and_refuse_files_across_hosts() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("a.json");
    let json_arg = json.to_str().unwrap();
    let out = on_two_hosts(
        1,
        &[
            "app", "--n", "64", "--panel", "16", "--reps", "1", "--quiet", "--json", json_arg,
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = report(&json);
    let rows: Vec<(u64, u64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["ranks"].as_u64().unwrap(), r["hosts"].as_u64().unwrap()))
        .collect();
    assert_eq!(rows, [(1, 1), (2, 2)]);
    // Between the hosts, a network route (native ofi or the service thread over tcp).
    let route = v["rows"][1]["routes"][0].as_str().unwrap();
    assert!(
        ["rma-ofi-native", "rma-service-tcp"].contains(&route),
        "{route}"
    );

    let out = on_two_hosts(
        1,
        &[
            "app", "--n", "64", "--reps", "1", "--via", "files", "--quiet",
        ],
    );
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("is on another host"), "{err}");
}

#[test]
fn a_node_server_that_dies_mid_run_is_an_error_not_a_hang() {
    let (mut served, registry) = node();
    // Far more repetitions than the test waits for: the run is still reading when
    // the server goes.
    let child = nf(&[
        "bench", "app", "-n", "2", "--teams", "2", "--n", "128", "--panel", "4", "--reps",
        "1000000", "--via", "files", "--quiet", "--node",
    ])
    .arg(shm_addr(&served))
    .env("NF_MEM_REGISTRY", registry.path())
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // The run is under way once both ranks are in the node's memory registry.
    nf_testkit::eventually("both ranks in the registry", bench_support::BOUND, || {
        std::fs::read_dir(registry.path()).map_or(0, Iterator::count) >= 2
    });
    served.child.kill().unwrap();
    let out = nf_testkit::finish_within(child, bench_support::BOUND, "nf bench app");
    assert!(!out.status.success());
    let err = text(&out.stderr);
    // The ranks enter the registry before they attach to the node, so on a busy host
    // the server may go while they connect: then the error names the attach.
    assert!(
        err.contains("9P connection closed")
            || err.contains("connecting to 9P server")
            || err.contains("reads through the node's 9P server; attaching to"),
        "{err}"
    );
}

#[test]
fn bad_arguments_are_refused_before_anything_runs() {
    for (args, says) in [
        (
            &["--teams", "3"][..],
            "--teams has 3 ranks but the job has 2",
        ),
        (&["--teams", "2,1"], "ascending"),
        (&["--n", "0"], "at least 1"),
        (&["--via", "ftp"], "direct or files"),
        (&["--via", "files", "--node", "nowhere"], "--node nowhere"),
        (&["--n", "10000000"], "GiB available"),
    ] {
        let out = finish(nf(&["bench", "app", "-n", "2"]).args(args));
        assert!(!out.status.success(), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("rank failed"),
            "refused before starting ranks: {err}"
        );
    }
    let out = finish(&mut nf(&[
        "bench",
        "app",
        "-n",
        "2",
        "--n",
        "32",
        "--via",
        "files",
        "--node",
        "shm:/nonexistent/nf.sock.shm",
        "--quiet",
    ]));
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("attaching to shm:/nonexistent/nf.sock.shm"));
}
