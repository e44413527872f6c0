//! Starting ranks on other hosts: the [`RemoteStart`] trait, what it gives back
//! ([`RankProcess`]: something the supervisor waits on, signals and reads output
//! from), and its two implementations:
//!
//! | implementation | how a rank starts | what stands for it here |
//! |---|---|---|
//! | [`RemoteTemplate`] (`--remote 'ssh {host}'`, `ip netns exec {host}`) | the command prefix, then `env NAME=VALUE … PROG ARGS` | the prefix's process (`ssh`) |
//! | [`XcpuStart`] (`nf run --hosts` without `--remote`), through the tree (`--fanout K`, the default) | one session per host, started down the `/xcpu` tree from the first host: it runs the host's starter ([`crate::host_ranks`]), which starts the host's ranks | a rank's slot in the head's `tree` stream: its end, its output, and `kill` on the head's `ctl` (goes down the tree) |
//! | [`XcpuStart`] with `--fanout 0` | a session per rank on its host's `/xcpu` ([`nf_exec::RankSession`]): `argv`, `exec`, `env` written, no upload | the session: its `wait`, `stdout`, `stderr`, and `kill` on its `ctl` |
//!
//! Rules:
//!
//! 1. Both get the same rank: program (an absolute path, the same on every host),
//!    arguments and environment ([`RemoteRank`]), the environment already merged as
//!    the module docs of [`crate::hosts`] say.
//! 2. A rank process that does not write to the launcher's own stdout and stderr
//!    (an `/xcpu` session) gives its streams back whether or not output is tagged;
//!    the launcher forwards them, tagged or not.
//! 3. Signals: a process group gets `kill(2)`; a session gets `kill SIG` on its `ctl`.
//! 4. The launcher starts every remote rank of a job with one [`RemoteStart::start_all`]:
//!    one rank at a time by default (a template's processes, `--fanout 0`'s sessions),
//!    all hosts at once through the tree for [`XcpuStart`] (`crate::xcpu_tree`).

use std::ffi::OsString;
use std::fmt::Debug;
use std::io::{self, Read};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Child;

use crate::hosts::{assignment, shell_quote};
use crate::outcome::Cause;
use crate::spawn::spawn_process;

pub use crate::hosts::RemoteTemplate;
pub use crate::xcpu::XcpuStart;

/// A rank's stdout and stderr, when the launcher is to forward them.
pub type Streams = (Option<Box<dyn Read + Send>>, Option<Box<dyn Read + Send>>);

/// A started rank, as the supervisor sees it.
pub trait RankProcess: Send {
    /// Its process id on this machine, for logs; `None` when there is none (a session).
    fn id(&self) -> Option<u32>;
    /// How it ended, if it has; never blocks.
    fn try_wait(&mut self) -> io::Result<Option<Cause>>;
    /// Sends signal `sig` to it (and what it started); failures are ignored, as the
    /// rank may be gone.
    fn signal(&self, sig: i32);
    /// Its output streams, once (rule 2).
    fn take_output(&mut self) -> Streams;
}

/// One rank to start on another host (rule 1).
pub struct RemoteRank<'a> {
    /// The host's name, as listed in `--hosts`.
    pub host: &'a str,
    /// The rank.
    pub rank: usize,
    /// The program, an absolute path valid on the host.
    pub program: &'a Path,
    /// Its arguments.
    pub args: &'a [OsString],
    /// Its environment: the launcher's `NF_*`, the spec's, the rank's contract.
    pub env: &'a [(OsString, OsString)],
    /// Whether its output is tagged (a process that inherits the launcher's streams
    /// must then pipe them).
    pub tag_output: bool,
}

/// What [`RemoteStart::start_all`] started: the ranks of `procs` are the first
/// `procs.len()` of those asked for; `error` names the rank that could not start, and
/// why (nothing after it was started).
#[derive(Default)]
pub struct Started {
    /// The started ranks, in the order asked for.
    pub procs: Vec<Box<dyn RankProcess>>,
    /// The rank that could not be started, and why.
    pub error: Option<(usize, io::Error)>,
}

/// How ranks are started on hosts other than `localhost`.
pub trait RemoteStart: Debug + Send + Sync {
    /// Starts `rank` on its host.
    fn start(&self, rank: &RemoteRank<'_>) -> io::Result<Box<dyn RankProcess>>;
    /// Starts every rank of `ranks` (rank order, hosts other than `localhost`); by
    /// default each with [`RemoteStart::start`], stopping at the first that fails
    /// (rule 4).
    fn start_all(&self, ranks: &[RemoteRank<'_>]) -> Started {
        start_each(self, ranks)
    }
    /// What it is, for errors: `the remote template "ssh {host}"`.
    fn describe(&self) -> String;
}

/// Starts `ranks` one by one with `how`'s [`RemoteStart::start`], stopping at the
/// first that fails: [`RemoteStart::start_all`]'s default.
pub fn start_each<S: RemoteStart + ?Sized>(how: &S, ranks: &[RemoteRank<'_>]) -> Started {
    let mut started = Started::default();
    for r in ranks {
        match how.start(r) {
            Ok(p) => started.procs.push(p),
            Err(e) => {
                started.error = Some((r.rank, e));
                break;
            }
        }
    }
    started
}

/// A rank that is a process of this machine (started directly, or a template's).
pub(crate) struct ChildRank(pub(crate) Child);

impl RankProcess for ChildRank {
    fn id(&self) -> Option<u32> {
        Some(self.0.id())
    }

    fn try_wait(&mut self) -> io::Result<Option<Cause>> {
        Ok(self
            .0
            .try_wait()?
            .map(|status| match (status.code(), status.signal()) {
                (Some(code), _) => Cause::Exit(code),
                (None, Some(sig)) => Cause::Signal(sig),
                (None, None) => Cause::Exit(-1),
            }))
    }

    fn signal(&self, sig: i32) {
        // Only unreaped ranks are signalled, so the pid (and group id) is still ours.
        let Ok(pid) = libc::pid_t::try_from(self.0.id()) else {
            return;
        };
        // SAFETY: kill has no memory preconditions; a failure (the group or process is
        // already gone) is harmless and ignored.
        unsafe {
            libc::kill(-pid, sig);
            libc::kill(pid, sig);
        }
    }

    fn take_output(&mut self) -> Streams {
        let out = self
            .0
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let err = self
            .0
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        (out, err)
    }
}

impl RemoteStart for RemoteTemplate {
    /// `TEMPLATE(host) env NAME=VALUE … PROG ARGS`, the words quoted for `ssh`.
    fn start(&self, r: &RemoteRank<'_>) -> io::Result<Box<dyn RankProcess>> {
        let mut cmd = self.command(r.host);
        let mut words: Vec<OsString> = vec!["env".into()];
        words.extend(r.env.iter().map(|(k, v)| assignment(k, v)));
        words.push(r.program.as_os_str().to_owned());
        words.extend(r.args.iter().cloned());
        let quote = self.quotes();
        for w in words {
            cmd.arg(if quote { shell_quote(&w) } else { w });
        }
        let child = spawn_process(cmd, r.tag_output, None, true)?;
        Ok(Box::new(ChildRank(child)))
    }

    fn describe(&self) -> String {
        format!("the remote template {:?} (--remote)", self.as_str())
    }
}
