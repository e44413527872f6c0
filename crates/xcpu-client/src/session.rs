//! A session driven from outside: what `nf exec`, `nf run --hosts` and a node
//! forwarding a session down its tree do through a node's `/xcpu`, file by file.
//!
//! Steps: [`RemoteSession::open`] opens `/xcpu/clone` and keeps it open (the hold
//! that keeps the session alive until this handle drops), [`RemoteSession::upload`]
//! copies files into `fs/`, [`RemoteSession::set`] writes `argv`, `env` and `exec`,
//! [`RemoteSession::start`] writes `exec` to `ctl`; the output and `wait` are then read
//! from the files [`RemoteSession::open_file`] opens.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nf_ninep::LOpenFlags;
use nf_ninep_client::{ClientError, File, Root};

/// Why a session could not be driven.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// The node answered a request with an error, or the connection failed.
    #[error("{what}: {cause}")]
    Node {
        /// What was being done.
        what: String,
        /// The client's error (with the node's errno); boxed, as it is large.
        cause: Box<ClientError>,
    },
    /// A local file could not be read.
    #[error("reading {}: {source}", path.display())]
    Local {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The node said something this client does not understand.
    #[error("{what}: unexpected answer {got:?}")]
    Answer {
        /// What was read.
        what: String,
        /// What came.
        got: String,
    },
}

impl RemoteError {
    fn node(what: impl Into<String>) -> impl FnOnce(ClientError) -> RemoteError {
        let what = what.into();
        move |cause| RemoteError::Node {
            what,
            cause: Box::new(cause),
        }
    }
}

/// How a remote job ended, as `wait` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteExit {
    /// `exit CODE`.
    Code(i32),
    /// `signal SIG`.
    Signal(i32),
}

impl RemoteExit {
    /// Parses `exit 3` / `signal 9`.
    pub fn parse(text: &str) -> Option<RemoteExit> {
        let (word, n) = text.trim().split_once(' ')?;
        let n = n.trim().parse().ok()?;
        match word {
            "exit" => Some(RemoteExit::Code(n)),
            "signal" => Some(RemoteExit::Signal(n)),
            _ => None,
        }
    }

    /// The status a shell would report: the code, or 128 + the signal.
    pub fn status(self) -> i32 {
        match self {
            RemoteExit::Code(c) => c,
            RemoteExit::Signal(s) => 128 + s,
        }
    }
}

impl std::fmt::Display for RemoteExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RemoteExit::Code(c) => write!(f, "exit {c}"),
            RemoteExit::Signal(s) => write!(f, "signal {s}"),
        }
    }
}

/// One session on a node, held open while this value lives.
pub struct RemoteSession {
    root: Root,
    id: u64,
    dir: String,
    /// The open `clone` file that holds a session this handle made.
    _clone: Option<File>,
}

impl RemoteSession {
    /// Makes a session on the node `root` is attached to.
    pub fn open(root: Root) -> Result<RemoteSession, RemoteError> {
        let mut clone = root
            .open("/xcpu/clone", LOpenFlags::RDONLY)
            .map_err(RemoteError::node("opening /xcpu/clone"))?;
        let text = clone
            .read_to_end()
            .map_err(RemoteError::node("reading /xcpu/clone"))?;
        let text = String::from_utf8_lossy(&text).trim().to_string();
        let id = text.parse().map_err(|_| RemoteError::Answer {
            what: "/xcpu/clone".into(),
            got: text.clone(),
        })?;
        Ok(RemoteSession {
            root,
            id,
            dir: format!("/xcpu/{id}"),
            _clone: Some(clone),
        })
    }

    /// Where a gateway placed this session: the member named on its line of
    /// `/xcpu/procs` (`G MEMBER M` at a gateway); `None` on a node, whose lines say
    /// other things.
    pub fn placed_on(&self) -> Option<String> {
        let text = self.root.read_file("/xcpu/procs").ok()?;
        let text = String::from_utf8_lossy(&text);
        let id = self.id.to_string();
        text.lines()
            .find_map(|l| match l.split(' ').collect::<Vec<_>>()[..] {
                [g, member, m] if g == id && m.parse::<u64>().is_ok() => Some(member.to_string()),
                _ => None,
            })
    }

    /// Session `id`, made by someone else (a node handing a session on), on the node
    /// `root` is attached to. It is held only while files of it are open.
    pub fn existing(root: Root, id: u64) -> RemoteSession {
        RemoteSession {
            root,
            id,
            dir: format!("/xcpu/{id}"),
            _clone: None,
        }
    }

