//! `nf tune`: measures this host's single-copy threshold and caches it.
//!
//! For message sizes from one frame up to 32 MiB, both ranks time a ping-pong twice —
//! once copying through frames (fragments), once single-copy (rendezvous) — and the
//! threshold is the smallest size from which single-copy is never more than
//! `TOLERANCE` slower (median half round trip) at that size or any larger one.
//! Near-ties go to single-copy on purpose: it moves each byte once where frames
//! move it twice, which matters to the other cores of a busy node, not to the
//! ping-pong.

use anyhow::Context;
use clap::Args;
use nf_bench::pingpong::PingPong;
use nf_bench::stats::Summary;
use nf_core::tune::Tuned;
use nf_core::World;

/// Arguments of `nf tune`.
#[derive(Args)]
pub struct TuneArgs {
    /// Timed round trips per size and protocol.
    #[arg(long, default_value_t = 400)]
    pub iters: usize,
    /// Measure and print, but do not write the cache.
    #[arg(long)]
    pub dry_run: bool,
}

/// How much slower single-copy may measure and still be chosen (see module docs).
const TOLERANCE: f64 = 1.10;

const SIZES: [usize; 12] = [
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
    2 << 20,
    4 << 20,
    8 << 20,
    16 << 20,
    32 << 20,
];

/// Runs the measurement (starting 2 ranks when run by hand).
pub fn main(a: TuneArgs) -> anyhow::Result<i32> {
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(2);
    }
    let world = World::init().context("joining the job")?;
    if !world.single_copy() {
        anyhow::bail!(
            "process_vm_readv is not permitted here, so there is no single-copy threshold to tune"
        );
    }
    let pp = PingPong::new(&world)?;
    let mut rows = Vec::new();
    for size in SIZES {
        let mut medians = [0.0; 2];
        for (i, threshold) in [usize::MAX, 0].into_iter().enumerate() {
            world.set_rndv_threshold(threshold);
            world.barrier()?;
            if let Some(s) = pp.measure(size, a.iters, a.iters / 10)? {
                medians[i] = Summary::from_samples(&s).context("no samples")?.median;
            }
        }
        rows.push((size, medians[0], medians[1]));
    }
    if world.rank() == 0 {
        println!(
            "{:>10} {:>14} {:>14}",
            "size", "frames µs", "single-copy µs"
        );
        for (size, frag, single) in &rows {
            println!("{size:>10} {frag:>14.2} {single:>14.2}");
        }
        let threshold = (0..rows.len())
            .find(|&i| rows[i..].iter().all(|r| r.2 <= r.1 * TOLERANCE))
            .map(|i| rows[i].0);
        let tuned = Tuned {
            rndv_threshold: Some(threshold.unwrap_or(SIZES[SIZES.len() - 1])),
        };
        println!(
            "single-copy threshold: {} B",
            tuned.rndv_threshold.unwrap_or_default()
        );
        if !a.dry_run {
            let path = nf_core::tune::store(&tuned).context("writing the tune cache")?;
            println!("cached in {}", path.display());
        }
    }
    world.finalize()?;
    Ok(0)
}
