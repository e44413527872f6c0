//! [`XcpuStart`] through the `/xcpu` tree: one session per host, started from the
//! first host, each running the host's starter ([`crate::host_ranks`]).
//!
//! 1. **Hand on.** Connect to the first host only; make a session; write `argv` (the
//!    starter by its absolute path, then `-- PROG ARGS…`), `exec`, and `env`: the first
//!    rank's environment, the layout (`NF_RUN_HOSTS`) and the tree's place of the first
//!    host (`NF_EXEC_RANK=0`); then `clone K HOST…` for the other hosts, and wait at the
//!    `clones` barrier. A host the tree did not reach is a start error naming it (its
//!    first rank, its name, why); the session is wiped, nothing ran.
//! 2. **Start.** Open the first host's `tree` (`nf_node::xcpu::treeout`) before `exec`,
//!    so nothing is missed; `exec` goes down the tree. A host whose session could not
//!    start (the starter missing there) is a start error as in step 1, the rest killed.
//! 3. **Follow.** One thread reads `tree`: a host's `out` records are its starter's
//!    rank records (`RANK out|err TEXT`, `RANK exit|signal N`), each checked against the
//!    host's ranks and handed to that rank — output to its streams (which the launcher
//!    forwards, tagged or not, as any rank's), the end to its slot, where
//!    [`RankProcess::try_wait`] finds it; a host's `err` records (its starter's own
//!    messages) are logged with the host's name; a host that ended (`exit`, `signal`,
//!    `failed`) before all its ranks did ends each of them: by the signal that ended it,
//!    else as `Exit(-1)`; when the stream ends, a rank without an end is lost
//!    (`Exit(-1)`), as a rank whose session is lost is.
//! 4. **Signals.** A rank's signal is `kill SIG` on the first host's `ctl`, which goes
//!    down the tree to every host's job (the starter and its ranks); each signal is
//!    sent once per job, however many ranks the supervisor signals with it.
//!
//! So the launcher holds one connection, to the first host, and writes one `env`,
//! whatever the number of hosts and ranks; the hosts hold one session each.

