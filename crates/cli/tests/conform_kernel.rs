//! External conformance: the Linux kernel's 9P client (v9fs, booted under QEMU by
//! `tests/kernel9p/run.sh`) mounts `nf serve -f --unix {sock} --export {dir}` and runs
//! the harness's checks — ls / cat / stat / echo / cp / dd / mkdir / mv / ln -s / rm /
//! truncate / chmod / mkfifo on `/fs`, and a blocked read of `/log` interrupted by
//! SIGINT, which must be flushed within the harness's default `--flush-wait` (10 s).
//!
//! The kernel attaches at the node tree's root (no aname) and works in `/fs`
//! (`--subdir fs`): every path it uses crosses the mount table, `..` at `/fs` included,
//! and the blocked read is the node tree's own stream (`--block log`: after the
//! history, a `/log` read waits for the next line), not a host file behind a lease.
//! (The Go client test attaches with `aname=/fs` instead, so both ways in are used.)
//!
//! Prerequisites (QEMU, a Debian kernel, busybox-static) are installed by
//! `scripts/setup.sh` (which runs `tests/kernel9p/setup.sh`); without them this test
//! fails and says so — it is never skipped.

use std::path::PathBuf;
use std::process::Command;

/// The harness's own hard timeout (it kills QEMU and the server when it expires).
const HARNESS_TIMEOUT_S: u32 = 300;

/// `s` quoted for `bash -c`.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[test]
fn linux_kernel_client_passes_every_check_through_nf_serve() {
    let repo = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let harness = repo.join("tests/kernel9p/run.sh");
    let server = format!(
        "{} serve -f --unix {{sock}} --export {{dir}}",
        shell_quote(env!("CARGO_BIN_EXE_nf"))
    );
    let out = Command::new("bash")
        .arg(&harness)
        .args(["--server", &server])
        .args(["--subdir", "fs", "--block", "log"])
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
        _ => panic!("the Linux kernel client failed against nf serve\n{report}"),
    }
    assert!(
        stdout.contains("kernel9p: PASS") && stdout.contains("4 host checks ok"),
        "exit 0 without a PASS line and the host checks\n{report}"
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
