//! The descriptor limit (`RLIMIT_NOFILE`): raised when a server starts, and shared out
//! as the budgets of `budget::DESCRIPTORS`.
//!
//! Rules:
//!
//! 1. The first server of a process raises the soft limit to the hard limit and logs
//!    the value (as systemd advises services: a soft limit of 1024 exists for
//!    `select(2)`, which the server does not use). Without it a server as root would
//!    serve every user from the 1024 descriptors of the shell that started it.
//! 2. Trees may keep three quarters of the limit open for fids (the server's budget);
//!    the last quarter is never charged and stays for what is bounded elsewhere:
//!    connections (a socket each, an shm channel also a memfd and four eventfds;
//!    `slots`), listeners, jobs' pipes (`/xcpu` session limits), the server's own
//!    files, and descriptors a request holds only while it runs (walking a path).
//! 3. A user may keep `max_user_fds` open (default an eighth of the limit) and one
//!    connection `max_conn_fds` (default a quarter of the user's), so that one user's
//!    open files never stop another user's opens, nor the server's accepts; six users
//!    must each hold their whole share before the server's budget is spent.

use std::sync::OnceLock;

use rustix::process::{getrlimit, setrlimit, Resource};

use crate::config::ServerConfig;

/// The limit assumed where the kernel reports none (never for `RLIMIT_NOFILE`, whose
/// hard limit is at most `fs.nr_open`).
const UNREPORTED: u64 = 1024;

/// The descriptor budgets of a server (rules 2 and 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FdLimits {
    pub conn: usize,
    pub user: usize,
    pub server: usize,
}

impl FdLimits {
    /// The budgets `config` asks for, shared out of `limit` descriptors.
    pub fn new(config: &ServerConfig, limit: usize) -> FdLimits {
        let user = config.max_user_fds.unwrap_or(limit / 8).max(1);
        FdLimits {
            conn: config.max_conn_fds.unwrap_or(user / 4).max(1),
            user,
            server: limit / 4 * 3,
        }
    }
}

/// The process's soft descriptor limit, raised to the hard limit by the first call
/// (rule 1).
pub(crate) fn raised() -> usize {
    static LIMIT: OnceLock<usize> = OnceLock::new();
    *LIMIT.get_or_init(|| {
        let now = getrlimit(Resource::Nofile);
        let soft = now.current.unwrap_or(UNREPORTED);
        let limit = match now.maximum {
            Some(hard) if hard > soft => {
                let raised = rustix::process::Rlimit {
                    current: Some(hard),
                    maximum: Some(hard),
                };
                match setrlimit(Resource::Nofile, raised) {
                    Ok(()) => {
                        tracing::info!(
                            from = soft,
                            to = hard,
                            "raised the descriptor limit (RLIMIT_NOFILE) to its hard limit"
                        );
                        hard
                    }
                    Err(e) => {
                        tracing::warn!(limit = soft, hard, error = %e, "cannot raise the descriptor limit (RLIMIT_NOFILE); serving with the soft limit");
                        soft
                    }
                }
            }
            _ => {
                tracing::info!(limit = soft, "descriptor limit (RLIMIT_NOFILE)");
                soft
            }
        };
        usize::try_from(limit).unwrap_or(usize::MAX)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_of_the_limit_unless_configured() {
        let c = ServerConfig::default();
        assert_eq!(
            FdLimits::new(&c, 4096),
            FdLimits {
                conn: 128,
                user: 512,
                server: 3072
            }
        );
        let set = ServerConfig::default().descriptors(10, 40);
        assert_eq!(
            FdLimits::new(&set, 4096),
            FdLimits {
                conn: 10,
                user: 40,
                server: 3072
            }
        );
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_limit() {
        let limit = raised();
        let now = getrlimit(Resource::Nofile);
        assert_eq!(now.current.map(|n| n as usize), Some(limit));
        assert_eq!(now.current, now.maximum);
    }
}
