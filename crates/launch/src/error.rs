//! Why a job could not be launched (as opposed to how a launched job ended: [`crate::Outcome`]).

use std::io;
use std::net::SocketAddr;
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
    /// More ranks per CPU than the launcher starts without `oversubscribe`.
    #[error(
        "{ranks} ranks on the {cpus} CPU(s) this launcher may use is more than {per_cpu} per CPU; \
         use fewer ranks (-n), spread them over hosts (--hosts), or pass --oversubscribe to nf run to start them anyway"
    )]
    Oversubscribed {
        /// Ranks asked for on this machine.
        ranks: usize,
        /// CPUs the launcher may use.
        cpus: usize,
        /// The bound per CPU.
        per_cpu: usize,
    },
    /// The launcher cannot hold a descriptor for each rank.
    #[error(
        "{ranks} ranks need about {need} open files in the launcher, but its limit is {limit} ({why}); \
         raise it (ulimit -n, or the hard limit in /etc/security/limits.conf) or use fewer ranks"
    )]
    Files {
        /// Ranks of the job.
        ranks: usize,
        /// Descriptors needed.
        need: u64,
        /// The limit that is too low.
        limit: u64,
        /// Which limit, and what was tried.
        why: String,
    },
    /// The user's process limit is below the ranks to start.
    #[error(
        "{ranks} ranks on this machine exceed your process limit of {limit} (ulimit -u); \
         use fewer ranks or ask for a higher limit"
    )]
    Processes {
        /// Ranks asked for on this machine.
        ranks: usize,
        /// The soft `RLIMIT_NPROC`.
        limit: u64,
    },
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
    /// A `--hosts` entry cannot be used.
    #[error(
        "host entry {entry:?}: {reason}; write hosts as NAME:RANKS,NAME:RANKS (e.g. h1:2,h2:2)"
    )]
    BadHost {
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A multi-host job names no host.
    #[error("a multi-host job needs at least one host; give --hosts NAME:RANKS,…")]
    NoHosts,
    /// The rank count and the hosts' rank counts differ.
    #[error("the job asks for {nprocs} ranks but the hosts run {hosts}; drop -n or make it match --hosts")]
    RanksMismatch {
        /// Ranks asked for.
        nprocs: usize,
        /// Ranks the hosts run together.
        hosts: usize,
    },
    /// The remote-start template cannot be used.
    #[error("remote template {template:?}: {reason}; give a command prefix such as 'ssh {{host}}' or 'ip netns exec {{host}}'")]
    BadRemote {
        /// The template as given.
        template: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Ranks on other hosts need an address of this machine to reach the PMI server.
    #[error(
        "ranks on {hosts} must reach this launcher's PMI server over TCP, and the launcher \
         does not guess an address for it; give --pmi-bind with an IP of this machine that \
         those hosts can reach"
    )]
    PmiBindNeeded {
        /// The hosts other than `localhost`, comma-separated.
        hosts: String,
    },
    /// The PMI bind address is a wildcard, which ranks cannot connect to.
    #[error("--pmi-bind {bind} is a wildcard address that ranks cannot connect to; give one IP of this machine that every host can reach")]
    PmiBindUnspecified {
        /// The address given.
        bind: SocketAddr,
    },
    /// An extra environment variable cannot be passed on a remote command line.
    #[error("environment variable name {name:?} cannot be passed to ranks on other hosts (`env NAME=VALUE`); use letters, digits and _, not starting with a digit")]
    BadEnvName {
        /// The name (lossily converted to UTF-8).
        name: String,
    },
    /// The program's absolute path could not be made for ranks on other hosts.
    #[error("cannot make an absolute path of {program:?} for ranks on other hosts: {source}")]
    ProgramPath {
        /// The program as resolved.
        program: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A rank could not be started on another host.
    #[error(
        "cannot start rank {rank} on host {host} through {how}: {source}; check it (--remote, \
         or --xcpu and the host's nf serve); ranks started before it were stopped"
    )]
    SpawnRemote {
        /// The rank.
        rank: usize,
        /// Its host.
        host: String,
        /// How it was started ([`crate::remote::RemoteStart::describe`]).
        how: String,
        /// Why.
        #[source]
        source: io::Error,
    },
}

impl LaunchError {
    /// Whether the request itself cannot work (a rank count, timeout, host list, remote
    /// template or address that no retry fixes), as opposed to a failure to start what
    /// was asked for (a missing program, a spawn or PMI failure).
    pub fn is_usage(&self) -> bool {
        use LaunchError::*;
        match self {
            NoRanks
            | ZeroTimeout
            | EmptyProgram
            | BadHost { .. }
            | NoHosts
            | RanksMismatch { .. }
            | BadRemote { .. }
            | PmiBindNeeded { .. }
            | PmiBindUnspecified { .. }
            | BadEnvName { .. }
            | Oversubscribed { .. } => true,
            ProgramNotFound { .. }
            | NotExecutable { .. }
            | Pmi(_)
            | Signals(_)
            | Affinity(_)
            | Spawn { .. }
            | ProgramPath { .. }
            | SpawnRemote { .. }
            | Files { .. }
            | Processes { .. } => false,
        }
    }
}
