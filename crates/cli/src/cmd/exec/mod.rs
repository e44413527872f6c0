//! `nf exec`: run a program on many nodes through their `/xcpu` (XCPU's `xrx`), the
//! command line of [`nf_exec`] (which holds the steps, the tree and the sessions):
//! this module parses the arguments into its [`nf_exec::Job`] and [`nf_exec::Run`].

use std::path::PathBuf;

use clap::Args;
use nf_exec::{ExecError, Job, Plan, Run, StdinTo};

use super::files::ConnArgs;
use super::Usage;

/// Arguments of `nf exec`.
#[derive(Args, Debug)]
pub struct ExecArgs {
    /// Nodes: ADDR[,ADDR…] (tls:HOST:PORT, tcp:HOST:PORT, unix:PATH), or @FILE with
    /// one address per line. ADDR:/PATH runs in that part of a gateway (nf gateway):
    /// gw:/views/gpu places each copy on the least busy node of the view.
    pub nodes: String,
    /// The program (a local file, uploaded to every node, when it holds a /; else a
    /// command on the node's PATH), then its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<String>,
    /// Copies of the program on each node.
    #[arg(short = 'n', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub per_node: u32,
    /// More local files to upload next to the program (repeatable).
    #[arg(long = "file", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The binary for nodes whose /xcpu/arch is ARCH (repeatable), e.g.
    /// linux/aarch64=./prog.arm; nodes of other architectures are an error.
    #[arg(long = "binary", value_name = "ARCH=PATH")]
    pub binaries: Vec<String>,
    /// Extra environment, NAME=VALUE (repeatable).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Which copies get this process's standard input: a rank, `all` or `none`.
    #[arg(long, default_value = "0")]
    pub stdin: String,
    /// Run on the nodes that started when some did not (default: stop everywhere).
    #[arg(long)]
    pub keep_going: bool,
    /// Print output lines as they are, without the NODE: tag.
    #[arg(long)]
    pub no_tag: bool,
    /// Tree spawn: upload to the first node only, which hands the job on to K nodes,
    /// each to K more, streaming the files down the tree; 0 uploads to every node
    /// from here. Used when there are more than K nodes (and not with -n or --binary).
    #[arg(long, value_name = "K", default_value_t = 4)]
    pub fanout: usize,
    /// How to reach the nodes.
    #[command(flatten)]
    pub conn: ConnArgs,
}

fn parse_binaries(list: &[String]) -> anyhow::Result<Vec<(String, PathBuf)>> {
    list.iter()
        .map(|b| {
            let (arch, path) = b
                .split_once('=')
                .ok_or_else(|| Usage(format!("--binary {b:?}: use ARCH=PATH")))?;
            Ok((arch.to_string(), PathBuf::from(path)))
        })
        .collect()
}

/// A usage error of the library as `nf`'s usage error (its exit status), others as
/// they are.
fn usage(e: ExecError) -> anyhow::Error {
    match e {
        ExecError::Usage(why) => Usage(why).into(),
        e => e.into(),
    }
}

/// Runs `nf exec`.
pub fn main(a: ExecArgs) -> anyhow::Result<i32> {
    let nodes = nf_exec::nodes::parse_list(&a.nodes).map_err(usage)?;
    let binaries = parse_binaries(&a.binaries)?;
    let stdin_to = StdinTo::parse(&a.stdin).map_err(usage)?;
    let (program, args) = a.command.split_first().expect("clap requires a command");
    let job = Job {
        program: program.clone(),
        args: args.to_vec(),
        binaries,
        files: a.files.clone(),
        env: a.env.clone(),
        per_node: a.per_node as usize,
    };
    let plan = Plan::new(job, nodes.len()).map_err(usage)?;
    let conn = a.conn.options();
    let how = Run {
        nodes: &nodes,
        conn: &conn,
        fanout: a.fanout,
        keep_going: a.keep_going,
        stdin_to,
        tag: !a.no_tag,
    };
    nf_exec::run(plan, &how).map_err(usage)
}
