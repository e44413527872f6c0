//! The orchestrating side of tuning: child jobs, one per knob value and round.
//!
//! Settings such as the frame size are fixed when a rank joins its job, so each value
//! is measured by a 2-rank job of its own (`EXE tune --probe …`, which must run
//! [`super::probe::main`]) with the setting in its environment, started by the
//! caller's [`Launcher`]. Every job is bounded by `--job-timeout`; one that
//! fails or runs over is an error naming the knob and value. Jobs start from the
//! defaults, not from an earlier cache (`NF_TUNE_FILE` points at no file, and
//! `NF_RNDV_CALIBRATE=off`), plus the values this run already chose.

use std::path::PathBuf;
use std::time::Duration;

use nf_launch::{Binding, Hosts, LaunchSpec};

use super::error::LaunchFailure;
use super::knobs::Knob;
use super::pick::median;
use super::probe::Probe;
use super::TuneError;
use crate::report::{Report, SizeResult};

/// Settings for a job's environment: (variable, value).
pub type Env = Vec<(String, String)>;

/// Starts one job (the spec, its hosts if any, and what it measures for messages) and
/// returns its exit status: `nf tune` passes `nf run`'s, which checks the settings
/// first and removes the job's shared-memory segments after.
pub type Launcher = Box<dyn FnMut(&LaunchSpec, Option<&Hosts>, &str) -> Result<i32, LaunchFailure>>;

/// Starts child jobs and collects their reports (in a directory removed on drop).
pub struct Jobs {
    exe: PathBuf,
    launch: Launcher,
    dir: PathBuf,
    iters: usize,
    timeout: Duration,
    started: usize,
    /// Where the ranks run (one per host); `None`: both on this host.
    hosts: Option<Hosts>,
}

/// One knob's measurement: its setting forced to each of several values in turn.
pub struct Trial<'a> {
    /// The knob.
    pub knob: Knob,
    /// `NF_TRANSPORTS` of the jobs.
    pub transport: &'a str,
    /// Message sizes.
    pub sizes: &'a [usize],
    /// The values tried.
    pub values: &'a [usize],
}

impl Jobs {
    /// Ready to run jobs of `exe` (the `nf` binary) through `launch`, of `iters` round
    /// trips per size, each within `timeout`.
    pub fn new(
        exe: PathBuf,
        launch: Launcher,
        iters: usize,
        timeout: Duration,
    ) -> Result<Jobs, TuneError> {
        let dir = std::env::temp_dir().join(format!("nf-tune-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|source| TuneError::Io {
            what: format!("creating {}", dir.display()),
            source,
        })?;
        Ok(Jobs {
            exe,
            launch,
            dir,
            iters,
            timeout,
            started: 0,
            hosts: None,
        })
    }

    /// Runs the jobs' ranks on `hosts` (one each) instead of this host.
    pub fn on_hosts(mut self, hosts: Hosts) -> Jobs {
        self.hosts = Some(hosts);
        self
    }

