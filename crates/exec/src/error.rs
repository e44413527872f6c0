//! Why a job could not be run on its nodes.

use std::path::PathBuf;

use nf_xcpu_client::session::RemoteError;

/// An `nf exec` job could not be set up, started or followed to its end.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The job as asked for cannot run (a node address, a local file, an `--env`):
    /// nothing was connected to.
    #[error("{0}")]
    Usage(String),
    /// The node list file could not be read.
    #[error("reading the node list {file}: {source}")]
    NodeList {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A node's session refused a step.
    #[error("{what}: {source}")]
    Remote {
        /// What was being done, and where.
        what: String,
        /// Why.
        #[source]
        source: RemoteError,
    },
    /// The first node (of a tree) could not be reached.
    #[error("{0}")]
    Connect(String),
    /// Some nodes could not get or start the job (each named on stderr before).
    #[error(
        "{failed} of {total} nodes could not {what} (named above); {done}{hint}",
        hint = if *.keep_going { "" } else { " (--keep-going runs on the rest)" }
    )]
    NodesFailed {
        /// How many failed.
        failed: usize,
        /// Out of.
        total: usize,
        /// `start the job`, `get the job`.
        what: &'static str,
        /// What became of the rest: `nothing was run`, `the rest were killed`.
        done: &'static str,
        /// Whether `--keep-going` was given (and could not help).
        keep_going: bool,
    },
    /// Copies ended without an exit status.
    #[error("{} copies ended without an exit status: {}", .0.len(), .0.join(", "))]
    Lost(Vec<String>),
    /// The tree listed a node it was not asked for.
    #[error("the tree listed a node that was not asked for: {0:?}")]
    StrayNode(String),
    /// SIGINT / SIGTERM could not be caught.
    #[error("catching SIGINT and SIGTERM: {0}")]
    Signals(#[source] std::io::Error),
}

impl ExecError {
    /// A session step's error, naming what was done.
    pub(crate) fn remote(what: impl Into<String>) -> impl FnOnce(RemoteError) -> ExecError {
        let what = what.into();
        move |source| ExecError::Remote { what, source }
    }
}
