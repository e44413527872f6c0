//! External conformance: the Linux kernel's 9P client (v9fs, booted under QEMU by
//! `tests/kernel9p/run.sh`) mounts `PassthroughFs` served by `nf-9p-testserver` and runs
//! the harness's checks — ls / cat / stat / echo / cp / dd / mkdir / mv / ln -s / rm /
//! truncate / chmod / mkfifo, and a blocked open interrupted by SIGINT, which must be
//! flushed within the harness's default `--flush-wait` (10 s).
//!
//! Prerequisites (QEMU, a Debian kernel, busybox-static) are installed by
//! `scripts/setup.sh` (which runs `tests/kernel9p/setup.sh`); without them this test
//! fails and says so — it is never skipped.

use std::path::PathBuf;
use std::process::Command;

/// The harness's own hard timeout (it kills QEMU and the server when it expires).
const HARNESS_TIMEOUT_S: u32 = 300;

#[test]
fn linux_kernel_client_passes_every_check() {
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let harness = repo.join("tests/kernel9p/run.sh");
    let server = format!(
        "{} --export {{dir}} --unix {{sock}}",
        env!("CARGO_BIN_EXE_nf-9p-testserver")
    );
    let out = Command::new("bash")
        .arg(&harness)
        .args(["--server", &server])
        .args(["--timeout", &HARNESS_TIMEOUT_S.to_string()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", harness.display()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report = format!(
        "exit status {}\n{stdout}\n--- stderr ---\n{stderr}",
        out.status
    );
    match out.status.code() {
        Some(0) => {}
        Some(2) => panic!(
            "the kernel 9P harness lacks a prerequisite: run scripts/setup.sh \
             (it installs QEMU, a Debian kernel and busybox-static)\n{report}"
        ),
        _ => panic!("the Linux kernel client failed against nf-9p-testserver\n{report}"),
    }
    assert!(
        stdout.contains("kernel9p: PASS"),
        "exit 0 without a PASS line\n{report}"
    );
    for check in [
        "flush_blocked_read",
        "fifo",
        "readdir_many",
        "after_flush",
        "umount",
    ] {
        assert!(
            stdout.contains(&format!("KTEST ok {check}")),
            "no 'KTEST ok {check}'\n{report}"
        );
    }
}
