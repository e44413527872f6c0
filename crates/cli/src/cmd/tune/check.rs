//! `nf tune --check`: the defaults against the cached values, in the same run.
//!
//! For each knob with a cached value, jobs with the default and jobs with the cached
//! value alternate (order reversed every other round), every other setting at its
//! default; per size the ratio is tuned / default median half round trip (below 1:
//! the tuned value is faster). The JSON report has the usual shape: rows tagged
//! `<knob> default` and `<knob> tuned` (the median round's row), the ratios in
//! `params.ratios`.

use anyhow::Context;
use nf_bench::report::Report;
use nf_core::config::DEFAULT_RNDV_THRESHOLD;

use super::jobs::{median_row, medians, Env, Jobs, Trial};
use super::knobs::Knob;
use super::TuneArgs;

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
fn plan(knob: Knob, value: usize) -> (usize, &'static str, Vec<usize>) {
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
) -> anyhow::Result<Versus> {
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

/// Runs the comparison; an error if nothing is cached.
pub fn main(a: &TuneArgs) -> anyhow::Result<i32> {
    let path = nf_core::tune::cache_path();
    let tuned = nf_core::tune::cached().unwrap_or_default();
    if tuned.settings().is_empty() {
        anyhow::bail!(
            "nothing tuned to check: no values cached in {}; run `nf tune` first",
            path.map_or("(no cache path)".into(), |p| p.display().to_string())
        );
    }
    let mut jobs = a.jobs()?;
    let mut rows = Vec::new();
    let mut ratios = Vec::new();
    // The transports measured over, for the report, e.g. `shm+tcp`.
    let mut over: Vec<&str> = Vec::new();
    println!(
        "{:<11} {:>9} {:>10} {:>10} {:>12} {:>12} {:>7}",
        "knob", "size", "default", "tuned", "default µs", "tuned µs", "ratio"
    );
    for knob in a.selected() {
        let Some(value) = knob.get(&tuned) else {
            println!("{}: not tuned, nothing to check", knob.name());
            continue;
        };
        if let Some(why) = super::unavailable(knob) {
            println!("{why}");
            continue;
        }
        let (default, transport, _) = plan(knob, value);
        if !over.contains(&transport) {
            over.push(transport);
        }
        let v = versus(&mut jobs, knob, value, a.rounds(), &Vec::new())?;
        let (sizes, d, t) = (&v.sizes, &v.default_us, &v.value_us);
        for (i, &size) in sizes.iter().enumerate() {
            let ratio = t[i] / d[i];
            println!(
                "{:<11} {size:>9} {default:>10} {value:>10} {:>12.2} {:>12.2} {ratio:>7.3}",
                knob.name(),
                d[i],
                t[i]
            );
            ratios.push(serde_json::json!({
                "knob": knob.name(), "setting": knob.var(), "size": size,
                "default": default, "tuned": value,
                "default_us": d[i], "tuned_us": t[i], "ratio": ratio,
            }));
        }
        for (case, r) in [("default", &v.reports[0]), ("tuned", &v.reports[1])] {
            rows.extend(sizes.iter().filter_map(|&s| median_row(r, s)).map(|row| {
                nf_bench::report::SizeResult {
                    case: Some(format!("{} {case}", knob.name())),
                    ..row
                }
            }));
        }
    }
    if let Some(out) = &a.json {
        let mut report = Report::new("tune-check", &over.join("+"), 2, rows);
        report.params.insert("iters".into(), a.iters.into());
        report.params.insert("rounds".into(), a.rounds.into());
        report.params.insert("ratios".into(), ratios.into());
        report
            .params
            .insert("command".into(), super::super::bench::command_line().into());
        report
            .write_json(out)
            .with_context(|| format!("writing {}", out.display()))?;
        println!("wrote {}", out.display());
    }
    Ok(0)
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
