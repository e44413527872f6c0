//! The servers compared: ninefold's own (a child process, as diod is; or in this
//! process; or any server already on a unix socket) and Debian's diod (a child
//! process), both exporting the same directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nf_ninep::server::{Listener, PassthroughFs, Server};

use crate::ninep::BenchError;

/// How long diod may take to create its socket.
const START_LIMIT: Duration = Duration::from_secs(10);

/// A 9P server being measured, reachable on a unix socket.
pub struct Served {
    /// Short name for reports (`ninefold`, `diod`).
    pub name: String,
    /// The socket clients connect to.
    pub socket: PathBuf,
    /// The attach name that reaches the export.
    pub aname: String,
    /// What keeps the server alive; dropping it stops the server.
    _guard: Guard,
}

enum Guard {
    /// Held for its `Drop`, which stops the accept loop.
    InProcess {
        _listener: Listener,
    },
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

/// ninefold's `PassthroughFs` over `export`, served by this process on `socket`.
pub fn ninefold_in_process(export: &Path, socket: &Path) -> Result<Served, BenchError> {
    let fs = PassthroughFs::new(export).map_err(|e| BenchError::Server {
        name: "ninefold".into(),
        reason: e.to_string(),
    })?;
    let listener = Server::new(fs)
        .listen_unix(socket)
        .map_err(|e| BenchError::Server {
            name: "ninefold".into(),
            reason: e.to_string(),
        })?;
    Ok(Served {
        name: "ninefold".into(),
        socket: socket.into(),
        aname: export.display().to_string(),
        _guard: Guard::InProcess {
            _listener: listener,
        },
    })
}

/// A server someone else started (e.g. `nf serve`) on `socket`, exporting the
/// benchmark's directory under attach name `aname`.
pub fn external(name: &str, socket: &Path, aname: &str) -> Served {
    Served {
        name: name.into(),
        socket: socket.into(),
        aname: aname.into(),
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
    spawn("diod", cmd, export, socket, log, hint)
}

/// A ninefold server in a child process: `command` must serve `export` on `socket`
/// (for `nf bench 9p`, its own hidden `nf bench 9p-server`) and exit when its standard
/// input closes, so it never outlives the benchmark.
pub fn ninefold_child(
    command: Command,
    export: &Path,
    socket: &Path,
    log: &Path,
) -> Result<Served, BenchError> {
    spawn("ninefold", command, export, socket, log, "see its log")
}

/// Starts `cmd` with its stderr in `log` and waits until it listens on `socket`.
fn spawn(
    name: &str,
    mut cmd: Command,
    export: &Path,
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
        .stdin(Stdio::piped())
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
        socket: socket.into(),
        aname: export.display().to_string(),
        _guard: Guard::Child(child),
    })
}

/// Serves `export` with `PassthroughFs` on `socket` until standard input closes (the
/// child side of [`ninefold_child`]).
pub fn serve_until_stdin_closes(export: &Path, socket: &Path) -> Result<(), BenchError> {
    let served = ninefold_in_process(export, socket)?;
    let mut sink = Vec::new();
    let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
    drop(served);
    Ok(())
}
