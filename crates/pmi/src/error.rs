//! The one error type of this crate, for both the client and the server side.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::addr::PmiAddr;

/// What went wrong in a PMI call or in the PMI server.
#[derive(Debug, thiserror::Error)]
pub enum PmiError {
    /// A variable of the environment contract is missing.
    #[error(
        "environment variable {var} is not set although NF_PMI_ADDR is; \
         start the program with `nf run`, or unset NF_PMI_ADDR for a single-process run"
    )]
    EnvMissing {
        /// The missing variable.
        var: &'static str,
    },
    /// A variable of the environment contract has a value that cannot be used.
    #[error(
        "environment variable {var}={value:?} is invalid: expected {expected}; \
         start the program with `nf run` or fix the variable"
    )]
    EnvInvalid {
        /// The variable.
        var: &'static str,
        /// Its value (lossily converted to UTF-8).
        value: String,
        /// What was expected instead.
        expected: String,
    },
    /// The launcher's PMI server could not be reached.
    #[error(
        "cannot connect to the launcher's PMI server at {addr}: {source}; has the launcher \
         exited (is NF_PMI_ADDR stale)? For a tcp: address, can this host reach it?"
    )]
    Connect {
        /// The server's address.
        addr: PmiAddr,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The launcher did not answer before the deadline.
    #[error(
        "PMI {op} got no answer from the launcher within {after:?}; another rank may be stuck \
         or dead (raise NF_PMI_TIMEOUT if ranks legitimately need longer)"
    )]
    Timeout {
        /// The call that timed out.
        op: &'static str,
        /// The deadline that passed.
        after: Duration,
    },
    /// The launcher closed the connection.
    #[error(
        "PMI {op} failed: the launcher closed the connection (the job is probably being torn down)"
    )]
    Closed {
        /// The call that failed.
        op: &'static str,
    },
    /// Reading from or writing to the launcher failed.
    #[error("PMI {op} failed: I/O error on the connection to the launcher: {source}")]
    Io {
        /// The call that failed.
        op: &'static str,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The launcher answered something this client does not understand.
    #[error("PMI {op}: unexpected answer from the launcher ({detail}); are the rank and the launcher the same ninefold version?")]
    Protocol {
        /// The call that failed.
        op: &'static str,
        /// What was wrong with the answer.
        detail: String,
    },
    /// The launcher refused the request.
    #[error("PMI {op} refused by the launcher: {message}")]
    Refused {
        /// The call that failed.
        op: &'static str,
        /// The launcher's explanation.
        message: String,
    },
    /// A get asked for a key that no rank has put.
    #[error("PMI get: no rank has put the key {key:?}; keys become visible to all ranks after a fence that follows the put")]
    KeyNotFound {
        /// The key asked for.
        key: String,
    },
    /// A key is empty or longer than [`crate::MAX_KEY_LEN`].
    #[error(
        "PMI key {key_start:?}… is {len} bytes; keys must be 1 to {max} bytes, use a shorter key"
    )]
    BadKey {
        /// The first characters of the key.
        key_start: String,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A value is longer than [`crate::MAX_VALUE_LEN`].
    #[error("PMI value for key {key:?} is {len} bytes, over the limit of {max}; store large data elsewhere and put its location")]
    ValueTooLong {
        /// The key it was put under.
        key: String,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The connection failed earlier and cannot be used any more.
    #[error("PMI {op} not attempted: the connection to the launcher failed earlier ({first}); the rank should exit")]
    Broken {
        /// The call that was refused.
        op: &'static str,
        /// The earlier failure.
        first: String,
    },
    /// A call was made after [`crate::Client::finalize`].
    #[error("PMI {op} called after finalize; finalize must be the last PMI call of a rank")]
    Finalized {
        /// The call that was refused.
        op: &'static str,
    },
    /// The server was asked to serve an impossible job.
    #[error("cannot start the PMI server: {detail}")]
    BadServerConfig {
        /// What is wrong.
        detail: String,
    },
    /// The server could not create its private directory.
    #[error(
        "cannot create the PMI directory {path}: {source}; set TMPDIR to a writable directory"
    )]
    ServerDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The socket path does not fit in a unix socket address.
    #[error("PMI socket path {path} is {len} bytes, over the {max} a unix socket allows; set TMPDIR to a shorter directory")]
    SocketPathTooLong {
        /// The path.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The server could not bind or configure its socket.
    #[error(
        "cannot serve PMI on {addr}: {source}; for TCP, bind an address of this machine \
         (or 0.0.0.0) with a free port or port 0"
    )]
    Bind {
        /// The address it tried.
        addr: PmiAddr,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// No random secret could be made for a TCP server.
    #[error("cannot make a PMI secret: the kernel's random source failed: {source}")]
    Secret {
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The server could not start a thread.
    #[error(
        "cannot start a PMI server thread: {source}; the system may be out of threads or memory"
    )]
    Thread {
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A launcher's environment is half set or garbled: one of its variables is there,
    /// another that it always sets is missing or unusable.
    #[error(
        "environment variable {var} is {problem}, although {present} is set (so {launcher} \
         seems to have started this process); start it with {launcher}, or unset {present} \
         to run without it"
    )]
    LauncherEnv {
        /// The missing or bad variable.
        var: &'static str,
        /// What is wrong with it: "not set", or its value and what was expected.
        problem: String,
        /// The variable whose presence says which launcher this is.
        present: &'static str,
        /// The launcher ("a PMIx launcher (Open MPI's mpirun)", "a PMI-2 launcher").
        launcher: &'static str,
    },
    /// The launcher's client library (or our shim for it) cannot be loaded.
    #[error("{via} wire-up is unavailable in this process: {why}")]
    Unavailable {
        /// The interface ("PMIx").
        via: &'static str,
        /// Why, and what to install.
        why: String,
    },
    /// A call to an external launcher (PMIx, PMI-2) failed.
    #[error("{via} {op} failed: {detail}")]
    Launcher {
        /// The interface ("PMIx", "PMI-2").
        via: &'static str,
        /// The call.
        op: &'static str,
        /// The launcher's error, and what to check.
        detail: String,
    },
}

impl PmiError {
    /// Whether this failure leaves the connection in an unknown state.
    pub(crate) fn poisons_connection(&self) -> bool {
        matches!(
            self,
            PmiError::Timeout { .. }
                | PmiError::Closed { .. }
                | PmiError::Io { .. }
                | PmiError::Protocol { .. }
        )
    }
}
