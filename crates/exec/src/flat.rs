//! A job without a tree: every node connected to from here, every session staged from
//! here (steps 2 to 5 of the crate docs).

use std::sync::{Arc, Mutex};
use std::thread;

use nf_ninep::LOpenFlags;
use nf_ninep_client::connect::ConnectOptions;
use nf_xcpu_client::session::{RemoteExit, RemoteSession};

use crate::io::{copy_lines, forward_stdin, watch_interrupts};
use crate::plan::{Copy, Plan};
use crate::{ExecError, Run, StdinTo};

/// What one node's set-up gave.
struct NodeSetup {
    node: String,
    result: Result<Vec<Copy>, String>,
}

/// Sets up every node at once, then runs the copies (or wipes them when nodes failed).
pub(crate) fn run(plan: &Arc<Plan>, how: &Run<'_>) -> Result<i32, ExecError> {
    let nodes = how.nodes;
    let setups = set_up(plan, how.conn, nodes);
    let mut copies = Vec::new();
    let mut failed = Vec::new();
    for s in setups {
        match s.result {
            Ok(c) => copies.extend(c),
            Err(why) => failed.push(format!("{}: {why}", s.node)),
        }
    }
    for f in &failed {
        eprintln!("nf exec: {f}");
    }
    if !failed.is_empty() && (!how.keep_going || copies.is_empty()) {
        for c in &copies {
            let _ = c.session.ctl("wipe");
        }
        return Err(ExecError::NodesFailed {
            failed: failed.len(),
            total: nodes.len(),
            what: "start the job",
            done: "nothing was run",
            keep_going: how.keep_going,
        });
    }
    copies.sort_by_key(|c| c.rank);
    run_copies(copies, how.stdin_to, how.tag)
}

/// Step 2, every node at once.
fn set_up(plan: &Arc<Plan>, conn: &ConnectOptions, nodes: &[String]) -> Vec<NodeSetup> {
    let per_node = plan.job().per_node;
    let handles: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let plan = Arc::clone(plan);
            let conn = conn.clone();
            let node = node.clone();
            thread::spawn(move || {
                let result = plan.setup(&conn, &node, i * per_node);
                NodeSetup { node, result }
            })
        })
        .collect();
    handles
        .into_iter()
        .zip(nodes)
        .map(|(h, node)| {
            h.join().unwrap_or_else(|_| NodeSetup {
                node: node.clone(),
                result: Err("its set-up thread panicked".into()),
            })
        })
        .collect()
}

/// Steps 4 and 5.
fn run_copies(copies: Vec<Copy>, stdin_to: StdinTo, tag: bool) -> Result<i32, ExecError> {
    let out = Arc::new(Mutex::new(()));
    let mut waits = Vec::new();
    let mut pumps = Vec::new();
    let mut stdins = Vec::new();
    for c in &copies {
        let open = |name: &str, flags| {
            c.session
                .open_file(name, flags)
                .map_err(ExecError::remote(format!("opening {name} on {}", c.tag)))
        };
        let wait = open("wait", LOpenFlags::RDONLY)?;
        for (name, to_err) in [("stdout", false), ("stderr", true)] {
            let f = open(name, LOpenFlags::RDONLY)?;
            let prefix = if tag {
                format!("{}: ", c.tag)
            } else {
                String::new()
            };
            let out = Arc::clone(&out);
            pumps.push(thread::spawn(move || copy_lines(f, &prefix, to_err, &out)));
        }
        let stdin = open("stdin", LOpenFlags::WRONLY)?;
        if stdin_to.includes(c.rank) {
            stdins.push(stdin);
        }
        waits.push(wait);
    }
    // Watching before anything starts: a Ctrl-C from here on reaches the jobs.
    let sessions: Vec<&RemoteSession> = copies.iter().map(|c| &*c.session).collect();
    let interrupts = watch_interrupts(&sessions)?;
    for c in &copies {
        c.session
            .start()
            .map_err(ExecError::remote(format!("starting the job on {}", c.tag)))?;
    }
    if !stdins.is_empty() {
        thread::spawn(move || forward_stdin(stdins));
    }
    let mut first_failure: Option<(usize, RemoteExit)> = None;
    let mut lost = Vec::new();
    for (c, wait) in copies.iter().zip(waits) {
        match RemoteSession::read_wait(wait) {
            Ok(RemoteExit::Code(0)) => {}
            Ok(e) => {
                if first_failure.is_none() {
                    first_failure = Some((c.rank, e));
                }
                eprintln!("nf exec: {} (rank {}): {e}", c.tag, c.rank);
            }
            Err(e) => lost.push(format!("{} (rank {}): {e}", c.tag, c.rank)),
        }
    }
    for p in pumps {
        let _ = p.join();
    }
    drop(interrupts);
    if !lost.is_empty() {
        return Err(ExecError::Lost(lost));
    }
    Ok(first_failure.map_or(0, |(_, e)| e.status()))
}
