//! A knob's default against another value, in the same run (`nf tune --check`, and
//! the confirmation of a new choice).
//!
//! For each knob with a cached value, jobs with the default and jobs with the cached
//! value alternate (order reversed every other round), every other setting at its
//! default; per size the ratio is tuned / default median half round trip (below 1:
//! the tuned value is faster). The JSON report has the usual shape: rows tagged
//! `<knob> default` and `<knob> tuned` (the median round's row), the ratios in
//! `params.ratios`.

use nf_core::config::DEFAULT_RNDV_THRESHOLD;

use super::jobs::{medians, Env, Jobs, Trial};
use super::knobs::Knob;
use super::TuneError;
use crate::report::Report;

/// Sizes around the default and tuned single-copy thresholds (half, at, double).
fn rndv_sizes(tuned: usize) -> Vec<usize> {
    let mut s: Vec<usize> = [tuned, DEFAULT_RNDV_THRESHOLD]
        .iter()
        .flat_map(|&t| [t / 2, t, t.saturating_mul(2)])
        .filter(|&s| s > 0)
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// A default and another value of one knob, measured in alternating jobs.
pub struct Versus {
    /// Sizes measured.
    pub sizes: Vec<usize>,
    /// Median half round trips with the default, per size.
    pub default_us: Vec<f64>,
    /// The same with the other value.
    pub value_us: Vec<f64>,
    /// Each side's reports, per round (default first).
    pub reports: [Vec<Report>; 2],
}

impl Versus {
    /// The other value's score over the default's (below 1: it is faster).
    pub fn score_ratio(&self) -> f64 {
        super::pick::score(&self.value_us) / super::pick::score(&self.default_us)
    }
}

/// The default and what transport and sizes measure `knob` against `value`.
pub fn plan(knob: Knob, value: usize) -> (usize, &'static str, Vec<usize>) {
    match knob.spec() {
        Some(s) => (s.default, s.transport, s.sizes.to_vec()),
        None => (DEFAULT_RNDV_THRESHOLD, "shm", rndv_sizes(value)),
    }
}

/// Measures `knob`'s default against `value` over `rounds` alternating rounds, every
/// other setting as `env` has it.
pub fn versus(
    jobs: &mut Jobs,
    knob: Knob,
    value: usize,
    rounds: usize,
    env: &Env,
) -> Result<Versus, TuneError> {
    let (default, transport, sizes) = plan(knob, value);
    let values = [default, value];
    let trial = Trial {
        knob,
        transport,
        sizes: &sizes,
        values: &values,
    };
    let mut reports = jobs.trial(&trial, rounds, env)?;
    let value_reports = reports.pop().unwrap_or_default();
    let default_reports = reports.pop().unwrap_or_default();
    Ok(Versus {
        default_us: medians(&default_reports, &sizes),
        value_us: medians(&value_reports, &sizes),
        sizes,
        reports: [default_reports, value_reports],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rndv_sizes_surround_both_thresholds() {
        assert_eq!(
            rndv_sizes(64 << 10),
            [32 << 10, 64 << 10, 128 << 10, 2 << 20, 4 << 20, 8 << 20]
        );
        assert_eq!(
            rndv_sizes(DEFAULT_RNDV_THRESHOLD),
            [2 << 20, 4 << 20, 8 << 20]
        );
        assert!(!rndv_sizes(0).contains(&0));
    }
}
