//! `nf tune`: measures this host's best values of five settings and caches them.
//!
//! | knob | setting | measured by |
//! |---|---|---|
//! | `frame` | `NF_SHM_FRAME_SIZE` | shm ping-pong, 1 KiB … 512 KiB |
//! | `fast` | `NF_SHM_FAST_LIMIT` | shm ping-pong, 8 … 400 B |
//! | `rndv` | `NF_RNDV_THRESHOLD` | frames against single copy in one job, 16 KiB … 32 MiB |
//! | `tcp-hold` | `NF_TCP_HOT_US` | tcp ping-pong on loopback, 8 B … 64 KiB |
//! | `ofi-packet` | `NF_OFI_PACKET` | ofi ping-pong on loopback, 1 KiB … 1 MiB |
//!
//! `nf tune --route HOST0,HOST1 --remote TEMPLATE` measures instead which network
//! transport should carry which message sizes between two hosts (`NF_NET_ROUTE`),
//! and caches it for the other host (`route.rs`).
//!
//! Each value is a child job of 2 ranks (`jobs.rs`); the choice rules are in
//! `pick.rs`, the knobs' values and sizes in `knobs.rs`. A value other than the
//! default is kept only if it wins again in new jobs against the default alone (the
//! confirmation, `--check`'s comparison): on a shared or virtual machine one trial can
//! be a different regime from the next. `--check` runs the defaults
//! against the cached values (`check.rs`). Under a launcher (`mpirun nf tune`) the
//! job is already there and only the single-copy threshold can be measured.

mod check;
mod jobs;
mod knobs;
mod pick;
mod probe;
mod route;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use nf_core::tune::Tuned;
use nf_core::World;

use jobs::{Env, Jobs, Trial};
use knobs::{Knob, ORDER};
use probe::Probe;

/// Arguments of `nf tune`.
#[derive(Args)]
pub struct TuneArgs {
    /// Knobs to tune (or check), comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "rndv,frame,fast,tcp-hold,ofi-packet"
    )]
    pub knobs: Vec<Knob>,
    /// Timed round trips per size and value (fewer for sizes above 64 KiB).
    #[arg(long, default_value_t = 400, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub iters: u64,
    /// Times every value is measured, alternating values so load spikes spread out.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub rounds: u64,
    /// Measure and print, but do not write the cache.
    #[arg(long)]
    pub dry_run: bool,
    /// Run the defaults against the cached values, alternating, and print the ratios.
    #[arg(long, conflicts_with = "dry_run")]
    pub check: bool,
    /// With --check: write the comparison as a JSON report here.
    #[arg(long, requires = "check")]
    pub json: Option<PathBuf>,
    /// Measure the network route between two hosts instead of the knobs: the
    /// launcher's names for them, this one first (as `nf run --hosts`, without counts).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "HOST0,HOST1",
        conflicts_with = "check"
    )]
    pub route: Vec<String>,
    /// With --route: how to start a rank on a host (as `nf run --remote`).
    #[arg(
        long,
        value_name = "TEMPLATE",
        requires = "route",
        default_value = "ssh {host}"
    )]
    pub remote: String,
    /// With --route: this machine's address where the ranks reach the launcher's PMI
    /// server (as `nf run --pmi-bind`).
    #[arg(long, value_name = "IP", requires = "route", value_parser = super::run::parse_bind)]
    pub pmi_bind: Option<SocketAddr>,
    /// Seconds one measuring job may run before it is killed.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub job_timeout: u64,
    /// (internal) What a child job measures.
    #[arg(long, value_enum, hide = true)]
    pub probe: Option<Probe>,
    /// (internal) A child job's message sizes.
    #[arg(long, value_delimiter = ',', hide = true)]
    pub sizes: Vec<usize>,
    /// (internal) Where a child job's rank 0 writes its report.
    #[arg(long, hide = true)]
    pub out: Option<PathBuf>,
}

impl TuneArgs {
    /// The knobs asked for, in the order they are tuned.
    fn selected(&self) -> Vec<Knob> {
        ORDER
            .into_iter()
            .filter(|k| self.knobs.contains(k))
            .collect()
    }

    fn iters(&self) -> usize {
        self.iters as usize
    }

    fn rounds(&self) -> usize {
        self.rounds as usize
    }

    fn jobs(&self) -> anyhow::Result<Jobs> {
        Jobs::new(self.iters(), Duration::from_secs(self.job_timeout))
    }
}

/// Runs `nf tune` (see the module docs for which way).
pub fn main(a: TuneArgs) -> anyhow::Result<i32> {
    if let Some(p) = a.probe {
        let out = a.out.as_deref().context("--probe needs --out")?;
        return probe::main(p, &a.sizes, a.iters(), a.rounds(), out);
    }
    if super::run::under_launcher()? {
        return in_job(&a);
    }
    if a.check {
        return check::main(&a);
    }
    if !a.route.is_empty() {
        let hosts = route::hosts(&a.route, &a.remote, a.pmi_bind)?;
        return route::tune(&a, &mut a.jobs()?.on_hosts(hosts));
    }
    tune(&a)
}

