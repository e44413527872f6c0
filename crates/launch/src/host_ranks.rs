//! The per-host starter of a job started down the `/xcpu` tree (`nf host-ranks -- PROG
//! ARGS…`, a hidden subcommand of `nf`): each host's one session of the job runs it,
//! and it runs that host's ranks (PRRTE's per-host daemon, in small). The launcher's
//! side is `crate::xcpu_tree`.
//!
//! Rules:
//!
//! 1. **Which ranks.** The session's `env` holds the launcher's layout,
//!    `NF_RUN_HOSTS=NAME:FIRST:COUNT,…` (one entry per host of the tree, in the order
//!    the launcher gave the hosts to `clone`), and the host's place in the tree,
//!    `NF_EXEC_RANK=I` (`nf_node::xcpu::fanout`, rule 6): the starter runs ranks
//!    `FIRST .. FIRST + COUNT` of entry `I`, with `NF_HOST=NAME`.
//! 2. **Their environment.** The starter's own, less the tree's variables
//!    (`NF_EXEC_*`, `NF_RUN_HOSTS`), with each rank's contract ([`nf_pmi::env`]) over
//!    it. The launcher wrote one rank's whole contract (the PMI server's address and
//!    secret included); the starter changes only `NF_RANK`, `NF_LOCAL_RANK`,
//!    `NF_LOCAL_SIZE` and `NF_HOST`, so ranks wire up as ranks started one by one do.
//! 3. **What it says.** On its stdout, one record per line, in the shape of a `tree`
//!    stream (`nf_node::xcpu::treeout`) with ranks for nodes: `RANK out TEXT` and
//!    `RANK err TEXT` (a rank's lines; a longer one is cut into [`CHUNK`]-byte records,
//!    so the node never cuts a record), then exactly one `RANK exit CODE` or `RANK
//!    signal SIG` per rank, after its output (a rank's stream still open
//!    `OUTPUT_DRAIN` after it exited, held by a child it left, is not waited for).
//!    A rank that cannot be started is said on stderr and ends as `exit 127`. The
//!    starter's own trouble goes to its stderr; it exits 0 once every rank has ended.
//! 4. **Signals.** The node's `kill SIG` (the launcher's, handed down the tree) reaches
//!    every process of the session's job — its cgroup, else its process group — so the
//!    ranks stay in the starter's process group and get it from the node directly;
//!    the starter catches SIGINT and SIGTERM so that it outlives them and reports
//!    their ends. A rank dies with the starter (`PR_SET_PDEATHSIG`): a `kill KILL` or
//!    a wiped session leaves no rank behind.
//! 5. **Capacity.** The host's ranks are checked against its CPUs, open-file and
//!    process limits before any starts, as the launcher checks its own
//!    ([`crate::capacity`]; each rank's output takes two pipes here): more than
//!    [`crate::capacity::MAX_RANKS_PER_CPU`] per CPU need `--oversubscribe`, which
//!    `nf run --oversubscribe` passes on.

use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use nf_pmi::JobEnv;
use nf_xcpu_client::records::MAX_TEXT;
use nf_xcpu_client::{PLACE_NODE, PLACE_RANK};

use crate::capacity::{self, Demand};
use crate::signals::SignalWatch;
use crate::spawn::spawn_process;

/// The variable of the session's `env` holding the layout of every host (rule 1).
pub const LAYOUT: &str = "NF_RUN_HOSTS";
/// The variable `nf exec` and the tree set to the number of nodes.
const PLACE_SIZE: &str = "NF_EXEC_SIZE";
/// The tree's variables, which the ranks do not get (rule 2).
pub(crate) const TREE_VARS: [&str; 4] = [PLACE_RANK, PLACE_SIZE, PLACE_NODE, LAYOUT];
/// Longest text of one record (rule 3): the node cuts a job's lines at [`MAX_TEXT`],
/// and the rank and kind ride in the same line.
pub const CHUNK: usize = MAX_TEXT - 64;
/// How long a rank's output may still flow after it exited (rule 3).
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// One host's entry of the layout (rule 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostRanks {
    /// The host's name, as listed in `--hosts` (the ranks' `NF_HOST`).
    pub(crate) name: String,
    /// Its first rank.
    pub(crate) first: usize,
    /// Its rank count.
    pub(crate) count: usize,
}

/// The layout as `NF_RUN_HOSTS` holds it.
pub(crate) fn layout_text(hosts: &[HostRanks]) -> String {
    hosts
        .iter()
        .map(|h| format!("{}:{}:{}", h.name, h.first, h.count))
        .collect::<Vec<_>>()
        .join(",")
}

