//! Why a job could not be launched (as opposed to how a launched job ended: [`crate::Outcome`]).

use std::io;
use std::path::PathBuf;

/// A job could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// `nprocs` is 0.
    #[error("a job needs at least one rank, got 0; ask for -n 1 or more")]
    NoRanks,
    /// The timeout is zero.
    #[error("a timeout of 0 seconds would kill the job at once; give a positive timeout or none")]
    ZeroTimeout,
    /// No program was named.
    #[error("no program to run; name one after --")]
    EmptyProgram,
    /// The program is not in `PATH`.
    #[error("program {program:?} not found in PATH ({path}); give its path or add its directory to PATH")]
    ProgramNotFound {
        /// The program as given.
        program: PathBuf,
        /// The search path used.
        path: String,
    },
    /// The program exists but cannot be run.
    #[error("cannot run {path:?}: {reason}")]
    NotExecutable {
        /// The file found.
        path: PathBuf,
        /// Why it cannot be run.
        reason: &'static str,
    },
    /// The PMI server could not be started.
    #[error("cannot start the job's PMI server: {0}")]
    Pmi(#[from] nf_pmi::PmiError),
    /// Signal handlers could not be installed.
    #[error("cannot install the launcher's SIGINT/SIGTERM handlers: {0}")]
    Signals(#[source] io::Error),
    /// The launcher's CPU set could not be read for `--bind-to core`.
    #[error(
        "cannot read the launcher's CPU affinity for --bind-to core: {0}; run without binding"
    )]
    Affinity(#[source] io::Error),
    /// A rank could not be started.
    #[error(
        "cannot start rank {rank} ({program:?}): {source}; ranks started before it were stopped"
    )]
    Spawn {
        /// The rank.
        rank: usize,
        /// The program.
        program: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
}
