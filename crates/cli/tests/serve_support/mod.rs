//! A real `nf serve` process on a unix socket in a temporary directory.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Deadline for a server to come up, or a command to finish (against hangs only).
pub const DEADLINE: Duration = Duration::from_secs(30);

pub fn nf() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nf"))
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `nf serve -f` running until dropped (then SIGTERM, then SIGKILL).
pub struct Served {
    pub child: Child,
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub export: PathBuf,
    /// What the server said it listens on (`tcp:127.0.0.1:PORT`, `unix:PATH` …).
    pub listening: Vec<String>,
}

impl Served {
    /// Starts `nf serve -f --unix DIR/s.sock --export DIR/export EXTRA…` and waits
    /// until it says it is ready.
    pub fn start(extra: &[&str]) -> Served {
        Served::start_logging("warn", extra)
    }

    /// As [`Served::start`], logging at `level` (`NF_LOG`; the server's default is
    /// `info`).
    pub fn start_logging(level: &str, extra: &[&str]) -> Served {
        let dir = tempfile::tempdir().unwrap();
        let export = dir.path().join("export");
        std::fs::create_dir(&export).unwrap();
        std::fs::write(export.join("hello.txt"), b"hello\n").unwrap();
        let socket = dir.path().join("s.sock");
        let mut child = nf()
            .args(["serve", "-f", "--unix"])
            .arg(&socket)
            .arg("--export")
            .arg(&export)
            .args(extra)
            .env("NF_LOG", level)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start nf serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut listening = Vec::new();
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = line.strip_prefix("nf serve: listening on ") {
                    listening.push(addr.to_string());
                }
                if line.starts_with("nf serve: ready") {
                    let _ = tx.send(std::mem::take(&mut listening));
                }
            }
        });
        let Ok(listening) = rx.recv_timeout(DEADLINE) else {
            let _ = child.kill();
            panic!("nf serve did not become ready");
        };
        Served {
            child,
            dir,
            socket,
            export,
            listening,
        }
    }

    /// `unix:SOCKET`, the ADDR of this server.
    pub fn addr(&self) -> String {
        format!("unix:{}", self.socket.display())
    }

    /// The loopback tcp address the server listens on (started with `--tcp`).
    pub fn tcp_addr(&self) -> std::net::SocketAddr {
        self.listening
            .iter()
            .find_map(|a| a.strip_prefix("tcp:")?.parse().ok())
            .expect("the server listens on tcp (start it with --tcp 127.0.0.1:0)")
    }

    /// `unix:SOCKET:PATH`.
    pub fn at(&self, path: &str) -> String {
        format!("{}:{path}", self.addr())
    }

    /// Runs `nf ARGS…` to completion (bounded by [`DEADLINE`]).
    pub fn run(&self, args: &[&str]) -> Output {
        run_bounded(nf().args(args))
    }

    /// Sends SIGTERM and waits for the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        signal(self.child.id(), "TERM");
        wait_bounded(&mut self.child)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            signal(self.child.id(), "TERM");
            if wait_for_exit(&mut self.child).is_none() {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }
    }
}

/// Everything `/log` of `s` holds now, read as root without waiting for more.
pub fn log_text(s: &Served) -> String {
    use nf_ninep::errno::EAGAIN;
    use nf_ninep::LOpenFlags;
    let root = nf_ninep_client::Client::connect_unix(&s.socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    let f = root
        .open("/log", LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
        .unwrap();
    let mut text = Vec::new();
    loop {
        match f.read_chunk(0, 64 << 10) {
            Ok(chunk) if chunk.is_empty() => break,
            Ok(chunk) => text.extend(chunk),
            Err(e) if e.errno() == Some(EAGAIN) => break,
            Err(e) => panic!("reading /log: {e}"),
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

pub fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .status();
}

fn wait_for_exit(child: &mut Child) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + DEADLINE;
    while std::time::Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

pub fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    match wait_for_exit(child) {
        Some(s) => s,
        None => {
            let _ = child.kill();
            panic!("process did not exit within {DEADLINE:?}");
        }
    }
}

/// Runs a command with piped output, killing it after [`DEADLINE`].
pub fn run_bounded(cmd: &mut Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    output_bounded(child)
}

/// Waits for a spawned child's exit and output, killing it after [`DEADLINE`].
pub fn output_bounded(child: Child) -> Output {
    let _watchdog = Watchdog::new(child.id());
    child.wait_with_output().expect("wait")
}

/// Kills a process still running [`DEADLINE`] after this was made, so that a test
/// waiting on it (its exit, a line of its output) fails instead of hanging. Dropping
/// it disarms it.
pub struct Watchdog {
    disarm: mpsc::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    /// Arms a watchdog for process `pid`.
    pub fn new(pid: u32) -> Watchdog {
        let (disarm, disarmed) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            if disarmed.recv_timeout(DEADLINE).is_err() {
                signal(pid, "KILL");
            }
        });
        Watchdog {
            disarm,
            thread: Some(thread),
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.disarm.send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
