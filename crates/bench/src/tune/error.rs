//! Why a tuning run could not measure or cache a choice.

use std::path::PathBuf;

use crate::report::ReportError;

/// The error type of the launcher a [`super::jobs::Jobs`] is given.
pub type LaunchFailure = Box<dyn std::error::Error + Send + Sync>;

/// A tuning run failed.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The job measuring something could not be started.
    #[error("nf tune: cannot start the job measuring {what}: {source}")]
    Launch {
        /// What the job measures, e.g. `frame NF_SHM_FRAME_SIZE=4096`.
        what: String,
        /// Why.
        #[source]
        source: LaunchFailure,
    },
    /// A measuring job ended with a non-zero status.
    #[error("nf tune: the job measuring {what} failed (exit status {code}, its output is above)")]
    JobFailed {
        /// What it measured.
        what: String,
        /// Its exit status.
        code: i32,
    },
    /// A job's report could not be read (or a rank's written).
    #[error("nf tune: the report of {what}: {source}")]
    Report {
        /// What it measured.
        what: String,
        /// Why.
        #[source]
        source: ReportError,
    },
    /// A job was measured over another transport than asked for.
    #[error("nf tune: {what} was measured over {got}, not {want}")]
    WrongTransport {
        /// What it measured.
        what: String,
        /// The transport it ran over.
        got: String,
        /// The one asked for.
        want: String,
    },
    /// A route job ran over another route than asked for.
    #[error(
        "nf tune: {what} ran over {got}: a host could not use a transport it names \
         (see the job's warnings above)"
    )]
    WrongRoute {
        /// What it measured.
        what: String,
        /// The route it ran over.
        got: String,
    },
    /// A route job did not name its rank 1's host.
    #[error("nf tune: the measuring job did not say which host its rank 1 ran on")]
    NoPeerHost,
    /// `--route` names other than two hosts.
    #[error("--route takes two hosts, this one first: --route HOST0,HOST1")]
    RouteHosts,
    /// The remote template of `--route` is unusable.
    #[error(transparent)]
    Remote(#[from] nf_launch::LaunchError),
    /// The job directory or the nf executable could not be set up.
    #[error("nf tune: {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The cache could not be written.
    #[error("nf tune: writing the tune cache: {0}; set NF_TUNE_FILE to a writable file")]
    Cache(#[source] std::io::Error),
    /// Nothing is cached to check.
    #[error("nothing tuned to check: no values cached in {}; run `nf tune` first",
        .0.as_ref().map_or("(no cache path)".into(), |p| p.display().to_string()))]
    NothingCached(Option<PathBuf>),
    /// A rank could not measure.
    #[error("nf tune: measuring inside the job: {0}")]
    Rank(#[from] nf_core::CoreError),
}
