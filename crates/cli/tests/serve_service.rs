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

/// Attack: root starts `nf serve` from an interactive shell
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

/// `systemd-socket-activate` (systemd's tool for exactly this) listening on `socks` and
/// starting `nf serve -f ARGS…` with them on the first connection; killed when dropped.
struct Activated(std::process::Child);

impl Activated {
    fn start(socks: &[&Path], args: &[&str]) -> Activated {
        let mut cmd = Command::new("systemd-socket-activate");
        for s in socks {
            cmd.arg("-l").arg(s);
        }
        let child = cmd
            .arg("-E")
            .arg("NF_LOG=warn")
            .arg(env!("CARGO_BIN_EXE_nf"))
            .args(["serve", "-f"])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("systemd-socket-activate (Debian's systemd package) runs");
        let deadline = std::time::Instant::now() + DEADLINE;
        while !socks.iter().all(|s| s.exists()) {
            assert!(std::time::Instant::now() < deadline, "the sockets appear");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Activated(child)
    }
}

impl Drop for Activated {
    fn drop(&mut self) {
        signal(self.0.id(), "TERM");
        let deadline = std::time::Instant::now() + DEADLINE;
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Socket activation (nf-serve.socket): the server serves the unix and shm sockets the
/// manager made, started by the first client, and leaves the manager's files in place.
#[test]
fn the_server_serves_the_sockets_a_service_manager_passes() {
    let dir = tempfile::tempdir().unwrap();
    let unix = dir.path().join("nf.sock");
    let shm = dir.path().join("nf.sock.shm");
    let served = Activated::start(&[&unix, &shm], &["--unix", unix.to_str().unwrap()]);
    let ls = run_bounded(nf().args(["ls", &format!("unix:{}:/", unix.display())]));
    assert!(ls.status.success(), "{}", text(&ls.stderr));
    assert!(text(&ls.stdout).contains("status"), "{}", text(&ls.stdout));
    let cat = run_bounded(nf().args(["cat", &format!("shm:{}:/status", shm.display())]));
    assert!(cat.status.success(), "over shm: {}", text(&cat.stderr));
    drop(served);
    assert!(
        unix.exists() && shm.exists(),
        "the manager's socket files stay"
    );
}

#[test]
fn a_passed_socket_the_options_do_not_name_is_an_error_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let unix = dir.path().join("nf.sock");
    let stray = dir.path().join("other.sock");
    let mut served = Activated::start(&[&unix, &stray], &["--unix", unix.to_str().unwrap()]);
    // The first connection starts the server, which refuses to run.
    let _ = run_bounded(nf().args(["ls", &format!("unix:{}:/", unix.display())]));
    let mut err = String::new();
    use std::io::Read;
    let _ = served.0.stderr.take().unwrap().read_to_string(&mut err);
    assert!(
        err.contains("other.sock") && err.contains("--unix"),
        "the error names the stray socket and the options: {err}"
    );
}
