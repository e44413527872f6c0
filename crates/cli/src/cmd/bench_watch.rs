//! `nf bench watch`: a benchmark repeated over time, its tails, and whether today's
//! run differs from an earlier one (`nf_bench::watch`).

use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use nf_bench::pingpong;
use nf_bench::watch::{self, Params, Watch};
use nf_core::World;

use super::progress::{Mode, Progress};

/// Benchmarks `nf bench watch` can repeat.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Watched {
    /// The ping-pong between ranks 0 and 1 (`nf bench pingpong`).
    Pingpong,
}

/// Arguments of `nf bench watch`.
#[derive(Args)]
pub struct WatchArgs {
    /// The benchmark to repeat.
    #[arg(long, value_enum, default_value = "pingpong")]
    pub bench: Watched,
    /// Message sizes in bytes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "8,65536")]
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
    /// An earlier watch's JSON: test whether this run differs from it (Mann–Whitney U).
    #[arg(long, value_name = "JSON")]
    pub compare_with: Option<PathBuf>,
    /// Significance level of that test.
    #[arg(long, default_value_t = 0.01)]
    pub alpha: f64,
    /// Where the report goes (`--plot`: the time series).
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

/// Runs the watch (starting 2 ranks when run by hand).
pub fn run(a: WatchArgs) -> anyhow::Result<i32> {
    let ok_secs = |x: f64| x.is_finite() && x > 0.0 && x <= 7.0 * 86_400.0;
    if !ok_secs(a.interval) || !ok_secs(a.duration) {
        bail!("--interval and --duration are seconds, more than 0 and at most a week");
    }
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        bail!("--alpha is a probability between 0 and 1, e.g. 0.01");
    }
    let pp = pingpong::Params {
        sizes: a.sizes.clone(),
        iters: a.iters,
        warmup: a.warmup,
    };
    pp.check()?;
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
        bench: "pingpong".into(),
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
    let result = watch::run(&world, &params, |k| {
        if let Some(p) = &mut progress {
            p.step(&format!("repetition {}", k + 1));
        }
    })?;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(mut w) = result {
        if let (Some(e), Some(path)) = (&earlier, &a.compare_with) {
            w.compare(e, &path.display().to_string(), a.alpha);
        }
        print!("{}", w.to_table());
        if let Some(p) = &a.out.json {
            let mut v = serde_json::to_value(&w).context("encoding the report")?;
            v["command"] = super::bench::command_line().into();
            let text = serde_json::to_string(&v)?;
            std::fs::write(p, text + "\n").with_context(|| format!("writing {}", p.display()))?;
        }
        if let Some(p) = &a.out.csv {
            std::fs::write(p, w.to_csv()).with_context(|| format!("writing {}", p.display()))?;
        }
        if let Some(p) = &a.out.plot {
            w.plot(p)?;
        }
    }
    world.finalize()?;
    Ok(0)
}
