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
        /// Its process id (for a rank on another host, the local template process's);
        /// `None` for a rank with no process here (an `/xcpu` session).
        pid: Option<u32>,
        /// How it ended.
        cause: Cause,
        /// Its host, in a multi-host job.
        host: Option<String>,
    },
    /// In a multi-host job, every rank of one host ended abnormally within a moment of
    /// the first (the host, or its link, is gone); the ranks elsewhere were stopped.
    HostLost {
        /// The host.
        host: String,
        /// Its ranks and how each ended, the first failure first.
        ranks: Vec<(usize, Cause)>,
    },
    /// The job ran past its timeout.
    TimedOut {
        /// The timeout that passed.
        after: Duration,
        /// The ranks still running when it passed, which were killed.
        killed: Vec<usize>,
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
        /// The job's exit status it asked for (`shmem_global_exit`), if any.
        status: Option<i32>,
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
    /// | `HostLost` | as `RankFailed` for its first rank |
    /// | `TimedOut` | 124 (as timeout(1)) |
    /// | `Aborted` | 134 (128 + SIGABRT) |
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Success => 0,
            Outcome::RankFailed { cause, .. } => cause.exit_code(),
            Outcome::HostLost { ranks, .. } => {
                ranks.first().map_or(1, |(_, cause)| cause.exit_code())
            }
            Outcome::Interrupted { signal: s } => 128 + s,
            Outcome::TimedOut { .. } => 124,
            Outcome::Aborted {
                status: Some(s), ..
            } => s & 0xff,
            Outcome::Aborted { .. } => 128 + libc::SIGABRT,
        }
    }

    /// Whether every rank exited with status 0.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Success)
    }
}

/// ` (pid N)` when the rank has a process here, else nothing.
fn pid_note(pid: Option<u32>) -> String {
    pid.map_or_else(String::new, |p| format!(" (pid {p})"))
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Success => write!(f, "all ranks exited successfully"),
            Outcome::RankFailed {
                rank,
                pid,
                cause,
                host: None,
            } => {
                write!(
                    f,
                    "rank {rank}{} {cause}; the other ranks were stopped",
                    pid_note(*pid)
                )
            }
            Outcome::RankFailed {
                rank,
                pid,
                cause,
                host: Some(host),
            } => {
                write!(
                    f,
                    "rank {rank} on host {host} {cause}{}; the other ranks were stopped",
                    pid_note(*pid)
                )
            }
            Outcome::HostLost { host, ranks } => {
                write!(f, "host {host} lost: all its ranks ended (")?;
                for (i, (rank, cause)) in ranks.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}rank {rank} {cause}")?;
                }
                write!(f, "); the ranks on other hosts were stopped")
            }
            Outcome::TimedOut { after, killed } => {
                write!(
                    f,
                    "the timeout of {:.1} s fired; {} still running and killed",
                    after.as_secs_f64(),
                    RankList(killed)
                )
            }
            Outcome::Interrupted { signal } => {
                write!(
                    f,
                    "interrupted by {}; all ranks were stopped",
                    SignalName(*signal)
                )
            }
            Outcome::Aborted {
                rank,
                message,
                status: None,
            } => {
                write!(
                    f,
                    "rank {rank} aborted the job: {message}; all ranks were stopped"
                )
            }
            Outcome::Aborted {
                rank,
                message,
                status: Some(s),
            } => {
                write!(
                    f,
                    "rank {rank} ended the job with status {s}: {message}; all ranks were stopped"
                )
            }
        }
    }
}

impl Cause {
    /// The exit code that stands for a rank ending this way: the code itself (1 if it is
    /// out of 1..=255), or 128 + the signal.
    fn exit_code(self) -> i32 {
        match self {
            Cause::Exit(c) if (1..=255).contains(&c) => c,
            Cause::Exit(_) => 1,
            Cause::Signal(s) => 128 + s,
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

/// Displays ranks as `rank 3 was`, `ranks 0, 1 were` or `no rank was` (the subject of
/// a sentence).
struct RankList<'a>(&'a [usize]);

impl fmt::Display for RankList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => f.write_str("no rank was"),
            [one] => write!(f, "rank {one} was"),
            many => {
                f.write_str("ranks ")?;
                for (i, r) in many.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{r}")?;
                }
                f.write_str(" were")
            }
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
            pid: Some(77),
            cause: Cause::Signal(9),
            host: None,
        };
        assert_eq!(
            o.to_string(),
            "rank 2 (pid 77) was killed by signal 9 (SIGKILL); the other ranks were stopped"
        );
        let o = Outcome::RankFailed {
            rank: 1,
            pid: Some(5),
            cause: Cause::Exit(3),
            host: None,
        };
        assert!(o.to_string().contains("rank 1 (pid 5) exited with code 3"));
        let o = Outcome::RankFailed {
            rank: 2,
            pid: Some(8),
            cause: Cause::Signal(9),
            host: Some("h2".into()),
        };
        assert!(
            o.to_string()
                .starts_with("rank 2 on host h2 was killed by signal 9 (SIGKILL) (pid 8)"),
            "{o}"
        );
        let o = Outcome::HostLost {
            host: "h2".into(),
            ranks: vec![(3, Cause::Signal(9)), (2, Cause::Exit(1))],
        };
        assert_eq!(
            o.to_string(),
            "host h2 lost: all its ranks ended (rank 3 was killed by signal 9 (SIGKILL), \
             rank 2 exited with code 1); the ranks on other hosts were stopped"
        );
        assert_eq!(o.exit_code(), 137);
        assert_eq!(Cause::Signal(64).to_string(), "was killed by signal 64");
        let o = Outcome::TimedOut {
            after: Duration::from_millis(1500),
            killed: vec![0, 2],
        };
        assert_eq!(
            o.to_string(),
            "the timeout of 1.5 s fired; ranks 0, 2 were still running and killed"
        );
        let o = Outcome::TimedOut {
            after: Duration::from_secs(1),
            killed: vec![1],
        };
        assert!(o
            .to_string()
            .ends_with("; rank 1 was still running and killed"));
    }

    #[test]
    fn exit_codes() {
        assert_eq!(Outcome::Success.exit_code(), 0);
        assert_eq!(
            Outcome::RankFailed {
                rank: 0,
                pid: Some(1),
                cause: Cause::Exit(3),
                host: None,
            }
            .exit_code(),
            3
        );
        assert_eq!(
            Outcome::RankFailed {
                rank: 0,
                pid: Some(1),
                cause: Cause::Signal(9),
                host: None,
            }
            .exit_code(),
            137
        );
        assert_eq!(
            Outcome::TimedOut {
                after: Duration::from_secs(1),
                killed: vec![0, 1],
            }
            .exit_code(),
            124
        );
        assert_eq!(Outcome::Interrupted { signal: 2 }.exit_code(), 130);
        assert_eq!(
            Outcome::Aborted {
                rank: 0,
                message: String::new(),
                status: None,
            }
            .exit_code(),
            134
        );
        for (status, code) in [(0, 0), (3, 3), (256 + 7, 7)] {
            let ended = Outcome::Aborted {
                rank: 1,
                message: "m".into(),
                status: Some(status),
            };
            assert_eq!(ended.exit_code(), code);
            assert!(ended.to_string().contains(&format!("status {status}")));
        }
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(15), Some("SIGTERM"));
        assert_eq!(signal_name(0), None);
        assert_eq!(signal_name(-3), None);
    }
}