    /// The session's number on its node.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// What the node's `/xcpu/arch` says.
    pub fn arch(root: &Root) -> Result<String, RemoteError> {
        let text = root
            .read_file("/xcpu/arch")
            .map_err(RemoteError::node("reading /xcpu/arch"))?;
        Ok(String::from_utf8_lossy(&text).trim().to_string())
    }

    /// Copies the local file `from` into `fs/NAME` with its permission bits.
    pub fn upload(&self, from: &Path, name: &str) -> Result<u64, RemoteError> {
        let local = |source| RemoteError::Local {
            path: from.to_path_buf(),
            source,
        };
        let mut input = std::fs::File::open(from).map_err(local)?;
        let mode = input.metadata().map_err(local)?.permissions().mode() & 0o777;
        let path = format!("{}/fs/{name}", self.dir);
        let out = self.create_upload(name, mode)?;
        let mut buf = vec![0u8; out.chunk().max(4096) as usize * 4];
        let mut offset = 0u64;
        loop {
            let n = input.read(&mut buf).map_err(|source| RemoteError::Local {
                path: from.to_path_buf(),
                source,
            })?;
            if n == 0 {
                break;
            }
            out.write_all_at(&buf[..n], offset)
                .map_err(RemoteError::node(format!("writing {path}")))?;
            offset += n as u64;
        }
        Ok(offset)
    }

    /// Creates `fs/NAME` with permission bits `mode` (opening it if it exists) for
    /// writing.
    pub fn create_upload(&self, name: &str, mode: u32) -> Result<File, RemoteError> {
        let path = format!("{}/fs/{name}", self.dir);
        match self.root.create(&path, LOpenFlags::WRONLY, mode) {
            Err(e) if e.errno() == Some(nf_ninep::errno::EEXIST) => self
                .root
                .open(&path, LOpenFlags::WRONLY)
                .map_err(RemoteError::node(format!("opening {path}"))),
            other => other.map_err(RemoteError::node(format!("creating {path}"))),
        }
    }

    /// Removes `fs/NAME`.
    pub fn remove_upload(&self, name: &str) -> Result<(), RemoteError> {
        let path = format!("{}/fs/{name}", self.dir);
        self.root
            .remove(&path)
            .map_err(RemoteError::node(format!("removing {path}")))
    }

    /// Reads the session file `name` to its end.
    pub fn read(&self, name: &str) -> Result<String, RemoteError> {
        let path = format!("{}/{name}", self.dir);
        let text = self
            .root
            .read_file(&path)
            .map_err(RemoteError::node(format!("reading {path}")))?;
        Ok(String::from_utf8_lossy(&text).into_owned())
    }

    /// Writes `value` to the session file `name` (`argv`, `env`, `exec`).
    pub fn set(&self, name: &str, value: &str) -> Result<(), RemoteError> {
        let path = format!("{}/{name}", self.dir);
        self.root
            .write_file(&path, value.as_bytes())
            .map_err(RemoteError::node(format!("writing {path}")))
    }

    /// Writes one command to `ctl`.
    pub fn ctl(&self, command: &str) -> Result<(), RemoteError> {
        let path = format!("{}/ctl", self.dir);
        let f = self
            .root
            .open(&path, LOpenFlags::WRONLY)
            .map_err(RemoteError::node(format!("opening {path}")))?;
        f.write_all_at(command.as_bytes(), 0).map_err(|e| {
            let why = self.state().unwrap_or_default();
            let why = why
                .lines()
                .find_map(|l| l.strip_prefix("error "))
                .unwrap_or("");
            RemoteError::Node {
                what: format!("{command} ({why})"),
                cause: Box::new(e),
            }
        })
    }

    /// Starts the job.
    pub fn start(&self) -> Result<(), RemoteError> {
        self.ctl("exec")
    }

    /// What `state` says.
    pub fn state(&self) -> Result<String, RemoteError> {
        self.read("state")
    }

    /// Opens the session file `name` (`stdout`, `stderr`, `wait`, `stdin`…).
    pub fn open_file(&self, name: &str, flags: LOpenFlags) -> Result<File, RemoteError> {
        let path = format!("{}/{name}", self.dir);
        self.root
            .open(&path, flags)
            .map_err(RemoteError::node(format!("opening {path}")))
    }

    /// Reads an opened `wait` file to its end and parses the exit.
    pub fn read_wait(mut wait: File) -> Result<RemoteExit, RemoteError> {
        let text = wait
            .read_to_end()
            .map_err(RemoteError::node("reading wait"))?;
        let text = String::from_utf8_lossy(&text).into_owned();
        RemoteExit::parse(&text).ok_or(RemoteError::Answer {
            what: "wait".into(),
            got: text,
        })
    }
}