/// Parses `NF_RUN_HOSTS`; `None` when an entry is not `NAME:FIRST:COUNT`.
pub(crate) fn parse_layout(text: &str) -> Option<Vec<HostRanks>> {
    text.split(',')
        .map(|entry| {
            let (rest, count) = entry.rsplit_once(':')?;
            let (name, first) = rest.rsplit_once(':')?;
            Some(HostRanks {
                name: name.to_owned(),
                first: first.parse().ok()?,
                count: count.parse().ok().filter(|&c| c > 0)?,
            })
        })
        .collect()
}

/// Refuses a layout that places this host's ranks outside the job of `size` ranks
/// (a hand-edited or corrupt `env`), before anything is started or allocated for them.
fn within_job(me: &HostRanks, size: usize) -> Result<(), HostRanksError> {
    match me.first.checked_add(me.count) {
        Some(end) if end <= size => Ok(()),
        _ => Err(HostRanksError::Contract(format!(
            "{LAYOUT} places ranks {}..+{} on {}, outside the job's {size} ranks",
            me.first, me.count, me.name
        ))),
    }
}

/// Why the starter could not run its host's ranks.
#[derive(Debug, thiserror::Error)]
pub enum HostRanksError {
    /// No program after `--`.
    #[error(
        "no program given: nf host-ranks -- PROG ARGS… (nf run starts it; it is not run by hand)"
    )]
    NoProgram,
    /// The session's `env` does not place this host.
    #[error("{var} is {value:?}: this host's session has no place in the launcher's layout (nf run starts nf host-ranks down the /xcpu tree; it is not run by hand)")]
    NotPlaced {
        /// The variable at fault.
        var: &'static str,
        /// Its value, if set.
        value: Option<String>,
    },
    /// The rank contract in the environment is missing or bad.
    #[error("the ranks' contract in this session's env: {0}")]
    Contract(String),
    /// This host cannot hold its ranks (rule 5).
    #[error("on {host}: {source}")]
    Capacity {
        /// The host, as the layout names it.
        host: String,
        /// What its limits refused.
        #[source]
        source: crate::error::LaunchError,
    },
    /// SIGINT / SIGTERM could not be caught.
    #[error("catching SIGINT and SIGTERM: {0}")]
    Signals(io::Error),
}

/// Runs this host's ranks of `PROG ARGS…` (`command`) and waits for them (the module's
/// rules; `oversubscribe` lifts rule 5's bound per CPU); the starter's exit status.
pub fn main(command: &[OsString], oversubscribe: bool) -> i32 {
    match run(command, oversubscribe) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("nf host-ranks: {e}");
            1
        }
    }
}

fn run(command: &[OsString], oversubscribe: bool) -> Result<(), HostRanksError> {
    let (program, args) = command.split_first().ok_or(HostRanksError::NoProgram)?;
    let me = placed()?;
    let base = JobEnv::from_env()
        .map_err(|e| HostRanksError::Contract(e.to_string()))?
        .ok_or_else(|| HostRanksError::Contract("NF_PMI_ADDR is not set".into()))?;
    within_job(&me, base.size)?;
    capacity::check(Demand {
        local_ranks: me.count,
        all_ranks: 0,
        piped: true,
        oversubscribe,
    })
    .map_err(|source| HostRanksError::Capacity {
        host: me.name.clone(),
        source,
    })?;
    let _signals = SignalWatch::install().map_err(HostRanksError::Signals)?;
    let mut waiters = Vec::with_capacity(me.count);
    for local_rank in 0..me.count {
        let rank = me.first + local_rank;
        let contract = JobEnv {
            rank,
            local_rank,
            local_size: me.count,
            host: Some(me.name.clone()),
            ..base.clone()
        };
        let mut cmd = Command::new(program);
        cmd.args(args);
        for v in TREE_VARS {
            cmd.env_remove(v);
        }
        cmd.envs(contract.vars());
        // In the starter's process group (rule 4); started from this thread, which
        // outlives every rank (it joins their waiters), as PR_SET_PDEATHSIG needs.
        let started = spawn_process(cmd, true, None, false).and_then(|c| watch(rank, c));
        match started {
            Ok(waiter) => waiters.push(waiter),
            Err(e) => {
                eprintln!(
                    "nf host-ranks: cannot start rank {rank} ({}) on {}: {e}",
                    program.to_string_lossy(),
                    me.name
                );
                let _ = record(rank, "exit", b"127");
            }
        }
    }
    for w in waiters {
        let _ = w.join();
    }
    Ok(())
}

