//! `nf bench app`: the application probe — a distributed matrix multiply over global
//! memory, GFLOP/s and parallel efficiency from 1 rank up (`nf_bench::app`).

use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use nf_bench::app::{self, Params, Via};
use nf_core::World;
use nf_node::addr::{default_socket, parse_addr, Addr};
use nf_node::connect::{attach, ConnectOptions};
use nf_rma::{Rma, WorldWireup};

use super::progress::{Mode, Progress};

/// Arguments of `nf bench app`.
#[derive(Args)]
pub struct AppArgs {
    /// Matrix order (C = A·B, n × n doubles).
    #[arg(long, default_value_t = 2048)]
    pub n: usize,
    /// Most rows of B fetched at once (one panel; the next is fetched while this one
    /// is multiplied).
    #[arg(long, default_value_t = 256)]
    pub panel: usize,
    /// Timed repetitions per team size and way (the best is reported).
    #[arg(long, default_value_t = 3)]
    pub reps: usize,
    /// Team sizes, ascending (default 1, 2, 4, … and the job's size).
    #[arg(long, value_delimiter = ',')]
    pub teams: Option<Vec<usize>>,
    /// How other ranks' blocks are read: direct (one-sided gets), files (the node's
    /// /mem files over 9P), or both, alternating.
    #[arg(long, value_delimiter = ',', default_value = "direct")]
    pub via: Vec<Via>,
    /// The node's 9P server for `--via files` (default: shm beside nf serve's default
    /// socket).
    #[arg(long)]
    pub node: Option<String>,
    /// Ranks to start when run by hand (under a launcher, its ranks).
    #[arg(short = 'n', long, default_value_t = 2)]
    pub ranks: usize,
    /// Where the report goes (`--plot` is not drawn by this bench).
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

/// How long one 9P read may take before the probe gives up on the server.
const NODE_TIMEOUT: Duration = Duration::from_secs(30);

/// That no team is larger than the job.
fn check_teams(teams: &[usize], size: usize) -> anyhow::Result<()> {
    match teams.iter().find(|&&t| t > size) {
        Some(big) => bail!("--teams has {big} ranks but the job has {size} (nf run -n {big})"),
        None => Ok(()),
    }
}

/// Runs the probe (starting `--ranks` ranks when run by hand).
pub fn run(a: AppArgs) -> anyhow::Result<i32> {
    if a.n == 0 || a.panel == 0 || a.reps == 0 || a.ranks == 0 || a.via.is_empty() {
        bail!("--n, --panel, --reps, --ranks and --via must be at least 1");
    }
    let mut via = a.via.clone();
    via.dedup();
    if a.out.plot.is_some() {
        bail!("nf bench app draws no plot; use --json and `nf bench report`");
    }
    a.out.check()?;
    let node = match &a.node {
        Some(s) => Some(parse_addr(s).with_context(|| format!("--node {s}"))?),
        None => None,
    };
    if let Some(t) = &a.teams {
        if t.is_empty() || t.windows(2).any(|w| w[0] >= w[1]) || t[0] == 0 {
            bail!("--teams must be ascending sizes of at least 1, e.g. 1,2,4");
        }
    }
    let under = super::run::under_launcher()?;
    // Started by hand, the job's size is known now: refuse before starting ranks.
    let size = if under { None } else { Some(a.ranks) };
    if let (Some(size), Some(t)) = (size, &a.teams) {
        check_teams(t, size)?;
    }
    if !under {
        return super::run::relaunch_self(a.ranks);
    }
    let world = World::init().context("joining the job")?;
    let teams = a
        .teams
        .clone()
        .unwrap_or_else(|| app::default_teams(world.size()));
    check_teams(&teams, world.size())?;
    let wire = WorldWireup::new(&world).context("rma wire-up")?;
    let rma = Rma::new(&wire).context("joining the job's global memory")?;
    // Files are read only from this node's procs; with others in a team, the probe
    // says so (without trying a server first).
    let largest = teams.last().copied().unwrap_or(1);
    let one_node = (0..largest).all(|q| rma.same_node(q));
    let root = if via.contains(&Via::Files) && largest > 1 && one_node {
        let addr = node.unwrap_or_else(|| {
            let mut p = default_socket().into_os_string();
            p.push(".shm");
            Addr::Shm(p.into())
        });
        let opts = ConnectOptions::new(None, None, Some(NODE_TIMEOUT));
        Some(attach(&addr, &opts).with_context(|| {
            format!("--via files reads through the node's 9P server; attaching to {addr}")
        })?)
    } else {
        None
    };
    let params = Params {
        n: a.n,
        panel: a.panel,
        reps: a.reps,
        teams: teams.clone(),
        via,
    };
    let mut progress = (world.rank() == 0)
        .then(|| Progress::new("app", teams.len() as u64, Mode::detect(a.out.quiet)));
    let report = app::run(&world, &rma, &params, root.as_ref(), |step| {
        if let Some(p) = &mut progress {
            p.step(step);
        }
    })?;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(r) = report {
        print!("{}", r.to_table());
        a.out.write(&r, true, || r.to_csv())?;
    }
    drop(root);
    rma.finalize()?;
    world.finalize()?;
    Ok(0)
}