use std::collections::HashMap;
use std::io::{self, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;

use nf_exec::rank::{argv_text, env_text, open_session};
use nf_ninep::LOpenFlags;
use nf_xcpu_client::records::{parse_record, read_record};
use nf_xcpu_client::session::{RemoteExit, RemoteSession};
use nf_xcpu_client::{PLACE_NODE, PLACE_RANK};
use tracing::{debug, warn};

use crate::host_ranks::{layout_text, HostRanks, LAYOUT, TREE_VARS};
use crate::outcome::Cause;
use crate::remote::{RankProcess, RemoteRank, Started, Streams};
use crate::xcpu::{text, XcpuStart};

/// How [`XcpuStart`] goes through the tree.
#[derive(Debug, Clone)]
pub(crate) struct Tree {
    /// The starter's argv before `-- PROG ARGS…`; its first word an absolute path,
    /// the same on every host.
    pub(crate) starter: Vec<String>,
    /// Children per host of the tree.
    pub(crate) fanout: usize,
}

/// One host of the tree: its layout entry, address, and its ranks' slots.
struct Host {
    ranks: HostRanks,
    addr: String,
    /// Index of its first rank among the ranks started here.
    slot: usize,
}

/// Starts `ranks` through the tree (the module's steps 1 and 2).
pub(crate) fn start_all(x: &XcpuStart, tree: &Tree, ranks: &[RemoteRank<'_>]) -> Started {
    let Some(first) = ranks.first() else {
        return Started::default();
    };
    let hosts = hosts_of(x, ranks);
    match start(x, tree, ranks, &hosts) {
        Ok(procs) => Started { procs, error: None },
        Err((host, e)) => Started {
            procs: Vec::new(),
            error: Some((hosts.get(host).map_or(first.rank, |h| h.ranks.first), e)),
        },
    }
}

/// The hosts of `ranks` (in rank order, each host's ranks together).
fn hosts_of(x: &XcpuStart, ranks: &[RemoteRank<'_>]) -> Vec<Host> {
    let mut hosts: Vec<Host> = Vec::new();
    for (slot, r) in ranks.iter().enumerate() {
        match hosts.last_mut() {
            Some(h) if h.ranks.name == r.host => h.ranks.count += 1,
            _ => hosts.push(Host {
                ranks: HostRanks {
                    name: r.host.to_owned(),
                    first: r.rank,
                    count: 1,
                },
                addr: x.node(r.host),
                slot,
            }),
        }
    }
    hosts
}

/// A failure of step 1 or 2: the index of the host it names (0 when none), and why.
type StartError = (usize, io::Error);

fn start(
    x: &XcpuStart,
    tree: &Tree,
    ranks: &[RemoteRank<'_>],
    hosts: &[Host],
) -> Result<Vec<Box<dyn RankProcess>>, StartError> {
    let first = &ranks[0];
    let at_head = |e: nf_exec::ExecError| (0, io::Error::other(e));
    let mut argv = tree.starter.clone();
    argv.push("--".into());
    argv.push(text(first.program.as_os_str()).map_err(|e| (0, e))?);
    for a in first.args {
        argv.push(text(a).map_err(|e| (0, e))?);
    }
    let mut env = Vec::with_capacity(first.env.len() + 4);
    for (k, v) in first.env {
        let k = text(k).map_err(|e| (0, e))?;
        if !TREE_VARS.contains(&k.as_str()) {
            env.push((k, text(v).map_err(|e| (0, e))?));
        }
    }
    let layout: Vec<HostRanks> = hosts.iter().map(|h| h.ranks.clone()).collect();
    env.push((PLACE_RANK.into(), "0".into()));
    env.push(("NF_EXEC_SIZE".into(), hosts.len().to_string()));
    env.push((PLACE_NODE.into(), hosts[0].addr.clone()));
    env.push((LAYOUT.into(), layout_text(&layout)));
    let env = env_text(&env).map_err(at_head)?;

    let head = open_session(&hosts[0].addr, &x.conn).map_err(at_head)?;
    let step = |what: &str| {
        let what = format!("{what} on {}", hosts[0].addr);
        move |e: nf_xcpu_client::session::RemoteError| (0, io::Error::other(format!("{what}: {e}")))
    };
    let wiped = |e: StartError| {
        let _ = head.ctl("wipe");
        e
    };
    head.set("argv", &argv_text(&argv))
        .map_err(step("writing argv"))?;
    head.set("exec", &argv[0]).map_err(step("writing exec"))?;
    head.set("env", &env).map_err(step("writing env"))?;
    if hosts.len() > 1 {
        let rest: Vec<&str> = hosts[1..].iter().map(|h| h.addr.as_str()).collect();
        head.ctl(&format!("clone {} {}", tree.fanout, rest.join(" ")))
            .map_err(step("handing the job on"))
            .map_err(wiped)?;
        unreached(&head, hosts).map_err(wiped)?;
    }
    let stream = head
        .open_file("tree", LOpenFlags::RDONLY)
        .map_err(step("opening tree"))
        .map_err(wiped)?;
    head.start()
        .map_err(step("starting the job"))
        .map_err(|e| {
            let _ = head.ctl("kill KILL");
            wiped(e)
        })?;
    if hosts.len() > 1 {
        unreached(&head, hosts).map_err(|e| {
            let _ = head.ctl("kill KILL");
            wiped(e)
        })?;
    }
    debug!(
        hosts = hosts.len(),
        ranks = ranks.len(),
        "job started down the /xcpu tree"
    );
    Ok(follow(head, stream, hosts, ranks.len()))
}

/// The first host the `clones` listing says failed (after the barrier it waits at).
fn unreached(head: &RemoteSession, hosts: &[Host]) -> Result<(), StartError> {
    let listing = head.read("clones").map_err(|e| {
        (
            0,
            io::Error::other(format!("waiting for the /xcpu tree: {e}")),
        )
    })?;
    for line in listing.lines() {
        let Some((addr, why)) = line.split_once(" - ") else {
            continue;
        };
        let host = hosts.iter().position(|h| h.addr == addr).unwrap_or(0);
        return Err((
            host,
            io::Error::other(format!("the /xcpu tree did not reach {addr}: {why}")),
        ));
    }
    Ok(())
}

/// What the tree reader and the ranks share: per rank, its end and its streams' writers.
struct Shared {
    head: RemoteSession,
    slots: Vec<Mutex<Slot>>,
    /// Signals already sent down the tree (step 4).
    sent: Mutex<Vec<i32>>,
}

#[derive(Default)]
struct Slot {
    end: Option<Cause>,
    out: Option<UnixStream>,
    err: Option<UnixStream>,
}

impl Shared {
    fn slot(&self, i: usize) -> std::sync::MutexGuard<'_, Slot> {
        self.slots[i].lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends rank slot `i` with `cause` unless it has ended; its streams close.
    fn end(&self, i: usize, cause: Cause) -> bool {
        let mut s = self.slot(i);
        s.out = None;
        s.err = None;
        if s.end.is_some() {
            return false;
        }
        s.end = Some(cause);
        true
    }
}

/// Step 3: the ranks' stand-ins, and the thread that follows `stream`.
fn follow(
    head: RemoteSession,
    stream: nf_ninep_client::File,
    hosts: &[Host],
    n: usize,
) -> Vec<Box<dyn RankProcess>> {
    let mut slots = Vec::with_capacity(n);
    let mut streams = Vec::with_capacity(n);
    for _ in 0..n {
        let pair = UnixStream::pair().and_then(|(o, o_w)| Ok((o, o_w, UnixStream::pair()?)));
        let (st, slot): (Streams, Slot) = match pair {
            Ok((out, out_w, (err, err_w))) => (
                (Some(Box::new(out)), Some(Box::new(err))),
                Slot {
                    end: None,
                    out: Some(out_w),
                    err: Some(err_w),
                },
            ),
            Err(e) => {
                warn!("cannot make a pipe for a rank's output: {e}; it is dropped");
                ((None, None), Slot::default())
            }
        };
        slots.push(Mutex::new(slot));
        streams.push(st);
    }
    let shared = Arc::new(Shared {
        head,
        slots,
        sent: Mutex::new(Vec::new()),
    });
    let procs = streams
        .into_iter()
        .enumerate()
        .map(|(slot, st)| {
            Box::new(TreeRank {
                shared: Arc::clone(&shared),
                slot,
                streams: Some(st),
            }) as Box<dyn RankProcess>
        })
        .collect();
    let names: HashMap<String, usize> = hosts
        .iter()
        .enumerate()
        .map(|(i, h)| (h.addr.clone(), i))
        .collect();
    let hosts: Vec<(HostRanks, usize)> = hosts.iter().map(|h| (h.ranks.clone(), h.slot)).collect();
    let reader = Arc::clone(&shared);
    let spawned = thread::Builder::new()
        .name("nf-run-tree".into())
        .spawn(move || read_tree(stream, &reader, &names, &hosts));
    if let Err(e) = spawned {
        warn!("cannot start the thread that reads the /xcpu tree: {e}; the ranks count as lost");
        for i in 0..n {
            shared.end(i, Cause::Exit(-1));
        }
    }
    procs
}

/// Reads the head's `tree` to its end (step 3).
fn read_tree(
    stream: nf_ninep_client::File,
    shared: &Shared,
    names: &HashMap<String, usize>,
    hosts: &[(HostRanks, usize)],
) {
    let mut reader = BufReader::new(stream);
    let mut line = Vec::new();
    let why = loop {
        match read_record(&mut reader, &mut line) {
            Ok(false) => break "the tree's stream ended".to_string(),
            Ok(true) => {}
            Err(e) => break format!("reading the tree's stream: {e}"),
        }
        let Some(r) = parse_record(&line) else {
            continue;
        };
        let host = if r.node == "." {
            0
        } else if let Some(&h) = names.get(r.node) {
            h
        } else {
            continue;
        };
        let (ranks, slot) = &hosts[host];
        match r.kind {
            "out" => rank_record(shared, ranks, *slot, r.text),
            "err" => warn!(host = %ranks.name, "{}", String::from_utf8_lossy(r.text)),
            "exit" | "signal" | "failed" => {
                let word = format!("{} {}", r.kind, String::from_utf8_lossy(r.text));
                let cause = match RemoteExit::parse(&word) {
                    Some(RemoteExit::Signal(s)) => Cause::Signal(s),
                    _ => Cause::Exit(-1),
                };
                for i in 0..ranks.count {
                    if shared.end(slot + i, cause) {
                        warn!(
                            host = %ranks.name,
                            rank = ranks.first + i,
                            "the host's session ended ({word}) before the rank did; counting it as {cause}"
                        );
                    }
                }
            }
            _ => {}
        }
    };
    for i in 0..shared.slots.len() {
        if shared.end(i, Cause::Exit(-1)) {
            warn!(
                slot = i,
                "{why} before the rank's end; counting it as failed"
            );
        }
    }
}

/// A starter's record (`RANK KIND TEXT`) from the host with `ranks`, whose first rank
/// is slot `slot`; records naming another host's rank are dropped.
fn rank_record(shared: &Shared, ranks: &HostRanks, slot: usize, text: &[u8]) {
    let Some(r) = parse_record(text) else {
        return;
    };
    let Some(local) = r
        .node
        .parse::<usize>()
        .ok()
        .and_then(|rank| rank.checked_sub(ranks.first))
        .filter(|&l| l < ranks.count)
    else {
        return;
    };
    let i = slot + local;
    match r.kind {
        "out" | "err" => {
            let mut s = shared.slot(i);
            let w = if r.kind == "out" {
                &mut s.out
            } else {
                &mut s.err
            };
            let mut bytes = Vec::with_capacity(r.text.len() + 1);
            bytes.extend_from_slice(r.text);
            bytes.push(b'\n');
            if w.as_mut().is_some_and(|w| w.write_all(&bytes).is_err()) {
                *w = None;
            }
        }
        "exit" | "signal" => {
            let word = format!("{} {}", r.kind, String::from_utf8_lossy(r.text));
            let cause = match RemoteExit::parse(&word) {
                Some(RemoteExit::Code(c)) => Cause::Exit(c),
                Some(RemoteExit::Signal(s)) => Cause::Signal(s),
                None => Cause::Exit(-1),
            };
            shared.end(i, cause);
        }
        _ => {}
    }
}

/// A rank started through the tree: its slot in the shared state.
struct TreeRank {
    shared: Arc<Shared>,
    slot: usize,
    streams: Option<Streams>,
}

impl RankProcess for TreeRank {
    fn id(&self) -> Option<u32> {
        None
    }

    fn try_wait(&mut self) -> io::Result<Option<Cause>> {
        Ok(self.shared.slot(self.slot).end)
    }

    fn signal(&self, sig: i32) {
        let shared = &self.shared;
        {
            let mut sent = shared.sent.lock().unwrap_or_else(PoisonError::into_inner);
            if sent.contains(&sig) {
                return;
            }
            sent.push(sig);
        }
        // Refused where the first host's own job has ended; it still goes down.
        if let Err(e) = shared.head.ctl(&format!("kill {sig}")) {
            debug!("kill {sig} down the /xcpu tree: {e}");
        }
    }

    fn take_output(&mut self) -> Streams {
        self.streams.take().unwrap_or((None, None))
    }
}
