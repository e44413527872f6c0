//! A job through a tree: the client talks to the first node only.
//!
//! 1. Connect to the first node, make a session, write its `env` (rank 0: the nodes
//!    below get their places from the tree), `clone K REST`, upload, then wait at the
//!    `clones` barrier: everything has reached every node, or the listing names those
//!    it could not reach.
//! 2. Open the first node's `tree` (the output and ends of every node,
//!    `nf_node::xcpu::treeout`) before `exec`, so nothing is missed; start there
//!    (`exec` goes down the tree); a Ctrl-C is `kill` there, which goes down too.
//! 3. Print each `out`/`err` record tagged with its node; each node's `exit`/`signal`
//!    is its status, `failed` says why it did not run to its end.
//!
//! So the client holds one connection whatever the number of nodes, and sends each
//! file's bytes once. Standard input for another rank than 0, or for `all`, is the
//! exception: those nodes are connected to for their `stdin` (nothing carries stdin
//! down the tree).

use std::io::Write;
use std::sync::Arc;
use std::thread;

use nf_link::addr::parse_addr;
use nf_ninep::LOpenFlags;
use nf_ninep_client::connect::attach;
use nf_xcpu_client::records::{parse_record, read_record};
use nf_xcpu_client::session::{RemoteExit, RemoteSession};

use crate::io::{forward_stdin, watch_interrupts};
use crate::nodes::{connecting, short_name};
use crate::{ExecError, Plan, Run};

/// A tree job.
pub(crate) struct TreeRun<'a> {
    /// The job.
    pub(crate) plan: &'a Plan,
    /// How it runs.
    pub(crate) how: &'a Run<'a>,
}

