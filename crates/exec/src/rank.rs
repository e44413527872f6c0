//! One rank of a launcher's job in a node's `/xcpu` session (`nf run --hosts`): the
//! program is at the same path on every host, so nothing is uploaded; `argv`, `exec`
//! and `env` are written, `stdout`, `stderr` and `wait` opened before the start so no
//! output is missed, and stdin is closed once it has started (ranks read none).

use nf_link::addr::parse_addr;
use nf_ninep::LOpenFlags;
use nf_ninep_client::connect::{attach, ConnectOptions};
use nf_ninep_client::File;
use nf_xcpu_client::session::{RemoteError, RemoteExit, RemoteSession};

use crate::nodes::connecting;
use crate::ExecError;

/// A started rank's session: its output streams and exit, and its `ctl` for signals.
pub struct RankSession {
    /// Keeps the session alive: it ends when the last of its files is let go.
    _session: RemoteSession,
    ctl: File,
    /// The job's stdout, until taken.
    pub stdout: Option<File>,
    /// The job's stderr, until taken.
    pub stderr: Option<File>,
    /// Its `wait`, until taken.
    pub wait: Option<File>,
}

impl RankSession {
    /// Starts `argv` (`argv[0]`, the program's path on the node) with `env` in a new
    /// session on `node` (an address such as `tls:h2:564`).
    pub fn start(
        node: &str,
        conn: &ConnectOptions,
        argv: &[String],
        env: &[(String, String)],
    ) -> Result<RankSession, ExecError> {
        let Some(program) = argv.first() else {
            return Err(ExecError::Usage("no program to start".into()));
        };
        let env_text = env_text(env)?;
        let session = open_session(node, conn)?;
        let step = |what: &str| ExecError::remote(format!("{what} on {node}"));
        session
            .set("argv", &argv_text(argv))
            .map_err(step("writing argv"))?;
        session.set("exec", program).map_err(step("writing exec"))?;
        session.set("env", &env_text).map_err(step("writing env"))?;
        let open = |name: &str, flags| {
            session
                .open_file(name, flags)
                .map_err(step(&format!("opening {name}")))
        };
        let stdout = open("stdout", LOpenFlags::RDONLY)?;
        let stderr = open("stderr", LOpenFlags::RDONLY)?;
        let wait = open("wait", LOpenFlags::RDONLY)?;
        let stdin = open("stdin", LOpenFlags::WRONLY)?;
        let ctl = open("ctl", LOpenFlags::WRONLY)?;
        session.start().map_err(step("starting the rank"))?;
        drop(stdin);
        Ok(RankSession {
            _session: session,
            ctl,
            stdout: Some(stdout),
            stderr: Some(stderr),
            wait: Some(wait),
        })
    }

    /// Sends signal number `sig` to the job (`kill SIG` on its `ctl`).
    pub fn signal(&self, sig: i32) -> Result<(), ExecError> {
        self.ctl
            .write_all_at(format!("kill {sig}").as_bytes(), 0)
            .map_err(|cause| ExecError::Remote {
                what: "signalling a rank".into(),
                source: RemoteError::Node {
                    what: format!("writing kill {sig} to ctl"),
                    cause: Box::new(cause),
                },
            })
    }

    /// Blocks until the job ends (on `wait`, taken by the first call).
    pub fn wait(wait: File) -> Result<RemoteExit, ExecError> {
        RemoteSession::read_wait(wait).map_err(ExecError::remote("waiting for a rank"))
    }
}

/// `argv` as a session's `argv` file holds it: the words shell-quoted.
pub fn argv_text(argv: &[String]) -> String {
    shell_words::join(argv)
}

/// `env` as a session's `env` file holds it: `NAME=VALUE` lines; refused when a name
/// is empty or holds `=` or a newline, or a value holds a newline.
pub fn env_text(env: &[(String, String)]) -> Result<String, ExecError> {
    let mut text = String::new();
    for (k, v) in env {
        if k.is_empty() || k.contains(['=', '\n']) || v.contains('\n') {
            return Err(ExecError::Usage(format!(
                "{k}={v:?}: a session's environment takes NAME=VALUE on one line"
            )));
        }
        text.push_str(&format!("{k}={v}\n"));
    }
    Ok(text)
}

/// Connects to `node` (an address such as `tls:h2:564`) and makes a session there.
pub fn open_session(node: &str, conn: &ConnectOptions) -> Result<RemoteSession, ExecError> {
    let addr = parse_addr(node).map_err(|e| ExecError::Usage(format!("{node}: {e}")))?;
    let root = attach(&addr, conn)
        .map_err(|e| ExecError::Connect(format!("{node}: {}", connecting(e))))?;
    RemoteSession::open(root).map_err(ExecError::remote(format!("making a session on {node}")))
}
