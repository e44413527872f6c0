//! External conformance: a third-party userspace client, the Go package
//! `github.com/hugelgupf/p9` (pinned in `tests/p9client/go.mod` / `go.sum`), drives
//! `PassthroughFs` over a unix socket: version (it asks for `9P2000.L.Google.7`, with an
//! ordinary tag), attach, walk (whole, partial, 17 names), getattr, open, read, create,
//! write (chunked to msize), mkdir, setattr, readdir (paged), renameat, symlink,
//! readlink, unlinkat, statfs. `tests/p9client/main.go` checks every answer; this test
//! then checks the results on the host.
//!
//! Go comes from the machine (or `scripts/setup.sh`, which also downloads the module);
//! without it this test fails and says so — it is never skipped.

mod server_support;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nf_ninep::server::{PassthroughFs, Server};
use server_support::wait_for;

/// Deadline for one run of the Go program (it takes well under a second).
const RUN_LIMIT: Duration = Duration::from_secs(120);

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

/// Runs `cmd` and kills it if it outlives [`RUN_LIMIT`].
fn run_bounded(cmd: &mut Command) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Go client");
    let deadline = Instant::now() + RUN_LIMIT;
    while child.try_wait().expect("wait for the Go client").is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child
        .wait_with_output()
        .expect("collect the Go client's output")
}

fn export() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    fs::write(dir.path().join("hello.txt"), "hello, world\n").unwrap();
    fs::write(dir.path().join("sub/leaf.txt"), "leaf\n").unwrap();
    fs::write(dir.path().join("to-remove.txt"), "doomed\n").unwrap();
    dir
}

#[test]
fn go_hugelgupf_p9_client_against_passthrough() {
    let build = tempfile::tempdir().unwrap();
    let client = build_go_client(build.path());
    for msize in [8192u32, 1 << 20] {
        let dir = export();
        let server = Server::new(PassthroughFs::new(dir.path()).unwrap());
        let sock = build.path().join(format!("9p-{msize}.sock"));
        let listener = server.listen_unix(&sock).unwrap();

        let out = run_bounded(
            Command::new(&client)
                .arg("-unix")
                .arg(&sock)
                .args(["-msize", &msize.to_string()]),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let report = format!(
            "msize {msize}: {}\n{stdout}\n--- stderr ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "the Go client failed\n{report}");
        assert!(
            stdout.lines().any(|l| l == "P9CLIENT done 17") && !stdout.contains("FAIL"),
            "not every check ran\n{report}"
        );

        // What the client did is on the host.
        let host = dir.path();
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

        // The client is gone: its connection and fids were released.
        assert!(
            wait_for(|| server.stats().clients == 0 && server.stats().fids == 0),
            "{:?}",
            server.stats()
        );
        listener.stop();
    }
}
