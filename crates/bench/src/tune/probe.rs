//! The measuring side of tuning: what runs inside a 2-rank job. `nf tune` started
//! by hand runs these as child jobs (`nf tune --probe`, hidden) and reads the report
//! rank 0 writes; under a launcher it runs the single-copy measurement itself.

use std::path::Path;

use crate::pingpong::{iters_for, PingPong};
use crate::report::{Report, SizeResult};
use nf_core::World;

use super::TuneError;

/// What a child job measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A ping-pong over the given sizes with the job's settings.
    Pingpong,
    /// Copying through frames against single copy, in one job (`set_rndv_threshold`).
    Rndv,
}

impl Probe {
    /// Its name on the command line (`--probe`).
    pub fn name(self) -> &'static str {
        match self {
            Probe::Pingpong => "pingpong",
            Probe::Rndv => "rndv",
        }
    }

    /// The probe named `name`.
    pub fn from_name(name: &str) -> Option<Probe> {
        [Probe::Pingpong, Probe::Rndv]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// Sizes of the single-copy measurement: from one default frame up to 32 MiB.
pub const RNDV_SIZES: [usize; 12] = [
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

/// Cases of the single-copy report's rows.
pub const FRAMES: &str = "frames";
/// See [`FRAMES`].
pub const SINGLE_COPY: &str = "single-copy";

/// Runs `probe` as a rank of the job; rank 0 writes its report to `out`.
pub fn main(
    probe: Probe,
    sizes: &[usize],
    iters: usize,
    rounds: usize,
    out: &Path,
) -> Result<(), TuneError> {
    let world = World::init()?;
    let report = match probe {
        Probe::Pingpong => pingpong(&world, sizes, iters)?,
        Probe::Rndv => rndv(&world, iters, rounds)?,
    };
    if let Some(r) = report {
        r.write_json(out).map_err(|source| TuneError::Report {
            what: format!("the {} probe", probe.name()),
            source,
        })?;
    }
    world.finalize()?;
    Ok(())
}

/// Untimed round trips before each size: a tenth of the timed ones.
fn warmup(iters: usize) -> usize {
    iters / 10
}

/// Rank 0's report, over the route rank 0 uses to reach rank 1; its params name that
/// route in full (`route`, e.g. `tcp/ofi@65536`) and rank 1's host (`peer_host`).
fn report(world: &World, rows: Vec<SizeResult>) -> Option<Report> {
    let transport = world.route(1).map_or("none", |r| r.name());
    (world.rank() == 0).then(|| {
        let mut r = Report::new("tune", transport, world.size(), rows);
        let route = world.route_description(1).unwrap_or_default();
        r.params.insert(ROUTE.into(), route.into());
        let peer = world.host_of(1).unwrap_or_default();
        r.params.insert(PEER_HOST.into(), peer.into());
        r
    })
}

/// The report's param naming the route to rank 1.
pub const ROUTE: &str = "route";
/// The report's param naming rank 1's host identity.
pub const PEER_HOST: &str = "peer_host";

/// A ping-pong over `sizes` (fewer round trips for large ones, as `nf bench pingpong`).
fn pingpong(world: &World, sizes: &[usize], iters: usize) -> Result<Option<Report>, TuneError> {
    let pp = PingPong::new(world)?;
    let mut rows = Vec::new();
    for &size in sizes {
        let n = iters_for(size, iters);
        if let Some(s) = pp.measure(size, n, warmup(n))? {
            rows.extend(SizeResult::from_samples(size, &s));
        }
    }
    Ok(report(world, rows))
}

/// Copying through frames against single copy over [`RNDV_SIZES`], alternating the two
/// within each size and their order between rounds; rows are tagged [`FRAMES`] or
/// [`SINGLE_COPY`]. Without single copy (`process_vm_readv` not permitted) the
/// report has no rows and says why in `params.skipped`.
pub fn rndv(world: &World, iters: usize, rounds: usize) -> Result<Option<Report>, TuneError> {
    if !world.single_copy() {
        let r = report(world, Vec::new()).map(|mut r| {
            r.params.insert(
                "skipped".into(),
                "process_vm_readv is not permitted here, so there is no single-copy threshold"
                    .into(),
            );
            r
        });
        return Ok(r);
    }
    let pp = PingPong::new(world)?;
    // samples[size][0: frames, 1: single copy]
    let mut samples = vec![[Vec::new(), Vec::new()]; RNDV_SIZES.len()];
    for round in 0..rounds {
        for (i, &size) in RNDV_SIZES.iter().enumerate() {
            let mut order = [(0, usize::MAX), (1, 0)];
            if round % 2 == 1 {
                order.reverse();
            }
            for (which, threshold) in order {
                world.set_rndv_threshold(threshold);
                world.barrier()?;
                if let Some(s) = pp.measure(size, iters, warmup(iters))? {
                    samples[i][which].extend(s);
                }
            }
        }
    }
    let mut rows = Vec::new();
    for (&size, [frames, single]) in RNDV_SIZES.iter().zip(&samples) {
        for (case, s) in [(FRAMES, frames), (SINGLE_COPY, single)] {
            rows.extend(SizeResult::from_samples(size, s).map(|r| SizeResult {
                case: Some(case.into()),
                ..r
            }));
        }
    }
    Ok(report(world, rows))
}

/// The rows `(size, frames µs, single copy µs)` of a single-copy report, by size.
pub fn rndv_rows(r: &Report) -> Vec<(usize, f64, f64)> {
    let median = |size: usize, case: &str| {
        r.results
            .iter()
            .find(|x| x.size == size && x.case.as_deref() == Some(case))
            .map(|x| x.median_us)
    };
    RNDV_SIZES
        .iter()
        .filter_map(|&s| Some((s, median(s, FRAMES)?, median(s, SINGLE_COPY)?)))
        .collect()
}
