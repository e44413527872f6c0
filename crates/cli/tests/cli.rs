//! The `nf` binary as a user runs it: real processes, real shared memory.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn nf(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nf"))
        .args(args)
        .output()
        .expect("run nf")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn zero_ranks_and_missing_programs_are_refused_clearly() {
    let out = nf(&["run", "-n", "0", "--", "true"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("at least one rank"),
        "{}",
        text(&out.stderr)
    );
    let out = nf(&["run", "-n", "2", "--", "/no/such/program"]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("/no/such/program"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn tagged_output_names_each_rank() {
    let out = nf(&[
        "run",
        "-n",
        "3",
        "--tag-output",
        "--",
        "sh",
        "-c",
        "echo hello from $NF_RANK of $NF_SIZE",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for r in 0..3 {
        assert!(
            stdout.contains(&format!("[{r}] hello from {r} of 3")),
            "{stdout}"
        );
    }
}

#[test]
fn a_killed_rank_fails_the_job_naming_it() {
    let t = Instant::now();
    let script = r#"if [ "$NF_RANK" = 1 ]; then kill -9 $$; fi; sleep 30"#;
    let out = nf(&["run", "-n", "3", "--", "sh", "-c", script]);
    assert_eq!(out.status.code(), Some(137), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("rank 1") && err.contains("SIGKILL"), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(25),
        "the sleepers were not stopped"
    );
}

#[test]
fn the_demo_runs_to_completion() {
    let out = nf(&["demo", "-n", "3", "--laps", "20"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("3 ranks said hello"), "{stdout}");
    assert!(stdout.contains("60 hops"), "{stdout}");
    assert!(stdout.contains("sum of ranks = 3"), "{stdout}");
    assert!(stdout.contains("ping-pong rank 0 <-> rank 1"), "{stdout}");
}

#[test]
fn pingpong_writes_json_csv_and_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, png) = (
        dir.path().join("pp.json"),
        dir.path().join("pp.csv"),
        dir.path().join("pp.png"),
    );
    let out = nf(&[
        "bench",
        "pingpong",
        "--sizes",
        "8,100000,2000000",
        "--iters",
        "40",
        "--warmup",
        "4",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sizes: Vec<u64> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["size"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [8, 100_000, 2_000_000]);
    for r in report["results"].as_array().unwrap() {
        let (min, med, max) = (
            r["min_us"].as_f64().unwrap(),
            r["median_us"].as_f64().unwrap(),
            r["max_us"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= med && med <= max, "{r}");
    }
    assert!(report["poll_empty_ns"].as_f64().unwrap() > 0.0);
    assert_eq!(
        std::fs::read_to_string(&csv).unwrap().lines().count(),
        4,
        "header + 3 sizes"
    );
    assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
}

#[test]
fn bench_9p_compares_with_diod_and_writes_json_csv_and_plots() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, plot) = (
        dir.path().join("9p.json"),
        dir.path().join("9p.csv"),
        dir.path().join("9p"),
    );
    let out = nf(&[
        "bench",
        "9p",
        "--msizes",
        "8192,1048576",
        "--alternations",
        "2",
        "--small-iters",
        "20",
        "--small-warmup",
        "2",
        "--stream-mib",
        "1",
        "--depth",
        "4",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ratios ours / theirs"), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["bench"], "9p");
    assert_eq!(report["params"]["depth"], 4, "{report}");
    // 2 servers x 2 msizes x 3 tests, each from 2 rounds.
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 12, "{report}");
    for c in cases {
        assert!(c["rate"].as_f64().unwrap() > 0.0, "{c}");
        let iters = c["result"]["iters"].as_u64().unwrap();
        assert!(iters >= 2 * 20, "{c}");
    }
    // At 8 KiB both agree and every test has a ratio.
    let ratios = report["ratios"].as_array().unwrap();
    let at_8k: Vec<_> = ratios.iter().filter(|r| r["msize"] == 8192).collect();
    assert_eq!(at_8k.len(), 3, "{report}");
    assert!(at_8k.iter().all(|r| r["ratio"].as_f64().unwrap() > 0.0));
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 13);
    for test in ["read", "write"] {
        let png = dir.path().join(format!("9p-{test}.png"));
        assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    }
}

/// `nf serve -f` on a unix socket in `dir`, exporting `dir/export`, until killed.
fn serve_export(dir: &std::path::Path) -> (std::process::Child, std::path::PathBuf) {
    let socket = dir.join("s.sock");
    std::fs::create_dir_all(dir.join("export")).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_nf"))
        .args(["serve", "-f", "--unix"])
        .arg(&socket)
        .arg("--export")
        .arg(dir.join("export"))
        .arg("--mem-registry")
        .arg(dir.join("mem"))
        .env("NF_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("start nf serve");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "nf serve did not listen");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, socket)
}

#[test]
fn bench_9p_measures_servers_at_addresses_under_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, socket) = serve_export(dir.path());
    let addr = format!("unix:{}", socket.display());
    let json = dir.path().join("9p.json");
    let export = dir.path().join("export");
    let out = nf(&[
        "bench",
        "9p",
        "--dir",
        export.to_str().unwrap(),
        "--ours-addr",
        &addr,
        "--theirs-addr",
        &addr,
        "--names",
        "gateway,direct",
        "--msizes",
        "8192",
        "--alternations",
        "2",
        "--small-iters",
        "10",
        "--stream-mib",
        "1",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(&format!("# gateway: {addr}")), "{stdout}");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["servers"][1]["name"], "direct", "{report}");
    assert_eq!(report["servers"][0]["aname"], "/fs", "{report}");
    let ratios = report["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 3, "{report}");
    assert!(ratios.iter().all(|r| r["ratio"].as_f64().unwrap() > 0.0));
}

#[test]
fn bench_9p_load_runs_many_clients_per_count_and_compares() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, socket) = serve_export(dir.path());
    let addr = format!("unix:{}", socket.display());
    let (json, csv) = (dir.path().join("load.json"), dir.path().join("load.csv"));
    let export = dir.path().join("export");
    let out = nf(&[
        "bench",
        "9p",
        "--dir",
        export.to_str().unwrap(),
        "--ours-addr",
        &addr,
        "--theirs-addr",
        &addr,
        "--names",
        "one,other",
        "--clients",
        "1,3",
        "--seconds",
        "0.2",
        "--alternations",
        "2",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    let _ = server.kill();
    let _ = server.wait();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["bench"], "9p-load");
    // 2 sides x 2 counts x 2 rounds.
    let rounds = report["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 8, "{report}");
    for r in rounds {
        assert!(r["requests"].as_u64().unwrap() > 0, "{r}");
        assert!(
            r["p99_us"].as_f64().unwrap() >= r["p50_us"].as_f64().unwrap(),
            "{r}"
        );
    }
    let ratios = report["ratios"].as_array().unwrap();
    assert_eq!(ratios.len(), 2, "{report}");
    assert_eq!(ratios[1]["clients"], 3);
    assert_eq!(std::fs::read_to_string(&csv).unwrap().lines().count(), 9);
    let out = nf(&["bench", "9p", "--clients", "0", "--no-diod"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn bench_9p_at_a_tls_address_asks_for_a_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let out = nf(&[
        "bench",
        "9p",
        "--dir",
        dir.path().to_str().unwrap(),
        "--ours-addr",
        "tls:127.0.0.1:9",
        "--no-diod",
        "--msizes",
        "8192",
        "--quiet",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("--cert FILE --key FILE --ca FILE"), "{err}");
    let out = nf(&["bench", "9p", "--names", "a,a", "--no-diod"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn bench_9p_without_diod_says_how_to_get_it() {
    let out = nf(&[
        "bench",
        "9p",
        "--msizes",
        "8192",
        "--diod",
        "/nonexistent/diod",
        "--small-iters",
        "1",
        "--stream-mib",
        "1",
        "--alternations",
        "1",
    ]);
    // A missing program is a runtime error (1), not a usage error (2).
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("/nonexistent/diod") && err.contains("--no-diod"),
        "{err}"
    );
}

#[test]
fn rma_bench_reports_every_operation_and_layout_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let (json, csv, png) = (
        dir.path().join("rma.json"),
        dir.path().join("rma.csv"),
        dir.path().join("rma.png"),
    );
    let args = [
        "bench",
        "rma",
        "--sizes",
        "8,65536",
        "--iters",
        "30",
        "--warmup",
        "3",
        "--json",
        json.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--plot",
        png.to_str().unwrap(),
    ];
    for (direct, ofi, path) in [
        ("1", "auto", "rma-direct"),
        ("0", "off", "rma-service-tcp"),
        ("0", "on", "rma-ofi-native"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_nf"))
            .args(args)
            .env("NF_RMA_DIRECT", direct)
            .env("NF_RMA_OFI", ofi)
            .output()
            .expect("run nf");
        assert!(out.status.success(), "{}", text(&out.stderr));
        let reports: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        // One object, as every bench's JSON; each row names its (op, layout) case.
        assert_eq!(reports["bench"], "rma", "{reports}");
        assert_eq!(reports["transport"], path, "{reports}");
        let rows: Vec<(&str, u64)> = reports["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| (r["case"].as_str().unwrap(), r["size"].as_u64().unwrap()))
            .collect();
        let want: Vec<(&str, u64)> = [
            "rma-put-contig",
            "rma-put-strided",
            "rma-put-fence-contig",
            "rma-put-fence-strided",
            "rma-get-contig",
            "rma-get-strided",
            "rma-acc-contig",
            "rma-acc-strided",
        ]
        .into_iter()
        .flat_map(|c| [(c, 8), (c, 65536)])
        .collect();
        assert_eq!(rows, want);
        let lines = std::fs::read_to_string(&csv).unwrap().lines().count();
        assert_eq!(lines, 1 + 8 * 2, "header + 8 reports × 2 sizes");
        assert_eq!(&std::fs::read(&png).unwrap()[..8], b"\x89PNG\r\n\x1a\n");
    }
}

#[test]
fn run_takes_the_program_with_or_without_double_dash_as_mpirun_does() {
    // Without `--`, the program's own options (-c) are the program's, not nf run's.
    let script = "echo rank $NF_RANK of $NF_SIZE";
    for args in [
        &["run", "-n", "2", "--tag-output", "sh", "-c", script][..],
        &["run", "-n", "2", "--tag-output", "--", "sh", "-c", script][..],
    ] {
        let out = nf(args);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "nf {args:?}: {}", text(&out.stderr));
        let mut lines: Vec<&str> = stdout.lines().collect();
        lines.sort_unstable();
        assert_eq!(lines, ["[0] rank 0 of 2", "[1] rank 1 of 2"], "nf {args:?}");
    }
    // nf run's own options still go to nf run when they come first, and an unknown one
    // is refused rather than taken for the program.
    let out = nf(&["run", "-n", "1", "--bogus", "true"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