    /// Runs `probe` over `sizes` as one 2-rank job with `env` (`rounds` inside it);
    /// `what` names the job in errors, e.g. `frame NF_SHM_FRAME_SIZE=4096`.
    pub fn run(
        &mut self,
        probe: Probe,
        sizes: &[usize],
        rounds: usize,
        env: &Env,
        what: &str,
    ) -> Result<Report, TuneError> {
        self.started += 1;
        let out = self.dir.join(format!("job-{}.json", self.started));
        let mut args: Vec<String> = vec![
            "tune".into(),
            "--probe".into(),
            probe.name().into(),
            "--iters".into(),
            self.iters.to_string(),
            "--rounds".into(),
            rounds.to_string(),
            "--out".into(),
            out.display().to_string(),
        ];
        if !sizes.is_empty() {
            args.push("--sizes".into());
            args.push(
                sizes
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        // From the defaults: no cache, and no start-up measurement of the single-copy
        // threshold (it would cache one and move the later jobs off the default).
        let mut job_env: Env = vec![
            (
                "NF_TUNE_FILE".into(),
                self.dir.join("no-cache.json").display().to_string(),
            ),
            ("NF_RNDV_CALIBRATE".into(), "off".into()),
        ];
        job_env.extend(env.iter().cloned());
        let spec = LaunchSpec {
            nprocs: 2,
            program: self.exe.clone(),
            args: args.into_iter().map(Into::into).collect(),
            timeout: Some(self.timeout),
            tag_output: false,
            bind: Binding::None,
            env: job_env
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            oversubscribe: false,
        };
        let code = (self.launch)(&spec, self.hosts.as_ref(), &format!("nf tune ({what})"))
            .map_err(|source| TuneError::Launch {
                what: what.into(),
                source,
            })?;
        if code != 0 {
            return Err(TuneError::JobFailed {
                what: what.into(),
                code,
            });
        }
        Report::read_json(&out).map_err(|source| TuneError::Report {
            what: what.into(),
            source,
        })
    }

    /// Runs `t`: per round every value once, in reverse order every other round;
    /// `reports[value][round]`. Each job runs with `env` and the knob's setting.
    pub fn trial(
        &mut self,
        t: &Trial,
        rounds: usize,
        env: &Env,
    ) -> Result<Vec<Vec<Report>>, TuneError> {
        let var = t.knob.var();
        let cases: Vec<(String, Env)> = t
            .values
            .iter()
            .map(|v| {
                let mut e = env.clone();
                e.push(("NF_TRANSPORTS".into(), t.transport.into()));
                e.push((var.into(), v.to_string()));
                (format!("{} {var}={v}", t.knob.name()), e)
            })
            .collect();
        self.alternate(&cases, t.sizes, rounds, |_, what, r| {
            if r.transport != t.transport {
                return Err(TuneError::WrongTransport {
                    what: what.into(),
                    got: r.transport.clone(),
                    want: t.transport.into(),
                });
            }
            Ok(())
        })
    }

    /// Ping-pong jobs over `sizes`, one per case (its name in errors, its
    /// environment) and round, every case once per round, in reverse order every
    /// other round so load drifts spread over all; `check` vets each report (with
    /// its case's index and name).
    /// Returns `reports[case][round]`.
    pub fn alternate(
        &mut self,
        cases: &[(String, Env)],
        sizes: &[usize],
        rounds: usize,
        check: impl Fn(usize, &str, &Report) -> Result<(), TuneError>,
    ) -> Result<Vec<Vec<Report>>, TuneError> {
        let mut reports = vec![Vec::new(); cases.len()];
        for round in 0..rounds {
            let mut order: Vec<usize> = (0..cases.len()).collect();
            if round % 2 == 1 {
                order.reverse();
            }
            for i in order {
                let (what, env) = &cases[i];
                let r = self.run(Probe::Pingpong, sizes, 1, env, what)?;
                check(i, what, &r)?;
                reports[i].push(r);
            }
        }
        Ok(reports)
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The row of `size` from the round whose median is the median over `rounds` (the
/// lower middle one for an even count); `None` if no round measured it.
pub fn median_row(rounds: &[Report], size: usize) -> Option<SizeResult> {
    let mut rows: Vec<&SizeResult> = rounds
        .iter()
        .filter_map(|r| r.results.iter().find(|x| x.size == size))
        .collect();
    rows.sort_by(|a, b| a.median_us.total_cmp(&b.median_us));
    rows.get(rows.len().saturating_sub(1) / 2)
        .map(|r| (*r).clone())
}

/// Per size, the median over rounds of each job's median half round trip (NaN where
/// nothing was measured).
pub fn medians(rounds: &[Report], sizes: &[usize]) -> Vec<f64> {
    sizes
        .iter()
        .map(|&s| {
            let m: Vec<f64> = rounds
                .iter()
                .filter_map(|r| r.results.iter().find(|x| x.size == s))
                .map(|x| x.median_us)
                .collect();
            median(&m)
        })
        .collect()
}
