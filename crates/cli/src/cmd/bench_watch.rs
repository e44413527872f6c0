//! `nf bench watch`: a benchmark repeated over time, its tails, and whether today's
//! run differs from an earlier one, repetition by repetition (`nf_bench::watch`,
//! `nf_bench::equivalence`).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use nf_bench::params::ParamError;
use nf_bench::pingpong::{self, iters_for, PingPong};
use nf_bench::rma::{Layout, Op, Params as RmaParams};
use nf_rma::{Rma, RmaError, WorldWireup};

use super::bench_rma::route_name;
use nf_bench::watch::{self, Params, Watch};
use nf_core::World;

use super::progress::{Mode, Progress};

/// Benchmarks `nf bench watch` can repeat.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Watched {
    /// The ping-pong between ranks 0 and 1 (`nf bench pingpong`).
    Pingpong,
    /// A contiguous put by rank 0 into rank 1's memory, timed at the sender
    /// (`nf bench rma --ops put`).
    RmaPut,
    /// A contiguous get by rank 0 from rank 1's memory.
    RmaGet,
    /// A contiguous accumulate of doubles followed by a fence.
    RmaAcc,
}

impl Watched {
    /// The one-sided operation, for the rma benches.
    fn rma_op(self) -> Option<Op> {
        match self {
            Watched::Pingpong => None,
            Watched::RmaPut => Some(Op::Put),
            Watched::RmaGet => Some(Op::Get),
            Watched::RmaAcc => Some(Op::Acc),
        }
    }

    /// The name in reports.
    fn name(self) -> String {
        match self.rma_op() {
            None => "pingpong".into(),
            Some(op) => format!("rma-{}", op.name()),
        }
    }
}

/// Arguments of `nf bench watch`.
#[derive(Args)]
pub struct WatchArgs {
    /// The benchmark to repeat.
    #[arg(long, value_enum, default_value = "pingpong")]
    pub bench: Watched,
    /// Message sizes in bytes, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = super::bench::size_bytes,
        default_value = "8,65536"
    )]
    pub sizes: Vec<usize>,
    /// Timed operations per size and repetition (fewer above 64 KiB, at least 20).
    #[arg(long, default_value_t = 2_000)]
    pub iters: usize,
    /// Untimed operations before each size.
    #[arg(long, default_value_t = 100)]
    pub warmup: usize,
    /// Seconds between the starts of repetitions (fractions allowed).
    #[arg(long, default_value_t = 10.0)]
    pub interval: f64,
    /// Seconds the watch lasts.
    #[arg(long, default_value_t = 60.0)]
    pub duration: f64,
    /// An earlier watch's JSON: whether this run differs from it, each repetition's
    /// median one observation (verdict: no difference, differs or inconclusive).
    #[arg(long, value_name = "JSON")]
    pub compare_with: Option<PathBuf>,
    /// Level of each one-sided test of that comparison (its interval: 1 − 2·alpha).
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Practical-equivalence margin: median ratios between 1/(1 + this) and 1 + this
    /// count as no difference (0.05: 5 %).
    #[arg(long, default_value_t = nf_bench::equivalence::DEFAULT_MARGIN)]
    pub margin: f64,
    /// Where the report goes (`--plot`: the time series).
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

/// One rma measurement of `size` bytes (0: every size, for checking them).
fn rma_params(op: Op, size: usize, a: &WatchArgs) -> RmaParams {
    RmaParams {
        sizes: if size == 0 {
            a.sizes.clone()
        } else {
            vec![size]
        },
        iters: a.iters,
        warmup: a.warmup,
        ops: vec![op],
        layouts: vec![Layout::Contig],
    }
}

/// Runs the watch (starting 2 ranks when run by hand).
pub fn run(a: WatchArgs) -> anyhow::Result<i32> {
    let ok_secs = |x: f64| x.is_finite() && x > 0.0 && x <= 7.0 * 86_400.0;
    for (arg, secs) in [("interval", a.interval), ("duration", a.duration)] {
        if !ok_secs(secs) {
            let why = "seconds, more than 0 and at most a week";
            return Err(ParamError::new(arg, secs, why).into());
        }
    }
    if !(a.alpha > 0.0 && a.alpha < 0.5) {
        let why = "a probability between 0 and 0.5, e.g. 0.05";
        return Err(ParamError::new("alpha", a.alpha, why).into());
    }
    if !(a.margin > 0.0 && a.margin < 1.0) {
        let why = "a fraction between 0 and 1, e.g. 0.05 for 5 %";
        return Err(ParamError::new("margin", a.margin, why).into());
    }
    let pp = pingpong::Params {
        sizes: a.sizes.clone(),
        iters: a.iters,
        warmup: a.warmup,
    };
    pp.check()?;
    if let Some(op) = a.bench.rma_op() {
        rma_params(op, 0, &a).check()?;
    }
    a.out.check()?;
    // Read the earlier run before measuring, so a bad file fails at once.
    let earlier = match &a.compare_with {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            let w: Watch = serde_json::from_str(&text).with_context(|| {
                format!(
                    "{} is not the JSON report of an nf bench watch",
                    p.display()
                )
            })?;
            Some(w)
        }
        None => None,
    };
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(2);
    }
    let params = Params {
        bench: a.bench.name(),
        sizes: a.sizes.clone(),
        iters: a.iters,
        warmup: a.warmup,
        interval_s: a.interval,
        duration_s: a.duration,
    };
    let world = World::init().context("joining the job")?;
    let reps = (a.duration / a.interval).ceil().max(1.0) as u64;
    let mut progress =
        (world.rank() == 0).then(|| Progress::new("watch", reps, Mode::detect(a.out.quiet)));
    let on_rep = |k: usize| {
        if let Some(p) = &mut progress {
            p.step(&format!("repetition {}", k + 1));
        }
    };
    let result = match a.bench.rma_op() {
        None => {
            let pp = PingPong::new(&world)?;
            let route = world.route(1).map_or("none", |r| r.name());
            let sample = |size| {
                let n = iters_for(size, a.iters);
                pp.measure(size, n, a.warmup.min(n))
            };
            watch::run(&world, &params, route, sample, on_rep)?
        }
        Some(op) => {
            let wire = WorldWireup::new(&world).context("rma wire-up")?;
            let rma = Rma::new(&wire).context("joining the job's global memory")?;
            let sample = |size| -> Result<Option<Vec<f64>>, RmaError> {
                let m = nf_bench::rma::run(&rma, &rma_params(op, size, &a), |_, _, _| {})?;
                Ok(m.and_then(|m| m.into_iter().next())
                    .and_then(|m| m.sizes.into_iter().next())
                    .map(|s| s.half_rtt_us))
            };
            let w = watch::run(&world, &params, route_name(&rma), sample, on_rep)?;
            rma.finalize()?;
            w
        }
    };
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(mut w) = result {
        if let (Some(e), Some(path)) = (&earlier, &a.compare_with) {
            w.compare(e, &path.display().to_string(), a.alpha, a.margin);
        }
        print!("{}", w.to_table());
        a.out.write(&w, false, || w.to_csv())?;
        if let Some(p) = &a.out.plot {
            w.plot(p)?;
        }
    }
    world.finalize()?;
    Ok(0)
}