impl TreeRun<'_> {
    /// Runs the job (the module's steps); the exit status as `nf exec` reports it.
    pub(crate) fn run(&self) -> Result<i32, ExecError> {
        let (head, ids) = self.hand_on()?;
        let tree = head
            .open_file("tree", LOpenFlags::RDONLY)
            .map_err(ExecError::remote("opening the first node's tree"))?;
        let stdins = self.stdins(&head, &ids)?;
        let interrupts = watch_interrupts(&[&head])?;
        head.start()
            .map_err(ExecError::remote("starting the job on the first node"))?;
        let not_started = self.not_started(&head)?;
        if !stdins.is_empty() {
            thread::spawn(move || forward_stdin(stdins));
        }
        let ends = self.print(tree, &not_started);
        drop(interrupts);
        self.status(ends, &not_started)
    }

    /// Step 1: the first node's session, and the session of every node the tree
    /// reached, by rank.
    fn hand_on(&self) -> Result<(Arc<RemoteSession>, Vec<Reached>), ExecError> {
        let nodes = self.how.nodes;
        let first = &nodes[0];
        let addr = parse_addr(first).map_err(|e| ExecError::Usage(format!("{first}: {e}")))?;
        let root = attach(&addr, self.how.conn).map_err(|e| {
            if e.names_address() {
                ExecError::Connect(e.to_string())
            } else {
                ExecError::Connect(format!("connecting to {first}: {e}"))
            }
        })?;
        let head = RemoteSession::open(root)
            .map_err(ExecError::remote(format!("making a session on {first}")))?;
        // Travels with clone, and places every node below (its rank, its name).
        head.set("env", &self.plan.env_text(0, first))
            .map_err(ExecError::remote(format!("writing the env on {first}")))?;
        head.ctl(&format!(
            "clone {} {}",
            self.how.fanout,
            nodes[1..].join(" ")
        ))
        .map_err(ExecError::remote(format!(
            "handing the job on from {first}"
        )))?;
        self.plan
            .stage(&head, None)
            .map_err(ExecError::remote(format!("uploading to {first}")))?;
        let listing = head
            .read("clones")
            .map_err(ExecError::remote("waiting for the tree"))?;
        let (ids, failed) = parse_listing(&listing, nodes)?;
        for f in &failed {
            eprintln!("nf exec: {f}");
        }
        if !failed.is_empty() && !self.how.keep_going {
            let _ = head.ctl("wipe");
            return Err(ExecError::NodesFailed {
                failed: failed.len(),
                total: nodes.len(),
                what: "get the job",
                done: "nothing was run",
                keep_going: false,
            });
        }
        Ok((Arc::new(head), ids))
    }

    /// The `stdin` files `--stdin` names: the first node's here; others through a
    /// connection of their own.
    fn stdins(
        &self,
        head: &RemoteSession,
        ids: &[Reached],
    ) -> Result<Vec<nf_ninep_client::File>, ExecError> {
        let wanted = |rank: usize| self.how.stdin_to.includes(rank);
        let mut files = Vec::new();
        for Reached {
            rank,
            node,
            session,
        } in ids.iter().filter(|r| wanted(r.rank))
        {
            let file = match session {
                None => head
                    .open_file("stdin", LOpenFlags::WRONLY)
                    .map_err(ExecError::remote("opening the first node's stdin"))?,
                Some(id) => {
                    let addr =
                        parse_addr(node).map_err(|e| ExecError::Usage(format!("{node}: {e}")))?;
                    let root = attach(&addr, self.how.conn)
                        .map_err(|e| ExecError::Connect(format!("{node}: {}", connecting(e))))?;
                    RemoteSession::existing(root, *id)
                        .open_file("stdin", LOpenFlags::WRONLY)
                        .map_err(ExecError::remote(format!("rank {rank}'s stdin")))?
                }
            };
            files.push(file);
        }
        Ok(files)
    }

    /// After `exec`: the nodes that could not start (named), or an error when that
    /// stops the job.
    fn not_started(&self, head: &RemoteSession) -> Result<Vec<String>, ExecError> {
        let listing = head
            .read("clones")
            .map_err(ExecError::remote("waiting for the tree to start"))?;
        let mut not_started = Vec::new();
        for line in listing.lines().filter(|l| l.contains(" - failed")) {
            eprintln!("nf exec: {line}");
            if let Some(addr) = line.split(' ').next() {
                not_started.push(addr.to_string());
            }
        }
        if !not_started.is_empty() && !self.how.keep_going {
            let _ = head.ctl("kill KILL");
            return Err(ExecError::NodesFailed {
                failed: not_started.len(),
                total: self.how.nodes.len(),
                what: "start the job",
                done: "the rest were killed",
                keep_going: false,
            });
        }
        Ok(not_started)
    }

    /// Step 3: prints the records until the tree's stream ends; each rank's end.
    fn print(&self, tree: nf_ninep_client::File, not_started: &[String]) -> Vec<Option<End>> {
        let mut ends: Vec<Option<End>> = vec![None; self.how.nodes.len()];
        let mut reader = std::io::BufReader::new(tree);
        let mut line = Vec::new();
        let tags: Vec<String> = self.how.nodes.iter().map(|n| short_name(n)).collect();
        loop {
            match read_record(&mut reader, &mut line) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => {
                    eprintln!(
                        "nf exec: reading the tree's output from {}: {e}",
                        self.how.nodes[0]
                    );
                    break;
                }
            }
            let Some(r) = parse_record(&line) else {
                continue;
            };
            let node = if r.node == "." {
                &self.how.nodes[0]
            } else {
                r.node
            };
            let Some(rank) = self.how.nodes.iter().position(|n| n == node) else {
                continue;
            };
            match r.kind {
                "out" | "err" => {
                    let mut text = Vec::with_capacity(r.text.len() + 32);
                    if self.how.tag {
                        text.extend_from_slice(tags[rank].as_bytes());
                        text.extend_from_slice(b": ");
                    }
                    text.extend_from_slice(r.text);
                    text.push(b'\n');
                    let _ = if r.kind == "err" {
                        std::io::stderr().lock().write_all(&text)
                    } else {
                        std::io::stdout().lock().write_all(&text)
                    };
                }
                "exit" | "signal" => {
                    let word = format!("{} {}", r.kind, String::from_utf8_lossy(r.text));
                    ends[rank] = RemoteExit::parse(&word).map(End::Exit);
                }
                "failed" => {
                    let why = String::from_utf8_lossy(r.text).into_owned();
                    if !not_started.iter().any(|n| n == node) {
                        eprintln!("nf exec: {node}: {why}");
                    }
                    ends[rank] = Some(End::Failed);
                }
                _ => {}
            }
        }
        ends
    }

    /// The first non-zero status in rank order; an error when a started node ended
    /// without one.
    fn status(&self, ends: Vec<Option<End>>, not_started: &[String]) -> Result<i32, ExecError> {
        let mut first_failure = None;
        let mut lost = Vec::new();
        for (rank, end) in ends.into_iter().enumerate() {
            let node = &self.how.nodes[rank];
            match end {
                Some(End::Exit(RemoteExit::Code(0))) => {}
                Some(End::Exit(e)) => {
                    eprintln!("nf exec: {} (rank {rank}): {e}", short_name(node));
                    first_failure.get_or_insert(e);
                }
                Some(End::Failed) if not_started.contains(node) => {}
                Some(End::Failed) | None => lost.push(format!("{node} (rank {rank})")),
            }
        }
        if !lost.is_empty() {
            return Err(ExecError::Lost(lost));
        }
        Ok(first_failure.map_or(0, RemoteExit::status))
    }
}

/// How a node's copy ended, as its `tree` records said.
#[derive(Clone, Copy, Debug)]
enum End {
    Exit(RemoteExit),
    Failed,
}

/// A node the tree reached.
struct Reached {
    rank: usize,
    node: String,
    /// Its session; `None` on the first node (the client's own).
    session: Option<u64>,
}

/// Parses a `clones` listing into the nodes reached (the first node too), by rank,
/// and the failures.
fn parse_listing(
    listing: &str,
    nodes: &[String],
) -> Result<(Vec<Reached>, Vec<String>), ExecError> {
    let mut ids = vec![Reached {
        rank: 0,
        node: nodes[0].clone(),
        session: None,
    }];
    let mut failed = Vec::new();
    for line in listing.lines() {
        let mut words = line.splitn(3, ' ');
        let (Some(addr), Some(id)) = (words.next(), words.next()) else {
            continue;
        };
        let Some(rank) = nodes.iter().position(|n| n == addr) else {
            return Err(ExecError::StrayNode(line.into()));
        };
        match id.parse() {
            Ok(id) => ids.push(Reached {
                rank,
                node: addr.to_string(),
                session: Some(id),
            }),
            Err(_) => failed.push(line.to_string()),
        }
    }
    ids.sort_by_key(|r| r.rank);
    Ok((ids, failed))
}
