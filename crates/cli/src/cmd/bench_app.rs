//! `nf bench app`: the application probe — a distributed matrix multiply over global
//! memory, GFLOP/s and parallel efficiency from 1 rank up (`nf_bench::app`).

use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use nf_bench::app::{self, Params, Via};
use nf_core::World;
use nf_link::addr::{default_socket, parse_addr, Addr};
use nf_ninep_client::connect::{attach, ConnectOptions};
use nf_rma::{Rma, WorldWireup};

use super::progress::{Mode, Progress};
use super::Usage;

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

/// That rank 0's matrices fit in this host's available memory (a typo in `--n` is an
/// error, not an out-of-memory kill).
fn check_memory(p: &Params) -> anyhow::Result<()> {
    let need = p.rank0_bytes();
    let avail = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemAvailable:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u128>().ok())
            .map(|kib| kib * 1024)
    });
    match avail {
        Some(avail) if need > avail => bail!(Usage(format!(
            "--n {} needs {:.1} GiB on rank 0 (its rows of A, B and C in the smallest team), \
             but this host has {:.1} GiB available: use a smaller --n, or --teams without 1",
            p.n,
            need as f64 / (1u64 << 30) as f64,
            avail as f64 / (1u64 << 30) as f64
        ))),
        _ => Ok(()),
    }
}

/// That no team is larger than the job.
fn check_teams(teams: &[usize], size: usize) -> anyhow::Result<()> {
    match teams.iter().find(|&&t| t > size) {
        Some(big) => bail!(Usage(format!(
            "--teams has {big} ranks but the job has {size} (nf run -n {big})"
        ))),
        None => Ok(()),
    }
}

/// Runs the probe (starting `--ranks` ranks when run by hand).
pub fn run(a: AppArgs) -> anyhow::Result<i32> {
    if a.n == 0 || a.panel == 0 || a.reps == 0 || a.ranks == 0 || a.via.is_empty() {
        bail!(Usage(
            "--n, --panel, --reps, --ranks and --via must be at least 1".into()
        ));
    }
    let mut via = a.via.clone();
    via.dedup();
    if a.out.plot.is_some() {
        bail!(Usage(
            "nf bench app draws no plot; use --json and `nf bench report`".into()
        ));
    }
    a.out.check()?;
    let node = match &a.node {
        Some(s) => Some(parse_addr(s).with_context(|| format!("--node {s}"))?),
        None => None,
    };
    if let Some(t) = &a.teams {
        if t.is_empty() || t.windows(2).any(|w| w[0] >= w[1]) || t[0] == 0 {
            bail!(Usage(
                "--teams must be ascending sizes of at least 1, e.g. 1,2,4".into()
            ));
        }
    }
    // What a job of `size` ranks would run, checked (teams, memory).
    let params_for = |size: usize| -> anyhow::Result<Params> {
        let teams = a.teams.clone().unwrap_or_else(|| app::default_teams(size));
        check_teams(&teams, size)?;
        let p = Params {
            n: a.n,
            panel: a.panel,
            reps: a.reps,
            teams,
            via: via.clone(),
        };
        check_memory(&p)?;
        Ok(p)
    };
    if !super::run::under_launcher()? {
        // Started by hand, the job's size is known now: refuse before starting ranks.
        params_for(a.ranks)?;
        return super::run::relaunch_self(a.ranks);
    }
    let world = World::init().context("joining the job")?;
    let params = params_for(world.size())?;
    let teams = params.teams.clone();
    let wire = WorldWireup::new(&world).context("rma wire-up")?;
    let rma = Rma::new(&wire).context("joining the job's global memory")?;
    // Files are read only from this node's procs; with others in a team, the probe
    // says so (without trying a server first).
    let largest = teams.last().copied().unwrap_or(1);
    let one_node = (0..largest).all(|q| rma.same_node(q));
    let root = if params.via.contains(&Via::Files) && largest > 1 && one_node {
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
