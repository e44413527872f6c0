//! How a launched job ended, and the exit code that stands for it.

use std::fmt;
use std::time::Duration;

/// What `run` returns for a job that was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobReport {
    /// The job's id (also in every rank's `NF_JOB_ID`).
    pub job_id: String,
    /// How it ended.
    pub outcome: Outcome,
}

/// How a job ended. Every outcome but `Success` means all ranks were stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every rank exited with status 0.
    Success,
    /// A rank exited non-zero or died from a signal (the first one seen).
    RankFailed {
        /// The rank.
        rank: usize,
        /// Its process id.
        pid: u32,
        /// How it ended.
        cause: Cause,
    },
    /// The job ran past its timeout.
    TimedOut {
        /// The timeout that passed.
        after: Duration,
    },
    /// The launcher received SIGINT or SIGTERM and passed it on.
    Interrupted {
        /// The signal received.
        signal: i32,
    },
    /// A rank asked through PMI for the job to be torn down.
    Aborted {
        /// The rank.
        rank: usize,
        /// Its reason.
        message: String,
    },
}

/// How a rank ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// It exited with this status.
    Exit(i32),
    /// It was killed by this signal.
    Signal(i32),
}

impl Outcome {
    /// The process exit code for this outcome, 0 only for `Success`.
    ///
    /// | outcome | code |
    /// |---|---|
    /// | `Success` | 0 |
    /// | `RankFailed` with `Exit(c)` | c (1 if c is out of 1..=255) |
    /// | `RankFailed` with `Signal(s)`, `Interrupted { signal: s }` | 128 + s |
    /// | `TimedOut` | 124 (as timeout(1)) |
    /// | `Aborted` | 134 (128 + SIGABRT) |
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Success => 0,
            Outcome::RankFailed {
                cause: Cause::Exit(c),
                ..
            } => {
                if (1..=255).contains(c) {
                    *c
                } else {
                    1
                }
            }
            Outcome::RankFailed {
                cause: Cause::Signal(s),
                ..
            }
            | Outcome::Interrupted { signal: s } => 128 + s,
            Outcome::TimedOut { .. } => 124,
            Outcome::Aborted { .. } => 128 + libc::SIGABRT,
        }
    }

    /// Whether every rank exited with status 0.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Success)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Success => write!(f, "all ranks exited successfully"),
            Outcome::RankFailed { rank, pid, cause } => {
                write!(
                    f,
                    "rank {rank} (pid {pid}) {cause}; the other ranks were stopped"
                )
            }
            Outcome::TimedOut { after } => {
                write!(
                    f,
                    "timed out after {:.1} s; all ranks were stopped",
                    after.as_secs_f64()
                )
            }
            Outcome::Interrupted { signal } => {
                write!(
                    f,
                    "interrupted by {}; all ranks were stopped",
                    SignalName(*signal)
                )
            }
            Outcome::Aborted { rank, message } => {
                write!(
                    f,
                    "rank {rank} aborted the job: {message}; all ranks were stopped"
                )
            }
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cause::Exit(c) => write!(f, "exited with code {c}"),
            Cause::Signal(s) => write!(f, "was killed by {}", SignalName(*s)),
        }
    }
}

/// Displays as `signal 9 (SIGKILL)`.
pub(crate) struct SignalName(pub(crate) i32);

impl fmt::Display for SignalName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match signal_name(self.0) {
            Some(name) => write!(f, "signal {} ({name})", self.0),
            None => write!(f, "signal {}", self.0),
        }
    }
}

/// The conventional name of a Linux signal number.
pub fn signal_name(sig: i32) -> Option<&'static str> {
    const NAMES: [&str; 32] = [
        "",
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS",
    ];
    usize::try_from(sig)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_rank_and_cause() {
        let o = Outcome::RankFailed {
            rank: 2,
            pid: 77,
            cause: Cause::Signal(9),
        };
        assert_eq!(
            o.to_string(),
            "rank 2 (pid 77) was killed by signal 9 (SIGKILL); the other ranks were stopped"
        );
        let o = Outcome::RankFailed {
            rank: 1,
            pid: 5,
            cause: Cause::Exit(3),
        };
        assert!(o.to_string().contains("rank 1 (pid 5) exited with code 3"));
        assert_eq!(Cause::Signal(64).to_string(), "was killed by signal 64");
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Outcome::Success.exit_code(), 0);
        assert_eq!(
            Outcome::RankFailed {
                rank: 0,
                pid: 1,
                cause: Cause::Exit(3)
            }
            .exit_code(),
            3
        );
        assert_eq!(
            Outcome::RankFailed {
                rank: 0,
                pid: 1,
                cause: Cause::Signal(9)
            }
            .exit_code(),
            137
        );
        assert_eq!(
            Outcome::TimedOut {
                after: Duration::from_secs(1)
            }
            .exit_code(),
            124
        );
        assert_eq!(Outcome::Interrupted { signal: 2 }.exit_code(), 130);
        assert_eq!(
            Outcome::Aborted {
                rank: 0,
                message: String::new()
            }
            .exit_code(),
            134
        );
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(15), Some("SIGTERM"));
        assert_eq!(signal_name(0), None);
        assert_eq!(signal_name(-3), None);
    }
}
