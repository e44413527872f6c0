//! `nf tune`: the command line of [`nf_bench::tune`], which measures this host's best
//! values of five settings (or, with `--route HOST0,HOST1`, the network route to
//! another host) and chooses; this module parses the arguments, starts the measuring
//! jobs through `nf run`'s launcher, prints the tables and caches the choices.
//! `--check` prints the defaults against the cached values (`check.rs`), `--route`
//! the route's tables (`route.rs`).

mod check;
mod route;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;
use nf_bench::tune::jobs::{Env, Jobs};
use nf_bench::tune::knobs::{Knob, ORDER};
use nf_bench::tune::probe::{self, Probe};
use nf_bench::tune::{self as lib, KnobTrial, CONFIRM};
use nf_core::tune::Tuned;
use nf_core::World;

/// `--knobs`: a knob's name.
fn knob_parser() -> impl TypedValueParser<Value = Knob> {
    PossibleValuesParser::new(ORDER.map(Knob::name))
        .try_map(|s| Knob::from_name(&s).ok_or("not a knob"))
}

/// `--probe`: a probe's name.
fn probe_parser() -> impl TypedValueParser<Value = Probe> {
    PossibleValuesParser::new([Probe::Pingpong.name(), Probe::Rndv.name()])
        .try_map(|s| Probe::from_name(&s).ok_or("not a probe"))
}

/// Arguments of `nf tune`.
#[derive(Args)]
pub struct TuneArgs {
    /// Knobs to tune (or check), comma-separated.
    #[arg(
        long,
        value_parser = knob_parser(),
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
    #[arg(long, value_parser = probe_parser(), hide = true)]
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

    /// Measuring jobs of this `nf`, started as `nf run` starts jobs.
    fn jobs(&self) -> anyhow::Result<Jobs> {
        let exe = std::env::current_exe().context("cannot find the nf executable to start jobs")?;
        let launch = Box::new(|spec: &_, hosts: Option<&_>, who: &str| {
            super::run::launch_on(spec, hosts, who).map_err(Into::into)
        });
        Ok(Jobs::new(
            exe,
            launch,
            self.iters(),
            Duration::from_secs(self.job_timeout),
        )?)
    }
}

/// Runs `nf tune` (see the module docs for which way).
pub fn main(a: TuneArgs) -> anyhow::Result<i32> {
    if let Some(p) = a.probe {
        let out = a.out.as_deref().context("--probe needs --out")?;
        probe::main(p, &a.sizes, a.iters(), a.rounds(), out)?;
        return Ok(0);
    }
    if super::run::under_launcher()? {
        return in_job(&a);
    }
    if a.check {
        return check::main(&a);
    }
    if !a.route.is_empty() {
        let hosts = lib::route::hosts(&a.route, &a.remote, a.pmi_bind).map_err(|e| match e {
            lib::TuneError::RouteHosts => super::Usage(e.to_string()).into(),
            e => anyhow::Error::new(e),
        })?;
        return route::tune(&a, &mut a.jobs()?.on_hosts(hosts));
    }
    tune(&a)
}

/// Measures every selected knob in child jobs, prints the choices and caches them.
fn tune(a: &TuneArgs) -> anyhow::Result<i32> {
    let mut jobs = a.jobs()?;
    let mut found = Tuned::default();
    // Values chosen so far, so later knobs are measured with them.
    let mut env: Env = Vec::new();
    for knob in a.selected() {
        if let Some(why) = lib::unavailable(knob) {
            println!("{why}");
            continue;
        }
        let chosen = match lib::trial(&mut jobs, knob, a.rounds(), &env)? {
            None => tune_rndv(a, &mut jobs, &env)?,
            Some(t) => {
                print_trial(&t);
                Some(t.picked)
            }
        };
        // A value that won its trial must win again, in new jobs against the
        // default alone, or the default is kept: one noisy trial (a load spike, a
        // machine whose cores moved) must not make a setting worse.
        let chosen = match chosen {
            Some(v) if v != knob.default_value() => {
                let c = lib::confirm(&mut jobs, knob, v, a.rounds(), &env)?;
                let r = c.ratio;
                if c.kept {
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

/// Caches `found`, keeping values cached earlier for the knobs it lacks.
fn cache(found: &Tuned) -> anyhow::Result<()> {
    let path = lib::cache(found)?;
    println!("cached in {}", path.display());
    Ok(())
}

/// The single-copy threshold, from one child job (`None`: single copy is not
/// permitted here, with the reason printed).
fn tune_rndv(a: &TuneArgs, jobs: &mut Jobs, env: &Env) -> anyhow::Result<Option<usize>> {
    let report = lib::rndv_report(jobs, a.rounds(), env)?;
    Ok(rndv_choice(&report))
}

/// Prints a single-copy report's table and returns its threshold.
fn rndv_choice(report: &nf_bench::report::Report) -> Option<usize> {
    let (rows, threshold) = match lib::rndv_choice(report) {
        Ok(c) => c,
        Err(why) => {
            println!("rndv: {why}");
            return None;
        }
    };
    println!("rndv (NF_RNDV_THRESHOLD), median half round trip µs:");
    println!(
        "{:>10} {:>14} {:>14}",
        "size", "frames µs", "single-copy µs"
    );
    for (size, frames, single) in &rows {
        println!("{size:>10} {frames:>14.2} {single:>14.2}");
    }
    threshold
}

/// Prints one knob's medians per value and size, and each value's score.
fn print_trial(t: &KnobTrial) {
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
    for ((v, row), score) in t.values.iter().zip(&t.times).zip(&t.scores) {
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
