//! [`XcpuStart`]: ranks started in sessions of each host's `/xcpu`; the program must be
//! at the same path on every host (nothing is uploaded). Two ways:
//!
//! - down the tree ([`XcpuStart::through_tree`], `nf run --fanout K`, the default): one
//!   session per host, each running the host's starter ([`crate::host_ranks`]), the
//!   launcher connected to the first host only ([`crate::xcpu_tree`]);
//! - one session per rank, each from here on its own connection through the exec
//!   library ([`nf_exec::RankSession`]; `--fanout 0`). A thread per rank blocks on its
//!   session's `wait` and leaves the end where [`RankProcess::try_wait`] finds it; a
//!   session whose connection is lost ends as `Exit(-1)`, as a process that cannot be
//!   waited for does.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use nf_exec::RankSession;
use nf_ninep_client::connect::ConnectOptions;
use nf_xcpu_client::session::RemoteExit;
use tracing::warn;

use crate::error::LaunchError;
use crate::outcome::Cause;
use crate::remote::{start_each, RankProcess, RemoteRank, RemoteStart, Started, Streams};
use crate::xcpu_tree::{self, Tree};

/// What an address's `{host}` is replaced with.
const HOST_PLACEHOLDER: &str = "{host}";

/// Starts ranks through each host's `/xcpu`, reached at an address with `{host}` in it
/// (`tls:{host}:564`).
#[derive(Debug, Clone)]
pub struct XcpuStart {
    addr: String,
    pub(crate) conn: ConnectOptions,
    tree: Option<Tree>,
}

impl XcpuStart {
    /// Ranks through `/xcpu` at `addr` (`{host}` replaced by each host's name), with
    /// the connection options `conn` (TLS files, user).
    pub fn new(addr: &str, conn: ConnectOptions) -> Result<XcpuStart, LaunchError> {
        if !addr.contains(HOST_PLACEHOLDER) {
            return Err(LaunchError::BadRemote {
                template: addr.to_owned(),
                reason: "it has no {host} to replace with the host's name",
            });
        }
        Ok(XcpuStart {
            addr: addr.to_owned(),
            conn,
            tree: None,
        })
    }

    /// Starts the ranks down the `/xcpu` tree with `fanout` children per host (0: one
    /// session per rank, from here), one session per host running `starter` (the
    /// argv of `nf host-ranks`, its first word an absolute path valid on every host),
    /// which is followed by `-- PROG ARGS…`.
    pub fn through_tree(mut self, starter: Vec<String>, fanout: usize) -> XcpuStart {
        self.tree = (fanout > 0 && !starter.is_empty()).then_some(Tree { starter, fanout });
        self
    }

    /// The address of `host`'s node.
    pub(crate) fn node(&self, host: &str) -> String {
        self.addr.replace(HOST_PLACEHOLDER, host)
    }
}

/// `s` as UTF-8, which a session's files hold.
pub(crate) fn text(s: &OsStr) -> io::Result<String> {
    s.to_str().map(str::to_owned).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{s:?} is not UTF-8, which an /xcpu session's argv and env must be"),
        )
    })
}

impl RemoteStart for XcpuStart {
    fn start(&self, r: &RemoteRank<'_>) -> io::Result<Box<dyn RankProcess>> {
        let mut argv = vec![text(r.program.as_os_str())?];
        for a in r.args {
            argv.push(text(a)?);
        }
        let env = r
            .env
            .iter()
            .map(|(k, v)| Ok((text(k)?, text(v)?)))
            .collect::<io::Result<Vec<_>>>()?;
        let node = self.node(r.host);
        let mut session =
            RankSession::start(&node, &self.conn, &argv, &env).map_err(io::Error::other)?;
        let ended = Arc::new(Mutex::new(None));
        if let Some(wait) = session.wait.take() {
            let slot = Arc::clone(&ended);
            let rank = r.rank;
            thread::Builder::new()
                .name(format!("nf-xcpu-wait-{rank}"))
                .spawn(move || {
                    let cause = match RankSession::wait(wait) {
                        Ok(RemoteExit::Code(c)) => Cause::Exit(c),
                        Ok(RemoteExit::Signal(s)) => Cause::Signal(s),
                        Err(e) => {
                            warn!(rank, "lost the rank's session: {e}; counting it as failed");
                            Cause::Exit(-1)
                        }
                    };
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(cause);
                })?;
        }
        Ok(Box::new(XcpuRank { session, ended }))
    }

    fn start_all(&self, ranks: &[RemoteRank<'_>]) -> Started {
        match &self.tree {
            Some(tree) => xcpu_tree::start_all(self, tree, ranks),
            None => start_each(self, ranks),
        }
    }

    fn describe(&self) -> String {
        match &self.tree {
            Some(t) => format!(
                "/xcpu at {} down the tree (--xcpu, --fanout {})",
                self.addr, t.fanout
            ),
            None => format!(
                "/xcpu at {}, a session per rank (--xcpu, --fanout 0)",
                self.addr
            ),
        }
    }
}

/// A rank in an `/xcpu` session.
struct XcpuRank {
    session: RankSession,
    ended: Arc<Mutex<Option<Cause>>>,
}

impl RankProcess for XcpuRank {
    fn id(&self) -> Option<u32> {
        None
    }

    fn try_wait(&mut self) -> io::Result<Option<Cause>> {
        Ok(*self.ended.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn signal(&self, sig: i32) {
        if let Err(e) = self.session.signal(sig) {
            warn!("cannot signal a rank's /xcpu session: {e}");
        }
    }

    fn take_output(&mut self) -> Streams {
        let boxed = |f: nf_ninep_client::File| Box::new(f) as Box<dyn Read + Send>;
        (
            self.session.stdout.take().map(boxed),
            self.session.stderr.take().map(boxed),
        )
    }
}
