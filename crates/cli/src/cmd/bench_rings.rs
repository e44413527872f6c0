//! `nf bench rings`: HPCC's b_eff method — every pair's ping-pong, natural and random
//! rings (`nf_bench::rings`).

use anyhow::{bail, Context};
use clap::Args;
use nf_bench::heatmap::{plot_heatmaps, Panel};
use nf_bench::rings::{self, Params};
use nf_core::World;

use super::progress::{Mode, Progress};
use super::Usage;

/// Arguments of `nf bench rings`.
#[derive(Args)]
pub struct RingsArgs {
    /// Bytes of the latency messages.
    #[arg(long, default_value_t = 8)]
    pub lat_size: usize,
    /// Bytes of the bandwidth messages (HPCC: 2,000,000).
    #[arg(long, default_value_t = 2_000_000)]
    pub bw_size: usize,
    /// Timed latency repetitions per pair and ring.
    #[arg(long, default_value_t = 1_000)]
    pub iters: usize,
    /// Timed bandwidth repetitions per pair and ring.
    #[arg(long, default_value_t = 20)]
    pub bw_iters: usize,
    /// Untimed repetitions before each measurement.
    #[arg(long, default_value_t = 100)]
    pub warmup: usize,
    /// Random ring orderings.
    #[arg(long, default_value_t = 5)]
    pub orderings: usize,
    /// Seed of the random orderings (the same seed gives the same rings).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Ranks to start when run by hand (under a launcher, its ranks).
    #[arg(short = 'n', long, default_value_t = 4)]
    pub ranks: usize,
    /// Where the report goes (`--plot`: the per-pair heat maps).
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

/// Runs the benchmark (starting `--ranks` ranks when run by hand).
pub fn run(a: RingsArgs) -> anyhow::Result<i32> {
    if a.iters == 0 || a.bw_iters == 0 || a.lat_size == 0 || a.bw_size == 0 {
        bail!(Usage(
            "--iters, --bw-iters, --lat-size and --bw-size must be at least 1".into()
        ));
    }
    if a.ranks < 2 {
        bail!(Usage(
            "--ranks must be at least 2: rings exchange between ranks".into()
        ));
    }
    a.out.check()?;
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(a.ranks);
    }
    let params = Params {
        lat_size: a.lat_size,
        bw_size: a.bw_size,
        iters: a.iters,
        bw_iters: a.bw_iters,
        warmup: a.warmup,
        orderings: a.orderings,
        seed: a.seed,
    };
    let world = World::init().context("joining the job")?;
    if world.size() < 2 {
        bail!(Usage(
            "nf bench rings needs at least 2 ranks (nf run -n 2 or more)".into()
        ));
    }
    let n = world.size();
    let mut progress = (world.rank() == 0).then(|| {
        Progress::new(
            "rings",
            (n + 1 + a.orderings) as u64,
            Mode::detect(a.out.quiet),
        )
    });
    let result = rings::run(&world, &params, |step| {
        if let Some(p) = &mut progress {
            p.step(step);
        }
    })?;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(r) = result {
        print!("{}", r.to_table());
        a.out.write(&r, true, || r.to_csv())?;
        if let Some(p) = &a.out.plot {
            let lat = format!("pair latency, µs ({} B)", a.lat_size);
            let bw = format!("pair bandwidth, MB/s ({} B)", a.bw_size);
            plot_heatmaps(
                &format!("nf bench rings: {n} ranks, every pair"),
                &[
                    Panel {
                        caption: &lat,
                        values: &r.pair_latency_us,
                        higher_is_better: false,
                    },
                    Panel {
                        caption: &bw,
                        values: &r.pair_bandwidth_mb_s,
                        higher_is_better: true,
                    },
                ],
                p,
            )?;
        }
    }
    world.finalize()?;
    Ok(0)
}
