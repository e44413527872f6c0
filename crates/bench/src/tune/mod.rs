//! Tuning: measures this host's best values of five settings, and the network route
//! between two hosts, so they can be cached (`nf tune` is the command line over it).
//!
//! | knob | setting | measured by |
//! |---|---|---|
//! | `frame` | `NF_SHM_FRAME_SIZE` | shm ping-pong, 1 KiB … 512 KiB |
//! | `fast` | `NF_SHM_FAST_LIMIT` | shm ping-pong, 8 … 400 B |
//! | `rndv` | `NF_RNDV_THRESHOLD` | frames against single copy in one job, 16 KiB … 32 MiB |
//! | `tcp-hold` | `NF_TCP_HOT_US` | tcp ping-pong on loopback, 8 B … 64 KiB |
//! | `ofi-packet` | `NF_OFI_PACKET` | ofi ping-pong on loopback, 1 KiB … 1 MiB |
//!
//! | module | job |
//! |---|---|
//! | [`knobs`] | the knobs' settings, values tried and sizes |
//! | [`probe`] | what runs inside a measuring job (a rank's side) |
//! | [`jobs`] | the measuring jobs: one per value and round, alternating |
//! | [`pick`] | the choice rules: scores, ties to the default, the single-copy threshold |
//! | [`check`] | a default against another value in the same run |
//! | [`route`] | the network route between two hosts (`NF_NET_ROUTE`) |
//!
//! Rules:
//!
//! 1. Each value is a child job of 2 ranks ([`jobs`]), started through the caller's
//!    launcher; jobs start from the defaults plus the values this run already chose.
//! 2. A value other than the default is kept only if it wins again in new jobs against
//!    the default alone, by [`CONFIRM`] ([`confirm`]): on a shared or virtual machine
//!    one trial can be a different regime from the next.
//! 3. Under a launcher (`mpirun nf tune`) the job is already there and only the
//!    single-copy threshold can be measured ([`probe::rndv`]).
//! 4. Choices are cached with [`cache`], keeping earlier values of other knobs.

pub mod check;
mod error;
pub mod jobs;
pub mod knobs;
pub mod pick;
pub mod probe;
pub mod route;

use std::path::PathBuf;

use nf_core::tune::Tuned;

pub use error::{LaunchFailure, TuneError};
use jobs::{Env, Jobs, Trial};
use knobs::Knob;
use probe::Probe;

use crate::report::Report;

/// Most a value's time may be of the default's, in the confirmation, to be kept.
pub const CONFIRM: f64 = 0.97;

/// Why a knob cannot be measured here, if it cannot (ofi without libfabric).
pub fn unavailable(knob: Knob) -> Option<String> {
    let ofi = knob.spec().is_some_and(|s| s.transport == "ofi");
    ofi.then(nf_transport::ofi::available)
        .and_then(Result::err)
        .map(|e| {
            format!(
                "{}: skipped, the ofi transport is unavailable here ({e}); not measured",
                knob.name()
            )
        })
}

/// Caches `found`, keeping values cached earlier for the knobs it lacks; the cache's path.
pub fn cache(found: &Tuned) -> Result<PathBuf, TuneError> {
    let all = nf_core::tune::cached().unwrap_or_default().updated(found);
    nf_core::tune::store(&all).map_err(TuneError::Cache)
}

/// One knob's ping-pong trial: every value's medians and score.
pub struct KnobTrial {
    /// The knob.
    pub knob: Knob,
    /// `NF_TRANSPORTS` of its jobs.
    pub transport: &'static str,
    /// Message sizes.
    pub sizes: &'static [usize],
    /// The values tried.
    pub values: &'static [usize],
    /// Per value, the median over rounds of each size's median half round trip, µs.
    pub times: Vec<Vec<f64>>,
    /// Per value, its score ([`pick::score`]).
    pub scores: Vec<f64>,
    /// The value the trial picked ([`pick::pick`]).
    pub picked: usize,
}

/// Measures `knob` (not [`Knob::Rndv`]: `None`) over `rounds`, every other setting
/// as `env` has it.
pub fn trial(
    jobs: &mut Jobs,
    knob: Knob,
    rounds: usize,
    env: &Env,
) -> Result<Option<KnobTrial>, TuneError> {
    let Some(spec) = knob.spec() else {
        return Ok(None);
    };
    let t = Trial {
        knob,
        transport: spec.transport,
        sizes: spec.sizes,
        values: spec.candidates,
    };
    let reports = jobs.trial(&t, rounds, env)?;
    let times: Vec<Vec<f64>> = reports
        .iter()
        .map(|r| jobs::medians(r, spec.sizes))
        .collect();
    let scores: Vec<f64> = times.iter().map(|t| pick::score(t)).collect();
    let default = spec.candidates.iter().position(|&v| v == spec.default);
    let i = pick::pick(&scores, default.unwrap_or_default());
    Ok(Some(KnobTrial {
        knob,
        transport: spec.transport,
        sizes: spec.sizes,
        values: spec.candidates,
        times,
        scores,
        picked: spec.candidates[i],
    }))
}

/// The single-copy measurement of one child job: its report (rows tagged
/// [`probe::FRAMES`] and [`probe::SINGLE_COPY`], or `params.skipped`).
pub fn rndv_report(jobs: &mut Jobs, rounds: usize, env: &Env) -> Result<Report, TuneError> {
    jobs.run(Probe::Rndv, &[], rounds, env, "rndv")
}

/// Rows `(size, frames µs, single copy µs)` of a single-copy report, by size.
pub type RndvRows = Vec<(usize, f64, f64)>;

/// A single-copy report's rows and threshold; `Err` with the reason when single copy
/// was not measured (not permitted here).
pub fn rndv_choice(report: &Report) -> Result<(RndvRows, Option<usize>), String> {
    if let Some(why) = report.params.get("skipped").and_then(|v| v.as_str()) {
        return Err(why.into());
    }
    let rows = probe::rndv_rows(report);
    let t = nf_core::calibrate::choose(&rows);
    Ok((rows, t))
}

/// How a value's confirmation against the default went (rule 2).
pub struct Confirmation {
    /// The value's score over the default's in new jobs.
    pub ratio: f64,
    /// Whether the value is kept (`ratio` ≤ [`CONFIRM`]).
    pub kept: bool,
}

/// Rule 2: `value` of `knob` against the default alone, in new jobs.
pub fn confirm(
    jobs: &mut Jobs,
    knob: Knob,
    value: usize,
    rounds: usize,
    env: &Env,
) -> Result<Confirmation, TuneError> {
    let vs = check::versus(jobs, knob, value, rounds, env)?;
    let ratio = vs.score_ratio();
    Ok(Confirmation {
        ratio,
        kept: ratio <= CONFIRM,
    })
}
