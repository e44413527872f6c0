//! `nf run`: the local launcher.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use nf_launch::{Binding, LaunchSpec};

/// Arguments of `nf run`.
#[derive(Args)]
pub struct RunArgs {
    /// Number of ranks.
    #[arg(short = 'n', long = "np")]
    pub nprocs: usize,
    /// Kill the job after this many seconds.
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Prefix every output line with `[rank] `.
    #[arg(long)]
    pub tag_output: bool,
    /// Rank 0 prints which transport each rank uses to reach each other rank.
    #[arg(long)]
    pub show_transports: bool,
    /// Pin rank r to core r mod cores.
    #[arg(long, value_enum, default_value_t = Bind::None)]
    pub bind_to: Bind,
    /// The program and its arguments.
    #[arg(last = true, required = true, value_name = "PROG ARGS")]
    pub command: Vec<OsString>,
}

/// CPU binding choices.
#[derive(Clone, Copy, ValueEnum)]
pub enum Bind {
    /// Let the kernel place ranks.
    None,
    /// One core per rank.
    Core,
}

/// Runs a job and returns the exit code `nf run` should exit with.
pub fn main(a: RunArgs) -> anyhow::Result<i32> {
    let (program, args) = a
        .command
        .split_first()
        .context("no program given after --")?;
    let timeout = a
        .timeout
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .with_context(|| format!("--timeout {s}: not a duration in seconds"))
        })
        .transpose()?;
    let spec = LaunchSpec {
        nprocs: a.nprocs,
        program: PathBuf::from(program),
        args: args.to_vec(),
        timeout,
        tag_output: a.tag_output,
        bind: match a.bind_to {
            Bind::None => Binding::None,
            Bind::Core => Binding::Core,
        },
        env: if a.show_transports {
            vec![("NF_SHOW_TRANSPORTS".into(), "1".into())]
        } else {
            Vec::new()
        },
    };
    launch(&spec)
}

/// Launches `spec`, removes the job's shared-memory segments afterwards, and
/// reports a failure naming the rank and the cause.
pub fn launch(spec: &LaunchSpec) -> anyhow::Result<i32> {
    let shm_dir =
        PathBuf::from(std::env::var_os("NF_SHM_DIR").unwrap_or_else(|| "/dev/shm".into()));
    let report = nf_launch::run_with(spec, |job| {
        nf_transport::shm::remove_job_segments(&shm_dir, job);
    })
    .with_context(|| format!("cannot launch {}", spec.program.display()))?;
    let code = report.outcome.exit_code();
    if code != 0 {
        eprintln!("nf run: job {} failed: {}", report.job_id, report.outcome);
    }
    Ok(code)
}

/// Re-runs this very command line as an `n`-rank job (for rank-side subcommands
/// started by hand).
pub fn relaunch_self(n: usize) -> anyhow::Result<i32> {
    let exe = std::env::current_exe().context("cannot find the nf executable to start ranks")?;
    let spec = LaunchSpec {
        nprocs: n,
        program: exe,
        args: std::env::args_os().skip(1).collect(),
        timeout: None,
        tag_output: false,
        bind: Binding::None,
        env: Vec::new(),
    };
    launch(&spec)
}

/// Whether this process was started by a launcher (it is a rank of a job).
pub fn under_launcher() -> bool {
    std::env::var_os(nf_pmi::env::PMI_ADDR).is_some()
}