/// This host's entry of the layout (rule 1).
fn placed() -> Result<HostRanks, HostRanksError> {
    let var = |name: &'static str| std::env::var(name).ok();
    let not_placed =
        |var: &'static str, value: Option<String>| HostRanksError::NotPlaced { var, value };
    let index: usize = var(PLACE_RANK)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| not_placed(PLACE_RANK, var(PLACE_RANK)))?;
    let layout = var(LAYOUT)
        .as_deref()
        .and_then(parse_layout)
        .ok_or_else(|| not_placed(LAYOUT, var(LAYOUT)))?;
    layout
        .into_iter()
        .nth(index)
        .ok_or_else(|| not_placed(PLACE_RANK, var(PLACE_RANK)))
}

/// Relays `child`'s output and then its end (rule 3), on threads of their own; the
/// returned thread ends after the end record.
fn watch(rank: usize, mut child: Child) -> io::Result<JoinHandle<()>> {
    let (done_tx, done_rx) = mpsc::channel();
    let streams: [(Option<Box<dyn Read + Send>>, &'static str); 2] = [
        (child.stdout.take().map(|s| Box::new(s) as _), "out"),
        (child.stderr.take().map(|s| Box::new(s) as _), "err"),
    ];
    let mut open = 0;
    for (stream, kind) in streams {
        let Some(stream) = stream else { continue };
        let done = done_tx.clone();
        thread::Builder::new()
            .name(format!("nf-host-{kind}-{rank}"))
            .spawn(move || {
                // A broken stdout means the session is gone, and the ranks with it.
                let _ = relay(rank, kind, stream);
                let _ = done.send(());
            })?;
        open += 1;
    }
    thread::Builder::new()
        .name(format!("nf-host-wait-{rank}"))
        .spawn(move || {
            let status = child.wait();
            let deadline = Instant::now() + OUTPUT_DRAIN;
            for _ in 0..open {
                let left = deadline.saturating_duration_since(Instant::now());
                if done_rx.recv_timeout(left).is_err() {
                    break;
                }
            }
            let (kind, n) = match status {
                Ok(s) => match (s.code(), s.signal()) {
                    (Some(code), _) => ("exit", code),
                    (None, Some(sig)) => ("signal", sig),
                    (None, None) => ("exit", -1),
                },
                Err(_) => ("exit", -1),
            };
            let _ = record(rank, kind, n.to_string().as_bytes());
        })
}

/// Copies `src` to this process's stdout as `RANK KIND TEXT` records, a line (or
/// [`CHUNK`] bytes of one) each (rule 3).
fn relay(rank: usize, kind: &str, src: impl Read) -> io::Result<()> {
    let mut reader = BufReader::new(src);
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            if !line.is_empty() {
                record(rank, kind, &line)?;
            }
            return Ok(());
        }
        let take = &buf[..buf.len().min(CHUNK - line.len())];
        match take.iter().position(|&b| b == b'\n') {
            Some(i) => {
                line.extend_from_slice(&take[..i]);
                reader.consume(i + 1);
                record(rank, kind, &line)?;
                line.clear();
            }
            None => {
                let n = take.len();
                line.extend_from_slice(take);
                reader.consume(n);
                if line.len() == CHUNK {
                    record(rank, kind, &line)?;
                    line.clear();
                }
            }
        }
    }
}

/// Writes one record, whole, to stdout.
fn record(rank: usize, kind: &str, text: &[u8]) -> io::Result<()> {
    let mut line = format!("{rank} {kind} ").into_bytes();
    line.extend_from_slice(text);
    line.push(b'\n');
    let mut out = io::stdout().lock();
    out.write_all(&line)?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_round_trip_and_bad_ones_are_refused() {
        let hosts = vec![
            HostRanks {
                name: "h1".into(),
                first: 0,
                count: 2,
            },
            HostRanks {
                name: "me@10.0.0.2".into(),
                first: 2,
                count: 3,
            },
        ];
        let text = layout_text(&hosts);
        assert_eq!(text, "h1:0:2,me@10.0.0.2:2:3");
        assert_eq!(parse_layout(&text), Some(hosts));
        for bad in ["h1:0", "h1:x:2", "h1:0:0", "", "h1:0:2,"] {
            assert_eq!(parse_layout(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_host_placed_outside_the_job_is_refused() {
        let at = |first, count| HostRanks {
            name: "h".into(),
            first,
            count,
        };
        assert!(within_job(&at(2, 3), 5).is_ok());
        for (first, count) in [(2, 4), (5, 1), (usize::MAX, 2), (0, usize::MAX)] {
            let err = within_job(&at(first, count), 5).unwrap_err().to_string();
            assert!(err.contains("outside the job's 5 ranks"), "{err}");
        }
    }
}
