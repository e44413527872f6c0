//! The exec planner: runs a program on many nodes through their `/xcpu` (XCPU's
//! `xrx`), from here or down a fan-out tree. `nf exec` is its command line.
//!
//! Steps:
//!
//! 1. Parse the node list ([`nodes::parse_list`]) and check every local file
//!    ([`Plan::new`]) before connecting anywhere.
//! 2. For every node at once (a thread each): connect, read `/xcpu/arch`, pick the
//!    binary, and make `per_node` sessions; each uploads the binary and files into its
//!    `fs/`, writes `argv`, `env` (`NF_EXEC_RANK`, `NF_EXEC_SIZE`, `NF_EXEC_NODE`, the
//!    job's) and opens `stdout`, `stderr`, `wait`.
//! 3. If any node failed, stop (every session made is wiped; the sessions go when this
//!    process lets go of them) and report each failing node, unless `keep_going`,
//!    which runs on the rest.
//! 4. Start every session (`exec`), forward stdin to the sessions [`StdinTo`] names,
//!    print output lines tagged `NODE: ` (`NODE#K: ` with several copies per node), and
//!    turn Ctrl-C into `kill INT` (a second one: `kill KILL`).
//! 5. The exit status: the first non-zero one in rank order, its node named on stderr
//!    (signals: 128 + SIG); 0 when every copy exited 0.
//!
//! With more nodes than the fan-out (and one copy per node, one binary), steps 2 to 5
//! go through a tree instead (`tree.rs`): only the first node is connected to and
//! uploaded to; it hands everything on (`ctl clone`), and the output and exits of every
//! node come back up the same tree.
//!
//! The runner prints the copies' output on this process's stdout and stderr, and one
//! `nf exec: ` line on stderr per node that failed, as `nf exec` shows them.

mod error;
mod flat;
mod io;
pub mod nodes;
mod plan;
pub mod rank;
mod tree;

use std::sync::Arc;

use nf_ninep_client::connect::ConnectOptions;

pub use error::ExecError;
pub use plan::{Job, Plan};
pub use rank::RankSession;

/// Which copies get this process's standard input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdinTo {
    /// None: every copy's stdin is closed at once.
    None,
    /// Every copy.
    All,
    /// The copy of this rank.
    Rank(usize),
}

impl StdinTo {
    /// Parses `none`, `all` or a rank.
    pub fn parse(s: &str) -> Result<StdinTo, ExecError> {
        match s {
            "none" => Ok(StdinTo::None),
            "all" => Ok(StdinTo::All),
            r => r
                .parse()
                .map(StdinTo::Rank)
                .map_err(|_| ExecError::Usage(format!("--stdin {r:?}: use a rank, all or none"))),
        }
    }

    /// Whether the copy of `rank` gets stdin.
    pub fn includes(self, rank: usize) -> bool {
        match self {
            StdinTo::All => true,
            StdinTo::None => false,
            StdinTo::Rank(r) => r == rank,
        }
    }
}

/// How a planned job is run.
pub struct Run<'a> {
    /// Every node, the first one first.
    pub nodes: &'a [String],
    /// How to reach the nodes.
    pub conn: &'a ConnectOptions,
    /// Children per node of the tree; 0: no tree, every node from here.
    pub fanout: usize,
    /// Run on the rest when some nodes cannot start.
    pub keep_going: bool,
    /// Who gets this process's stdin.
    pub stdin_to: StdinTo,
    /// Tag output lines with their node.
    pub tag: bool,
}

impl Run<'_> {
    /// Whether `plan` goes down a tree: more nodes than the fan-out, one copy per
    /// node, one binary, and every node a plain address (not a gateway's part).
    fn tree(&self, plan: &Plan) -> bool {
        let plain = self
            .nodes
            .iter()
            .all(|n| nodes::target(n).is_ok_and(|(_, aname)| aname.is_empty()));
        self.fanout > 0
            && self.nodes.len() > self.fanout
            && plan.job().per_node == 1
            && plan.job().binaries.is_empty()
            && plain
    }
}

/// Runs `plan` on the nodes of `how` (the module's steps); the exit status as `nf
/// exec` reports it.
pub fn run(plan: Plan, how: &Run<'_>) -> Result<i32, ExecError> {
    if how.tree(&plan) {
        return tree::TreeRun { plan: &plan, how }.run();
    }
    flat::run(&Arc::new(plan), how)
}
