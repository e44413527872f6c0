//! The servers compared: ninefold's node daemon `nf serve` (a child process, as diod is;
//! or any server already running, on a unix socket or reached by a [`Connect`] of the
//! caller's, e.g. a gateway over TLS) and Debian's diod (a child process), all
//! exporting the same directory.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nf_ninep_client::{Client, ClientConfig};

use crate::ninep::BenchError;

/// Where `nf serve` shows its export directory (the attach name that reaches it).
pub const NF_SERVE_EXPORT: &str = "/fs";

/// How long a server may take to create its socket.
const START_LIMIT: Duration = Duration::from_secs(10);

/// Why a [`Connect`] failed: whatever error the caller's way of connecting gives.
pub type ConnectFailure = Box<dyn std::error::Error + Send + Sync>;

/// How the benchmark's client reaches a server: a fresh connection asking for the msize
/// given, version negotiated (the caller's choice of transport: a unix socket, tcp,
/// TLS with a certificate, …).
pub type Connect = Box<dyn Fn(u32) -> Result<Client, ConnectFailure> + Send + Sync>;

/// A 9P server being measured.
pub struct Served {
    /// Short name for reports (`ninefold`, `diod`).
    pub name: String,
    /// Where it is, for reports: `unix:SOCKET`, `tls:HOST:PORT`, ….
    pub addr: String,
    /// The attach name that reaches the export.
    pub aname: String,
    /// Opens a connection to it.
    connect: Connect,
    /// What keeps the server alive; dropping it stops the server.
    _guard: Guard,
}

impl Served {
    /// A fresh connection asking for `msize`.
    pub fn connect(&self, msize: u32) -> Result<Client, ConnectFailure> {
        (self.connect)(msize)
    }
}

/// Connects to the unix socket `socket`.
fn unix(socket: &Path) -> Connect {
    let socket = socket.to_path_buf();
    Box::new(move |msize| {
        let config = ClientConfig {
            msize,
            ..ClientConfig::default()
        };
        Ok(Client::connect_unix_with(&socket, config)?)
    })
}

enum Guard {
    Child(Child),
    External,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Guard::Child(child) = self {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A server someone else started (e.g. `nf serve`) on `socket`, exporting the
/// benchmark's directory under attach name `aname`.
pub fn external(name: &str, socket: &Path, aname: &str) -> Served {
    external_with(
        name,
        &format!("unix:{}", socket.display()),
        aname,
        unix(socket),
    )
}

/// A server someone else started at `addr` (for reports), reached by `connect`,
/// exporting the benchmark's directory under attach name `aname`: e.g. a node or a
/// gateway over TLS.
pub fn external_with(name: &str, addr: &str, aname: &str, connect: Connect) -> Served {
    Served {
        name: name.into(),
        addr: addr.into(),
        aname: aname.into(),
        connect,
        _guard: Guard::External,
    }
}

/// Debian's diod exporting `export` on `socket` (no authentication, every attach
/// mapped to root as the harness in `tests/kernel9p/diod.sh` does); its log goes to
/// `log`.
pub fn diod(binary: &str, export: &Path, socket: &Path, log: &Path) -> Result<Served, BenchError> {
    let mut cmd = Command::new(binary);
    cmd.args([
        "--foreground",
        "--no-auth",
        "--allsquash",
        "--squashuser",
        "root",
    ])
    .args(["--config-file", "/dev/null", "--logdest", "stderr"])
    .arg("--export")
    .arg(export)
    .arg("--listen")
    .arg(socket);
    let hint = "install it with scripts/setup.sh or `apt-get install diod`, or pass --no-diod";
    let aname = export.display().to_string();
    spawn("diod", cmd, &aname, socket, log, hint)
}

/// ninefold's node daemon, `nf serve -f` (the binary `nf`), exporting `export` on the
/// unix socket `socket` (its node tree shows it as [`NF_SERVE_EXPORT`]); its log goes
/// to `log`. It is killed when the returned [`Served`] is dropped.
pub fn nf_serve(nf: &Path, export: &Path, socket: &Path, log: &Path) -> Result<Served, BenchError> {
    let mut cmd = Command::new(nf);
    cmd.args(["serve", "-f", "--unix"])
        .arg(socket)
        .arg("--export")
        .arg(export)
        .env("NF_LOG", "warn");
    spawn("ninefold", cmd, NF_SERVE_EXPORT, socket, log, "see its log")
}

/// Starts `cmd` with its stderr in `log` and waits until it listens on `socket`,
/// where `aname` reaches the export.
fn spawn(
    name: &str,
    mut cmd: Command,
    aname: &str,
    socket: &Path,
    log: &Path,
    hint: &str,
) -> Result<Served, BenchError> {
    let failed = |reason: String| BenchError::Server {
        name: name.into(),
        reason,
    };
    let log_file = std::fs::File::create(log)
        .map_err(|e| failed(format!("creating its log {}: {e}", log.display())))?;
    let program = cmd.get_program().to_string_lossy().into_owned();
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .map_err(|e| failed(format!("starting '{program}': {e} ({hint})")))?;
    let deadline = Instant::now() + START_LIMIT;
    while !socket.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(failed(format!(
                "it exited ({status}) before listening; see {}",
                log.display()
            )));
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(format!(
                "no socket {} after {START_LIMIT:?}; see {}",
                socket.display(),
                log.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Served {
        name: name.into(),
        addr: format!("unix:{}", socket.display()),
        aname: aname.into(),
        connect: unix(socket),
        _guard: Guard::Child(child),
    })
}