/// Why a knob cannot be measured here, if it cannot (ofi without libfabric).
fn unavailable(knob: Knob) -> Option<String> {
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

/// Measures every selected knob in child jobs, prints the choices and caches them.
fn tune(a: &TuneArgs) -> anyhow::Result<i32> {
    let mut jobs = a.jobs()?;
    let mut found = Tuned::default();
    // Values chosen so far, so later knobs are measured with them.
    let mut env: Env = Vec::new();
    for knob in a.selected() {
        if let Some(why) = unavailable(knob) {
            println!("{why}");
            continue;
        }
        let chosen = match knob.spec() {
            None => tune_rndv(a, &mut jobs, &env)?,
            Some(spec) => {
                let trial = Trial {
                    knob,
                    transport: spec.transport,
                    sizes: spec.sizes,
                    values: spec.candidates,
                };
                let reports = jobs.trial(&trial, a.rounds(), &env)?;
                let times: Vec<Vec<f64>> = reports
                    .iter()
                    .map(|r| jobs::medians(r, spec.sizes))
                    .collect();
                let scores: Vec<f64> = times.iter().map(|t| pick::score(t)).collect();
                let default = spec.candidates.iter().position(|&v| v == spec.default);
                let i = pick::pick(&scores, default.unwrap_or_default());
                print_trial(&trial, &times, &scores);
                Some(spec.candidates[i])
            }
        };
        // A value that won its trial must win again, in new jobs against the
        // default alone, or the default is kept: one noisy trial (a load spike, a
        // machine whose cores moved) must not make a setting worse.
        let chosen = match chosen {
            Some(v) if v != knob.default_value() => {
                let vs = check::versus(&mut jobs, knob, v, a.rounds(), &env)?;
                let r = vs.score_ratio();
                if r <= CONFIRM {
                    println!(
                        "confirmed: {}={v} at {r:.3}× the default's time",
                        knob.var()
                    );
                    Some(v)
                } else {
                    println!(
                        "not confirmed: {}={v} at {r:.3}× the default's time in new jobs \
                         (it must be ≤ {CONFIRM}); keeping the default",
                        knob.var()
                    );
                    Some(knob.default_value())
                }
            }
            other => other,
        };
        match chosen {
            Some(v) => {
                println!("choice: {} {}={v}", knob.name(), knob.var());
                knob.set(&mut found, v);
                env.push((knob.var().into(), v.to_string()));
            }
            None => println!("{}: not measured, nothing cached", knob.name()),
        }
    }
    if a.dry_run {
        println!("dry run: nothing cached");
    } else {
        cache(&found)?;
    }
    Ok(0)
}

/// Most a value's time may be of the default's, in the confirmation, to be kept.
const CONFIRM: f64 = 0.97;

/// Caches `found`, keeping values cached earlier for the knobs it lacks.
fn cache(found: &Tuned) -> anyhow::Result<()> {
    let all = nf_core::tune::cached().unwrap_or_default().updated(found);
    let path = nf_core::tune::store(&all).context("writing the tune cache")?;
    println!("cached in {}", path.display());
    Ok(())
}

/// The single-copy threshold, from one child job (`None`: single copy is not
/// permitted here, with the reason printed).
fn tune_rndv(a: &TuneArgs, jobs: &mut Jobs, env: &Env) -> anyhow::Result<Option<usize>> {
    let report = jobs.run(Probe::Rndv, &[], a.rounds(), env, "rndv")?;
    Ok(rndv_choice(&report))
}

/// Prints a single-copy report's table and returns its threshold.
fn rndv_choice(report: &nf_bench::report::Report) -> Option<usize> {
    if let Some(why) = report.params.get("skipped").and_then(|v| v.as_str()) {
        println!("rndv: {why}");
        return None;
    }
    let rows = probe::rndv_rows(report);
    println!("rndv (NF_RNDV_THRESHOLD), median half round trip µs:");
    println!(
        "{:>10} {:>14} {:>14}",
        "size", "frames µs", "single-copy µs"
    );
    for (size, frames, single) in &rows {
        println!("{size:>10} {frames:>14.2} {single:>14.2}");
    }
    pick::rndv_threshold(&rows)
}

/// Prints one knob's medians per value and size, and each value's score.
fn print_trial(t: &Trial, times: &[Vec<f64>], scores: &[f64]) {
    println!(
        "{} ({}), median half round trip µs over {}:",
        t.knob.name(),
        t.knob.var(),
        t.transport
    );
    let mut head = format!("{:>10}", "value");
    for s in t.sizes {
        head.push_str(&format!(" {:>9}", format!("{s} B")));
    }
    println!("{head} {:>9}", "score");
    for ((v, row), score) in t.values.iter().zip(times).zip(scores) {
        let mut line = format!("{v:>10}");
        for x in row {
            line.push_str(&format!(" {x:>9.2}"));
        }
        println!("{line} {score:>9.2}");
    }
}

/// `nf tune` as a rank of a job someone else started: only the single-copy threshold
/// can be measured inside it; the other knobs need jobs of their own.
fn in_job(a: &TuneArgs) -> anyhow::Result<i32> {
    if a.check {
        anyhow::bail!(
            "nf tune --check starts jobs of its own: run it by hand, not under a launcher"
        );
    }
    let world = World::init().context("joining the job")?;
    let report = probe::rndv(&world, a.iters(), a.rounds())?;
    if let Some(report) = report {
        for k in a.selected().into_iter().filter(|&k| k != Knob::Rndv) {
            println!(
                "{}: skipped, it needs jobs of its own: run `nf tune` by hand to tune it",
                k.name()
            );
        }
        if let Some(t) = rndv_choice(&report) {
            println!("choice: rndv NF_RNDV_THRESHOLD={t}");
            let found = Tuned {
                rndv_threshold: Some(t),
                ..Tuned::default()
            };
            if !a.dry_run {
                cache(&found)?;
            }
        }
    }
    world.finalize()?;
    Ok(0)
}
