//! `nf exec` through a tree: the client talks to the first node only.
//!
//! 1. Connect to the first node, make a session, write its `env` (rank 0: the nodes
//!    below get their places from the tree), `clone K REST`, upload, then wait at the
//!    `clones` barrier: everything has reached every node, or the listing names those
//!    it could not reach.
//! 2. Open the first node's `tree` (the output and ends of every node,
//!    [`nf_node::xcpu::treeout`]) before `exec`, so nothing is missed; start there
//!    (`exec` goes down the tree); a Ctrl-C is `kill` there, which goes down too.
//! 3. Print each `out`/`err` record tagged with its node; each node's `exit`/`signal`
//!    is its status, `failed` says why it did not run to its end.
//!
//! So the client holds one connection whatever the number of nodes, and sends each
//! file's bytes once. Standard input for another rank than 0, or for `all`, is the
//! exception: those nodes are connected to for their `stdin` (nothing carries stdin
//! down the tree).

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::thread;

use anyhow::{bail, Context};
use nf_link::addr::parse_addr;
use nf_ninep::LOpenFlags;
use nf_ninep_client::connect::attach;
use nf_node::xcpu::remote::{RemoteExit, RemoteSession};
use nf_node::xcpu::treeout::parse_record;

use super::{connecting, forward_stdin, short_name, watch_interrupts, Plan, StdinTo};
use crate::cmd::files::ConnArgs;

/// How a tree job is asked to run.
pub(super) struct TreeRun<'a> {
    /// The job.
    pub plan: &'a Plan,
    /// How to reach the nodes.
    pub conn: &'a ConnArgs,
    /// Every node, the first one first.
    pub nodes: &'a [String],
    /// Children per node.
    pub fanout: usize,
    /// Run on the rest when some nodes cannot start.
    pub keep_going: bool,
    /// Who gets this process's stdin.
    pub stdin_to: StdinTo,
    /// Tag lines with their node.
    pub tag: bool,
}

impl TreeRun<'_> {
    /// Runs the job (the module's steps); the exit status as `nf exec` reports it.
    pub fn run(&self) -> anyhow::Result<i32> {
        let (head, ids) = self.hand_on()?;
        let tree = head.open_file("tree", LOpenFlags::RDONLY)?;
        let stdins = self.stdins(&head, &ids)?;
        let interrupts = watch_interrupts(&[&head])?;
        head.start().context("starting the job on the first node")?;
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
    fn hand_on(&self) -> anyhow::Result<(Arc<RemoteSession>, Vec<Reached>)> {
        let nodes = self.nodes;
        let first = &nodes[0];
        let root = attach(&parse_addr(first)?, &self.conn.options()).map_err(|e| {
            let named = e.names_address();
            let err = anyhow::Error::new(e);
            if named {
                err
            } else {
                err.context(format!("connecting to {first}"))
            }
        })?;
        let head =
            RemoteSession::open(root).with_context(|| format!("making a session on {first}"))?;
        // Travels with clone, and places every node below (its rank, its name).
        head.set("env", &self.plan.env_text(0, first))?;
        head.ctl(&format!("clone {} {}", self.fanout, nodes[1..].join(" ")))
            .with_context(|| format!("handing the job on from {first}"))?;
        self.plan
            .stage(&head, None)
            .with_context(|| format!("uploading to {first}"))?;
        let listing = head.read("clones").context("waiting for the tree")?;
        let (ids, failed) = parse_listing(&listing, nodes)?;
        for f in &failed {
            eprintln!("nf exec: {f}");
        }
        if !failed.is_empty() && !self.keep_going {
            let _ = head.ctl("wipe");
            bail!(
                "{} of {} nodes could not get the job (named above); nothing was run (--keep-going runs on the rest)",
                failed.len(),
                nodes.len()
            );
        }
        Ok((Arc::new(head), ids))
    }

    /// The `stdin` files `--stdin` names: the first node's here; others through a
    /// connection of their own.
    fn stdins(
        &self,
        head: &RemoteSession,
        ids: &[Reached],
    ) -> anyhow::Result<Vec<nf_ninep_client::File>> {
        let wanted = |rank: usize| match self.stdin_to {
            StdinTo::All => true,
            StdinTo::None => false,
            StdinTo::Rank(r) => r == rank,
        };
        let mut files = Vec::new();
        for Reached {
            rank,
            node,
            session,
        } in ids.iter().filter(|r| wanted(r.rank))
        {
            let file = match session {
                None => head.open_file("stdin", LOpenFlags::WRONLY)?,
                Some(id) => {
                    let root = attach(&parse_addr(node)?, &self.conn.options())
                        .map_err(|e| anyhow::anyhow!("{node}: {}", connecting(e)))?;
                    RemoteSession::existing(root, *id)
                        .open_file("stdin", LOpenFlags::WRONLY)
                        .with_context(|| format!("rank {rank}'s stdin"))?
                }
            };
            files.push(file);
        }
        Ok(files)
    }

    /// After `exec`: the nodes that could not start (named), or an error when that
    /// stops the job.
    fn not_started(&self, head: &RemoteSession) -> anyhow::Result<Vec<String>> {
        let listing = head
            .read("clones")
            .context("waiting for the tree to start")?;
        let mut not_started = Vec::new();
        for line in listing.lines().filter(|l| l.contains(" - failed")) {
            eprintln!("nf exec: {line}");
            if let Some(addr) = line.split(' ').next() {
                not_started.push(addr.to_string());
            }
        }
        if !not_started.is_empty() && !self.keep_going {
            let _ = head.ctl("kill KILL");
            bail!(
                "{} nodes could not start the job (named above); the rest were killed (--keep-going runs on the rest)",
                not_started.len()
            );
        }
        Ok(not_started)
    }

    /// Step 3: prints the records until the tree's stream ends; each rank's end.
    fn print(&self, tree: nf_ninep_client::File, not_started: &[String]) -> Vec<Option<End>> {
        let mut ends: Vec<Option<End>> = vec![None; self.nodes.len()];
        let mut reader = std::io::BufReader::new(tree);
        let mut line = Vec::new();
        let tags: Vec<String> = self.nodes.iter().map(|n| short_name(n)).collect();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    eprintln!(
                        "nf exec: reading the tree's output from {}: {e}",
                        self.nodes[0]
                    );
                    break;
                }
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            let Some(r) = parse_record(&line) else {
                continue;
            };
            let node = if r.node == "." {
                &self.nodes[0]
            } else {
                r.node
            };
            let Some(rank) = self.nodes.iter().position(|n| n == node) else {
                continue;
            };
            match r.kind {
                "out" | "err" => {
                    let mut text = Vec::with_capacity(r.text.len() + 32);
                    if self.tag {
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
    fn status(&self, ends: Vec<Option<End>>, not_started: &[String]) -> anyhow::Result<i32> {
        let mut first_failure = None;
        let mut lost = Vec::new();
        for (rank, end) in ends.into_iter().enumerate() {
            let node = &self.nodes[rank];
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
            bail!(
                "{} nodes ended without an exit status: {}",
                lost.len(),
                lost.join(", ")
            );
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
fn parse_listing(listing: &str, nodes: &[String]) -> anyhow::Result<(Vec<Reached>, Vec<String>)> {
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
            bail!("the tree listed a node that was not asked for: {line:?}");
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
