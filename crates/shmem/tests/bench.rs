//! `nf bench shmem`: the benchmark program (`bench/shmem_bench.c`) compiled at run
//! time against this crate's freshly built libshmem, run on 2 PEs under `nf run`,
//! every operation reported (JSON, CSV, PNG); and a saved run that stopped before
//! `# done` reported as far as it went, but failed.

mod common;

use std::path::Path;
use std::process::Command;

use common::{lib_dir, nf, LIMIT};
use nf_testkit::output_within;

fn scratch(name: &str) -> std::path::PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-shmem-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("create the scratch folder");
    d
}

/// `(case, size)` of every row of a JSON report.
fn rows(json: &Path) -> Vec<(String, u64)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).expect("read the JSON")).unwrap();
    v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            assert!(r["median_us"].as_f64().unwrap() > 0.0, "{r}");
            (
                r["case"].as_str().unwrap_or("").to_owned(),
                r["size"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn every_operation_is_measured_checked_and_reported() {
    let dir = scratch("all");
    let (json, csv, png) = (dir.join("s.json"), dir.join("s.csv"), dir.join("s.png"));
    let out = output_within(
        Command::new(nf())
            .args(["bench", "shmem", "-n", "2", "--sizes", "8,65536"])
            .args([
                "--iters",
                "40",
                "--warmup",
                "4",
                "--batches",
                "4",
                "--quiet",
            ])
            .arg("--lib")
            .arg(lib_dir())
            .arg("--json")
            .arg(&json)
            .arg("--csv")
            .arg(&csv)
            .arg("--plot")
            .arg(&png),
        LIMIT,
    );
    let says = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{says}");
    let want: Vec<(String, u64)> = [
        ("put", &[8, 65536][..]),
        ("get", &[8, 65536]),
        ("fetch-add", &[8]),
        ("put-signal", &[8, 65536]),
        ("put-bw", &[8, 65536]),
        ("barrier", &[0]),
        ("broadcast", &[8, 65536]),
        ("reduce", &[8, 65536]),
    ]
    .iter()
    .flat_map(|(op, sizes)| sizes.iter().map(move |s| (format!("shmem-{op}"), *s)))
    .collect();
    assert_eq!(rows(&json), want, "{says}");
    let csv_lines = std::fs::read_to_string(&csv).unwrap().lines().count();
    assert_eq!(csv_lines, 1 + want.len());
    assert!(std::fs::metadata(&png)
        .map(|m| m.len() > 0)
        .unwrap_or(false));
    assert!(
        says.contains("== shmem-fetch-add (libshmem, 2 PEs)"),
        "{says}"
    );
}

#[test]
fn a_saved_run_cut_short_is_reported_as_far_as_it_went_and_fails() {
    let dir = scratch("cut");
    let saved = dir.join("run.txt");
    std::fs::write(
        &saved,
        "# shmem_bench pes 2 spec 1.4 vendor Open MPI\n\
         R put 8 20 0.1 0.2\n\
         R get 8 20 0.3 0.4\n",
    )
    .unwrap();
    let json = dir.join("cut.json");
    let out = output_within(
        Command::new(nf())
            .args(["bench", "shmem", "--ops", "get", "--quiet", "--parse"])
            .arg(&saved)
            .arg("--json")
            .arg(&json),
        LIMIT,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("before it printed `# done`"), "{err}");
    // --ops picks the saved run's get: one case, so a plain report.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["bench"], "shmem-get");
    assert_eq!(v["transport"], "Open-MPI");
    assert_eq!(v["params"]["complete"], false);
}

#[test]
fn a_killed_benchmark_takes_its_job_with_it() {
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    let dir = scratch("killed");
    // A stand-in program (`--program`): each PE says its pid and sleeps well past the
    // test's bound, so only the launcher stopping it ends it in time.
    let program = dir.join("pe.sh");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho $$ > {0}/pid.$NF_RANK.tmp && mv {0}/pid.$NF_RANK.tmp {0}/pid.$NF_RANK\nexec sleep 300\n",
            dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut bench = Command::new(nf())
        .args(["bench", "shmem", "-n", "2", "--quiet", "--timeout", "600"])
        .arg("--program")
        .arg(&program)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start nf bench shmem");
    let pids: Vec<u32> = (0..2)
        .map(|rank| {
            let file = dir.join(format!("pid.{rank}"));
            nf_testkit::wait_for(&format!("PE {rank} to start"), LIMIT, || {
                std::fs::read_to_string(&file)
                    .map_err(|e| e.to_string())
                    .and_then(|t| t.trim().parse().map_err(|e| format!("{e}")))
            })
        })
        .collect();
    bench.kill().expect("SIGKILL nf bench shmem");
    bench.wait().expect("reap nf bench shmem");
    for (rank, pid) in pids.into_iter().enumerate() {
        let gone = nf_testkit::exited_within(pid, Duration::from_secs(30));
        if !gone {
            // Leave nothing behind even when failing.
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
        assert!(
            gone,
            "PE {rank} (pid {pid}) outlived nf bench shmem killed by SIGKILL"
        );
    }
}
