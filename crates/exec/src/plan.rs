//! A job's plan: what every node's session gets (files, `argv`, `env`), and the set-up
//! of one node's copies.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use nf_ninep_client::connect::{connect, ConnectOptions};
use nf_xcpu_client::session::{RemoteError, RemoteSession};

use crate::nodes::{connecting, short_name, target};
use crate::ExecError;

/// What runs on the nodes: the program, its files and environment, and how many copies.
#[derive(Debug, Clone)]
pub struct Job {
    /// The program: a local file uploaded to every node when it holds a `/` (and no
    /// `binaries` are given), else a command on the node's `PATH`.
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Per architecture (`/xcpu/arch`, e.g. `linux/aarch64`), the binary to upload;
    /// nodes of other architectures are an error.
    pub binaries: Vec<(String, PathBuf)>,
    /// More local files uploaded next to the program.
    pub files: Vec<PathBuf>,
    /// Extra environment, `NAME=VALUE` each.
    pub env: Vec<String>,
    /// Copies on each node, at least 1.
    pub per_node: usize,
}

/// A checked [`Job`] for a number of copies: every session is staged from it.
#[derive(Debug)]
pub struct Plan {
    job: Job,
    upload: bool,
    size: usize,
}

impl Plan {
    /// Checks `job` (its local files, `env` entries) for `nodes` nodes, before
    /// anything is connected to.
    pub fn new(job: Job, nodes: usize) -> Result<Plan, ExecError> {
        for e in &job.env {
            if !e.contains('=') || e.starts_with('=') || e.contains('\n') {
                return Err(ExecError::Usage(format!(
                    "--env {e:?}: use NAME=VALUE on one line"
                )));
            }
        }
        let upload = job.program.contains('/') && job.binaries.is_empty();
        if upload {
            check_file(Path::new(&job.program))?;
        }
        for (_, b) in &job.binaries {
            check_file(b)?;
        }
        for f in &job.files {
            check_file(f)?;
        }
        let size = nodes * job.per_node.max(1);
        Ok(Plan { job, upload, size })
    }

    /// The job.
    pub fn job(&self) -> &Job {
        &self.job
    }

    /// Connects to `node` and sets up its copies, ranks from `first`.
    pub(crate) fn setup(
        &self,
        opts: &ConnectOptions,
        node: &str,
        first: usize,
    ) -> Result<Vec<Copy>, String> {
        let (addr, aname) = target(node).map_err(|e| e.to_string())?;
        let short = short_name(node);
        let per_node = self.job.per_node;
        let mut copies = Vec::new();
        for k in 0..per_node {
            let root = connect(&addr, opts)
                .and_then(|c| Ok(c.attach(&opts.user, &aname)?))
                .map_err(connecting)?;
            let binary = self.binary_for(&root)?;
            let session = RemoteSession::open(root).map_err(|e| e.to_string())?;
            let rank = first + k;
            self.stage(&session, binary).map_err(|e| e.to_string())?;
            session
                .set("env", &self.env_text(rank, node))
                .map_err(|e| e.to_string())?;
            // Through a gateway, the member the copy was placed on names it.
            let placed = (!aname.is_empty()).then(|| session.placed_on()).flatten();
            let tag = match (placed, per_node > 1) {
                (Some(member), true) => format!("{member}#{k}"),
                (Some(member), false) => member,
                (None, true) => format!("{short}#{k}"),
                (None, false) => short.clone(),
            };
            copies.push(Copy {
                rank,
                tag,
                session: Arc::new(session),
            });
        }
        Ok(copies)
    }

    /// Uploads the program (`binary`, else PROG when it is a local file) and the
    /// files into `session`, and writes its `argv` and `exec`.
    pub(crate) fn stage(
        &self,
        session: &RemoteSession,
        binary: Option<PathBuf>,
    ) -> Result<(), RemoteError> {
        let exec = match binary.or_else(|| self.local_program()) {
            Some(path) => {
                let name = base_name(&path);
                session.upload(&path, &name)?;
                name
            }
            None => self.job.program.clone(),
        };
        for f in &self.job.files {
            session.upload(f, &base_name(f))?;
        }
        let mut argv = vec![exec.clone()];
        argv.extend(self.job.args.iter().cloned());
        session.set("argv", &shell_words::join(&argv))?;
        session.set("exec", &exec)
    }

    fn local_program(&self) -> Option<PathBuf> {
        self.upload.then(|| PathBuf::from(&self.job.program))
    }

    /// The binary for the node's architecture, if any were given.
    fn binary_for(&self, root: &nf_ninep_client::Root) -> Result<Option<PathBuf>, String> {
        let binaries = &self.job.binaries;
        if binaries.is_empty() {
            return Ok(None);
        }
        let arch = RemoteSession::arch(root).map_err(|e| e.to_string())?;
        match binaries.iter().find(|(a, _)| *a == arch) {
            Some((_, p)) => Ok(Some(p.clone())),
            None => Err(format!(
                "no --binary for its architecture {arch} (given: {})",
                binaries
                    .iter()
                    .map(|(a, _)| a.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// The session's `env`: `NF_EXEC_RANK`, `NF_EXEC_SIZE`, `NF_EXEC_NODE`, then the
    /// job's.
    pub(crate) fn env_text(&self, rank: usize, node: &str) -> String {
        let mut text = format!(
            "NF_EXEC_RANK={rank}\nNF_EXEC_SIZE={}\nNF_EXEC_NODE={node}\n",
            self.size
        );
        for e in &self.job.env {
            text.push_str(e);
            text.push('\n');
        }
        text
    }
}

/// One copy of the program, set up and not yet started.
pub(crate) struct Copy {
    pub(crate) rank: usize,
    pub(crate) tag: String,
    pub(crate) session: Arc<RemoteSession>,
}

fn check_file(path: &Path) -> Result<(), ExecError> {
    let meta = std::fs::metadata(path)
        .map_err(|e| ExecError::Usage(format!("{}: {e}", path.display())))?;
    if !meta.is_file() {
        return Err(ExecError::Usage(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    Ok(())
}

/// The name a file has in `fs/`.
fn base_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| "prog".into(), |n| n.to_string_lossy().into_owned())
}
