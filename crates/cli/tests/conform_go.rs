//! External conformance: a third-party userspace client, the Go package
//! `github.com/hugelgupf/p9` (pinned in `tests/p9client/go.mod` / `go.sum`), drives
//! `nf serve -f --unix SOCK --export DIR`, attaching with `aname=/fs`: version (it asks
//! for `9P2000.L.Google.7`, with an ordinary tag), attach, walk (whole, partial, 17
//! names), getattr, open, read, create, write (chunked to msize), mkdir, setattr,
//! readdir (paged), renameat, symlink, readlink, unlinkat, statfs.
//! `tests/p9client/main.go` checks every answer; this test then checks the results on
//! the host, and that the client's connection was released once it left (the server
//! admits one client at a time, so a later `nf ls` gets in only then).
//!
//! Go comes from the machine (or `scripts/setup.sh`, which also downloads the module);
//! without it this test fails and says so — it is never skipped.

mod serve_support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serve_support::{run_bounded, text, Served};

fn p9client_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/p9client"))
}

/// Builds tests/p9client into `out` with the versions pinned in go.sum.
fn build_go_client(out: &Path) -> PathBuf {
    let bin = out.join("p9client");
    let built = Command::new("go")
        .args(["build", "-mod=readonly", "-buildvcs=false", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(p9client_dir())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run `go` ({e}): install Go (scripts/setup.sh installs golang-go)")
        });
    assert!(
        built.status.success(),
        "go build of tests/p9client failed (is the module downloaded? scripts/setup.sh does it):\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    bin
}

/// The files `main.go` expects in the export.
fn fill(export: &Path) {
    fs::create_dir(export.join("sub")).unwrap();
    fs::write(export.join("hello.txt"), "hello, world\n").unwrap();
    fs::write(export.join("sub/leaf.txt"), "leaf\n").unwrap();
    fs::write(export.join("to-remove.txt"), "doomed\n").unwrap();
}

#[test]
fn go_hugelgupf_p9_client_against_nf_serve() {
    let build = tempfile::tempdir().unwrap();
    let client = build_go_client(build.path());
    for msize in [8192u32, 1 << 20] {
        let s = Served::start(&["--max-clients", "1"]);
        fill(&s.export);

        let out = run_bounded(Command::new(&client).arg("-unix").arg(&s.socket).args([
            "-msize",
            &msize.to_string(),
            "-aname",
            "/fs",
        ]));
        let stdout = text(&out.stdout);
        let report = format!(
            "msize {msize}: {}\n{stdout}\n--- stderr ---\n{}",
            out.status,
            text(&out.stderr)
        );
        assert!(out.status.success(), "the Go client failed\n{report}");
        assert!(
            stdout.lines().any(|l| l == "P9CLIENT done 17") && !stdout.contains("FAIL"),
            "not every check ran\n{report}"
        );

        // What the client did is on the host.
        let host = &s.export;
        assert_eq!(
            fs::read_to_string(host.join("go-wrote.txt")).unwrap(),
            "written by go\n"
        );
        assert!(!host.join("to-remove.txt").exists());
        let big = fs::metadata(host.join("gdir/big.bin")).unwrap();
        assert_eq!(big.len(), 1000, "truncated by Tsetattr");
        assert_eq!(big.permissions().mode() & 0o777, 0o604);
        assert_eq!(
            fs::read_link(host.join("gdir/link")).unwrap(),
            Path::new("../hello.txt")
        );
        assert_eq!(fs::read_dir(host.join("gdir")).unwrap().count(), 152);
        assert_eq!(fs::read(host.join("hello.txt")).unwrap(), b"hello, world\n");

        // The client is gone: its connection (and with it every fid) was released, so
        // the one client slot admits `nf ls` (within a deadline against hangs).
        let deadline = Instant::now() + serve_support::DEADLINE;
        loop {
            let ls = s.run(&["ls", &s.at("/fs")]);
            if ls.status.success() {
                assert!(text(&ls.stdout).contains("go-wrote.txt"));
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the Go client's connection was never released: {}",
                text(&ls.stderr)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
