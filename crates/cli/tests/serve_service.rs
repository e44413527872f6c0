//! `nf serve` as a system service: what it takes from whoever started it (a terminal,
//! open descriptors), its options file, and the systemd units `scripts/install.sh
//! --service` installs.

mod serve_support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serve_support::{nf, run_bounded, signal, text, DEADLINE};

/// Fields 6 and 7 of `/proc/PID/stat`: the session id and the controlling terminal.
fn session_and_tty(pid: u32) -> (u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name may hold spaces: fields start after its closing parenthesis.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    (f[3].parse().unwrap(), f[4].parse().unwrap())
}

/// The pid in a detached server's `ready` line.
fn ready_pid(stdout: &str) -> u32 {
    stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("nf serve: ready (pid "))
        .and_then(|l| l.strip_suffix(')'))
        .expect("a ready line with a pid")
        .parse()
        .unwrap()
}

/// Stops a detached server when dropped.
struct Stop(u32);

impl Drop for Stop {
    fn drop(&mut self) {
        signal(self.0, "TERM");
        if !nf_testkit::exited_within(self.0, DEADLINE) {
            signal(self.0, "KILL");
        }
    }
}

/// Attack (issue 28, items 2 and 3): root starts `nf serve` from an interactive shell
/// holding a secret on descriptor 9. The server must leave the shell's session (no
/// controlling terminal: nothing it starts can push input into root's terminal with
/// TIOCSTI) and keep descriptor 9 from everything it starts.
#[test]
fn a_detached_server_leaves_the_terminal_and_passes_no_descriptor_on() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nf.sock");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "root's secret\n").unwrap();
    // script(1) runs the command on a new pseudo-terminal as its controlling terminal,
    // as an interactive login would.
    let line = format!(
        "NF_LOG=warn {} serve --unix {} 9<{}",
        env!("CARGO_BIN_EXE_nf"),
        socket.display(),
        secret.display()
    );
    let out = run_bounded(Command::new("script").args(["-qec", &line, "/dev/null"]));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pid = ready_pid(&text(&out.stdout));
    let _stop = Stop(pid);
    let (sid, tty) = session_and_tty(pid);
    assert_eq!(sid, pid, "the server leads a session of its own");
    assert_eq!(tty, 0, "the server has no controlling terminal");
    // Descriptor 9 stays the server's own, but no exec passes it on.
    let fdinfo = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/9"));
    if let Ok(info) = fdinfo {
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .map(|f| u32::from_str_radix(f.trim(), 8).unwrap())
            .unwrap();
        assert_ne!(
            flags & 0o2000000,
            0,
            "inherited fd 9 is close-on-exec: {flags:o}"
        );
    }
}

/// Options come from `--config FILE`; the command line wins over the file.
#[test]
fn options_come_from_the_file_and_the_command_line_wins() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export");
    std::fs::create_dir(&export).unwrap();
    std::fs::write(export.join("from-file"), "x").unwrap();
    let from_file = dir.path().join("file.sock");
    let from_cli = dir.path().join("cli.sock");
    let conf = dir.path().join("serve.toml");
    std::fs::write(
        &conf,
        format!(
            "unix = \"{}\"\nexport = \"{}\"\nlabel = [\"rack3\"]\nmax-clients = 64\n",
            from_file.display(),
            export.display()
        ),
    )
    .unwrap();
    let out = run_bounded(
        nf().arg("serve")
            .arg("--config")
            .arg(&conf)
            .arg("--unix")
            .arg(&from_cli)
            .env("NF_LOG", "warn"),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let _stop = Stop(ready_pid(&text(&out.stdout)));
    assert!(
        from_cli.exists() && !from_file.exists(),
        "--unix on the command line wins"
    );
    let at = |p: &str| format!("unix:{}:{p}", from_cli.display());
    let ls = run_bounded(nf().args(["ls", &at("/fs")]));
    assert_eq!(text(&ls.stdout).trim(), "from-file", "{}", text(&ls.stderr));
    let status = run_bounded(nf().args(["cat", &at("/status")]));
    assert!(
        text(&status.stdout).contains("labels rack3"),
        "{}",
        text(&status.stdout)
    );
}

#[test]
fn a_bad_options_file_is_a_usage_error_naming_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("serve.toml");
    for (body, says) in [
        ("no-such-option = 1\n", "no-such-option"),
        ("max-clients = \"many\"\n", "many"),
        ("[tls]\ncert = \"x\"\n", "tls"),
    ] {
        std::fs::write(&conf, body).unwrap();
        let out = run_bounded(nf().arg("serve").arg("-f").arg("--config").arg(&conf));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{body:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(
            err.contains("serve.toml") && err.contains(says),
            "{body:?}: {err}"
        );
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `scripts/install.sh --service --root DIR` stages the binary, the units and the
/// options file as a package would, and the units are what systemd accepts.
#[test]
fn the_service_installs_and_its_units_verify() {
    let root = tempfile::tempdir().unwrap();
    let out = run_bounded(
        Command::new(repo().join("scripts/install.sh"))
            .args(["--service", "--nf"])
            .arg(env!("CARGO_BIN_EXE_nf"))
            .arg("--root")
            .arg(root.path())
            .args(["--no-lib"]),
    );
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let r = root.path();
    for f in [
        "usr/local/bin/nf",
        "etc/systemd/system/nf-serve.service",
        "etc/systemd/system/nf-serve.socket",
        "etc/ninefold/serve.toml",
    ] {
        assert!(r.join(f).is_file(), "{f} installed");
    }
    // The installed options file is one nf serve takes.
    let check = run_bounded(
        nf().args(["serve", "--check-config", "--config"])
            .arg(r.join("etc/ninefold/serve.toml")),
    );
    assert!(check.status.success(), "{}", text(&check.stderr));
    let unit = std::fs::read_to_string(r.join("etc/systemd/system/nf-serve.service")).unwrap();
    for hardening in [
        "CapabilityBoundingSet=",
        "ProtectSystem=",
        "PrivateTmp=yes",
        "NoNewPrivileges=yes",
        "Delegate=yes",
    ] {
        assert!(unit.contains(hardening), "{hardening} in the unit");
    }
    // systemd-analyze checks the units' syntax and options where systemd is installed.
    if Path::new("/usr/bin/systemd-analyze").exists() {
        let verify = run_bounded(
            Command::new("systemd-analyze")
                .args(["verify", "--man=no"])
                .arg(r.join("etc/systemd/system/nf-serve.socket"))
                .arg(r.join("etc/systemd/system/nf-serve.service"))
                .env("SYSTEMD_LOG_LEVEL", "warning"),
        );
        let said = text(&verify.stderr);
        // verify also complains that ExecStart's binary is not installed system-wide
        // (it is staged under the root); any other complaint fails the test.
        let complaints: Vec<&str> = said
            .lines()
            .filter(|l| !l.contains("/usr/local/bin/nf") && !l.trim().is_empty())
            .collect();
        assert!(complaints.is_empty(), "systemd-analyze verify: {said}");
    }
}
