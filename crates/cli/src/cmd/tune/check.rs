//! `nf tune --check`: the defaults against the cached values, in the same run, printed
//! (the measuring is [`nf_bench::tune::check`]).
//!
//! For each knob with a cached value, jobs with the default and jobs with the cached
//! value alternate (order reversed every other round), every other setting at its
//! default; per size the ratio is tuned / default median half round trip (below 1:
//! the tuned value is faster). The JSON report has the usual shape: rows tagged
//! `<knob> default` and `<knob> tuned` (the median round's row), the ratios in
//! `params.ratios`.

use anyhow::Context;
use nf_bench::report::Report;
use nf_bench::tune::check::{plan, versus};
use nf_bench::tune::jobs::median_row;
use nf_bench::tune::{unavailable, TuneError};

use super::TuneArgs;

/// Runs the comparison; an error if nothing is cached.
pub fn main(a: &TuneArgs) -> anyhow::Result<i32> {
    let path = nf_core::tune::cache_path();
    let tuned = nf_core::tune::cached().unwrap_or_default();
    if tuned.settings().is_empty() {
        return Err(TuneError::NothingCached(path).into());
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
        if let Some(why) = unavailable(knob) {
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
