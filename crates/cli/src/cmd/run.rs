//! `nf run`: the launcher, on this machine or across hosts (`--hosts`).

use std::ffi::OsString;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, ValueEnum};
use nf_launch::{Binding, Hosts, LaunchSpec, Outcome, RemoteStart, RemoteTemplate, XcpuStart};
use nf_link::tls::TlsFiles;
use nf_ninep_client::connect::ConnectOptions;
use nf_sys::setting::Setting;

/// Arguments of `nf run`.
#[derive(Args)]
pub struct RunArgs {
    /// Number of ranks (with --hosts: optional, must match the hosts' total).
    #[arg(short = 'n', long = "np", required_unless_present = "hosts")]
    pub nprocs: Option<usize>,
    /// Run across hosts, ranks numbered in host order: `h1:2,h2:2` (`localhost` runs here).
    #[arg(long, value_name = "HOST:N,…")]
    pub hosts: Option<String>,
    /// How to start a rank on another host, e.g. 'ssh {host}': `{host}` is replaced
    /// by its name, and `env NAME=VALUE… PROG ARGS` appended [default: through the
    /// host's nf serve, /xcpu, see --xcpu].
    #[arg(long, value_name = "TEMPLATE", requires = "hosts")]
    pub remote: Option<String>,
    /// Where each host's nf serve is reached to start its ranks through /xcpu (as
    /// `nf exec` does) when no --remote is given; `{host}` is replaced by its name.
    /// The program must be at the same path on every host.
    #[arg(
        long,
        value_name = "ADDR",
        default_value = "tls:{host}:564",
        requires = "hosts",
        conflicts_with = "remote"
    )]
    pub xcpu: String,
    /// Through /xcpu (no --remote): start one session per host down a tree in which
    /// each host hands the job on to K more, so nf run connects to the first host
    /// only (as nf exec --fanout); 0 starts one session per rank, each from here.
    #[arg(
        long,
        value_name = "K",
        default_value_t = 4,
        requires = "hosts",
        conflicts_with = "remote"
    )]
    pub fanout: usize,
    /// Client certificate (PEM) for tls: --xcpu addresses; its common name is the user.
    #[arg(long, value_name = "PEM", requires_all = ["key", "ca", "hosts"])]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub key: Option<PathBuf>,
    /// CA certificate that signs the nodes' certificates (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub ca: Option<PathBuf>,
    /// Address of this machine (IP or IP:PORT) where the ranks reach the launcher's PMI
    /// server; needed when a host other than localhost is given.
    #[arg(long, value_name = "IP", requires = "hosts", value_parser = parse_bind)]
    pub pmi_bind: Option<SocketAddr>,
    /// Kill the job after this many seconds.
    #[arg(long, value_name = "S")]
    pub timeout: Option<f64>,
    /// Prefix every output line with `[rank] ` (`[rank@host] ` with --hosts).
    #[arg(long)]
    pub tag_output: bool,
    /// Rank 0 prints which transport each rank uses to reach each other rank.
    #[arg(long)]
    pub show_transports: bool,
    /// Pin rank r to core r mod cores.
    #[arg(long, value_enum, default_value_t = Bind::None)]
    pub bind_to: Bind,
    /// Start more than 16 ranks per CPU this machine lets nf run use (refused
    /// otherwise, as a likely typo; up to 16 share a CPU by yielding to each other).
    #[arg(long)]
    pub oversubscribe: bool,
    /// Start the program even though it links an MPI library (also `NF_ALLOW_MPI=1`):
    /// each rank then is a singleton MPI job of its own.
    #[arg(long)]
    pub allow_mpi: bool,
    /// The program and its arguments, after `--` or not (as with mpirun and srun):
    /// everything from the first word that is not an option of `nf run` is the
    /// program's.
    #[arg(
        trailing_var_arg = true,
        required = true,
        num_args = 1..,
        value_name = "PROG ARGS"
    )]
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

/// How ranks start on other hosts: the `--remote` template, else a session on each
/// host's `/xcpu` (through the exec library, [`nf_launch::XcpuStart`]).
fn remote_start(a: &RunArgs) -> anyhow::Result<Arc<dyn RemoteStart>> {
    if let Some(r) = &a.remote {
        return Ok(Arc::new(RemoteTemplate::parse(r)?));
    }
    let tls = match (&a.cert, &a.key, &a.ca) {
        (Some(cert), Some(key), Some(ca)) => Some(TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            ca: ca.clone(),
        }),
        _ => None,
    };
    if a.xcpu.starts_with("tls:") && tls.is_none() {
        return Err(super::Usage(format!(
            "--xcpu {}: starting ranks through the hosts' nf serve over TLS needs --cert, \
             --key and --ca (or give --remote 'ssh {{host}}')",
            a.xcpu
        ))
        .into());
    }
    let conn = ConnectOptions::new(None, tls, None);
    let xcpu = XcpuStart::new(&a.xcpu, conn)?;
    if a.fanout == 0 {
        return Ok(Arc::new(xcpu));
    }
    // Each host's session runs this very nf as the host's starter: it must be at the
    // same path there, as the ranks' program must.
    let exe =
        std::env::current_exe().context("cannot find the nf executable to start on the hosts")?;
    let exe = exe
        .to_str()
        .with_context(|| format!("{}: the nf executable's path is not UTF-8", exe.display()))?;
    let mut starter = vec![exe.to_owned(), HOST_RANKS.to_owned()];
    if a.oversubscribe {
        // Each host's starter bounds its own ranks per CPU (nf_launch::host_ranks).
        starter.push("--oversubscribe".to_owned());
    }
    Ok(Arc::new(xcpu.through_tree(starter, a.fanout)))
}

/// The hidden subcommand each host's session runs in a job started down the `/xcpu`
/// tree ([`nf_launch::host_ranks`]).
pub const HOST_RANKS: &str = "host-ranks";

/// Arguments of `nf host-ranks` (hidden: `nf run` starts it on each host).
#[derive(Args)]
pub struct HostRanksArgs {
    /// Start more than 16 ranks per CPU of this host (nf run passes its own flag on).
    #[arg(long)]
    pub oversubscribe: bool,
    /// The ranks' program and its arguments.
    #[arg(trailing_var_arg = true, required = true, num_args = 1.., value_name = "PROG ARGS")]
    pub command: Vec<OsString>,
}

/// `nf host-ranks -- PROG ARGS…`: runs this host's ranks of a job.
pub fn host_ranks(a: HostRanksArgs) -> anyhow::Result<i32> {
    Ok(nf_launch::host_ranks::main(&a.command, a.oversubscribe))
}

/// Runs a job and returns the exit code `nf run` should exit with.
pub fn main(a: RunArgs) -> anyhow::Result<i32> {
    let (program, args) = a
        .command
        .split_first()
        .context("no program given after --")?;
    if !(a.allow_mpi || allow_mpi_from_env()) {
        refuse_mpi_program(Path::new(program))?;
    }
    let timeout = a
        .timeout
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .map_err(|_| super::Usage(format!("--timeout {s}: not a duration in seconds")))
        })
        .transpose()?;
    let hosts = match &a.hosts {
        Some(list) => Some(Hosts {
            hosts: Hosts::parse_list(list)?,
            remote: remote_start(&a)?,
            pmi_bind: a.pmi_bind,
        }),
        None => None,
    };
    let nprocs = match (a.nprocs, &hosts) {
        (Some(n), _) => n,
        (None, Some(h)) => h.total(),
        (None, None) => {
            return Err(super::Usage("give the number of ranks with -n, or --hosts".into()).into())
        }
    };
    let spec = LaunchSpec {
        nprocs,
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
        oversubscribe: a.oversubscribe,
    };
    launch_on(&spec, hosts.as_ref(), "nf run")
}

/// Environment variable that lets `nf run` start MPI programs (as `--allow-mpi`).
pub const ALLOW_MPI: &str = "NF_ALLOW_MPI";

/// The settings the cli itself reads, as `nf config` lists them.
pub const SETTINGS: &[Setting] = &[Setting::new(
    ALLOW_MPI,
    "cli",
    "if set (not 0), nf run starts programs that link MPI, as --allow-mpi (each rank a 1-rank MPI job)",
    "unset",
)];

fn allow_mpi_from_env() -> bool {
    std::env::var_os(ALLOW_MPI).is_some_and(|v| !v.is_empty() && v != "0")
}

/// An MPI program under `nf run` learns nothing from it: every rank would call
/// `MPI_Init` alone and run as rank 0 of 1. Refuses a program linking an MPI library.
fn refuse_mpi_program(program: &Path) -> anyhow::Result<()> {
    match nf_launch::elf::mpi_library_of(program) {
        None => Ok(()),
        Some(lib) => anyhow::bail!(
            "{} links {lib}: it is an MPI program, and under nf run each rank would be a \
             separate 1-rank MPI job. Start it with mpirun / mpiexec (or srun); ninefold \
             wires up through them. To start it under nf run anyway, pass --allow-mpi \
             or set {ALLOW_MPI}=1.",
            program.display()
        ),
    }
}

/// `--pmi-bind`: `IP` (any free port) or `IP:PORT`.
pub(crate) fn parse_bind(s: &str) -> Result<SocketAddr, String> {
    s.parse::<SocketAddr>()
        .or_else(|_| s.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| format!("{s:?} is not an IP address (or IP:PORT)"))
}

/// Launches `spec` here or across `hosts`, removes the job's shared-memory segments on
/// this machine afterwards, and reports a failure naming the rank (and host) and cause,
/// as the command `who` the user typed.
pub fn launch_on(spec: &LaunchSpec, hosts: Option<&Hosts>, who: &str) -> anyhow::Result<i32> {
    check_settings(&spec.env)?;
    let shm_dir =
        PathBuf::from(std::env::var_os("NF_SHM_DIR").unwrap_or_else(|| "/dev/shm".into()));
    let cleanup = |job: &str| {
        nf_transport::shm::remove_job_segments(&shm_dir, job);
    };
    // Every launch error names what it could not start; a context naming the program
    // again would say it twice.
    let report = match hosts {
        Some(hosts) => nf_launch::run_on_hosts(spec, hosts, cleanup),
        None => nf_launch::run_with(spec, cleanup),
    }?;
    let code = job_status(&report.outcome);
    if code != 0 {
        eprintln!("{who}: job {} failed: {}", report.job_id, report.outcome);
    }
    Ok(code)
}

/// The exit status of a job that ran, by the rule of `nf --help`: 0, a failed rank's
/// own status (128 + the signal that killed it), 4 for the timeout, 128 + the signal
/// `nf run` itself received and passed on, 1 when a rank aborted the job, the status a
/// rank ended the job with (`shmem_global_exit`).
fn job_status(outcome: &Outcome) -> i32 {
    match outcome {
        Outcome::TimedOut { .. } => crate::EXIT_TIMEOUT,
        Outcome::Aborted { status: None, .. } => crate::EXIT_FAILURE,
        other => other.exit_code(),
    }
}

/// Checks every `NF_*` setting the ranks will read (this environment with `extra`
/// over it, and this user's tune cache) with the layers' own parsers, so a bad one is
/// one usage error from the command typed rather than one from each rank.
fn check_settings(extra: &[(OsString, OsString)]) -> anyhow::Result<()> {
    let lookup = |name: &str| -> Option<String> {
        match extra.iter().rev().find(|(k, _)| k == name) {
            Some((_, v)) => Some(v.to_string_lossy().into_owned()),
            None => std::env::var(name).ok(),
        }
    };
    match settings_problem(&lookup, nf_core::tune::cached().as_ref()) {
        Some(why) => Err(super::Usage(why).into()),
        None => Ok(()),
    }
}

/// What the layers' own parsers refuse in the settings `lookup` gives (with `tuned`
/// under them), the first problem only; `None` when the ranks would accept them all.
/// One check for `nf run` and `nf config`.
pub(crate) fn settings_problem(
    lookup: &dyn Fn(&str) -> Option<String>,
    tuned: Option<&nf_core::tune::Tuned>,
) -> Option<String> {
    if let Err(e) = nf_rma::RmaConfig::from_sources(lookup, tuned) {
        return Some(e.to_string());
    }
    nf_pmi::env::call_timeout(&|name| lookup(name).map(OsString::from))
        .err()
        .map(|e| e.to_string())
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
        oversubscribe: false,
    };
    // Failures are reported as the command typed (`nf bench rma`), not as `nf run`.
    let typed: Vec<String> = std::env::args()
        .skip(1)
        .take_while(|a| !a.starts_with('-'))
        .collect();
    launch_on(&spec, None, &format!("nf {}", typed.join(" ")))
}

/// Whether this process was started by a launcher — `nf run`, or a PMIx / PMI-2 one
/// such as `mpirun`, hydra or `srun` — so it is a rank of a job and must join it rather
/// than start a job of its own. The detection is the one `World::init` wires up by.
pub fn under_launcher() -> anyhow::Result<bool> {
    Ok(nf_pmi::bootstrap::detect_launcher(|n| std::env::var_os(n))?.is_some())
}

/// This process's rank if a launcher started it (`None` by hand or when the
/// launcher's environment is unusable).
pub fn rank_under_launcher() -> Option<usize> {
    nf_pmi::bootstrap::detect_launcher(|n| std::env::var_os(n))
        .ok()
        .flatten()
        .map(|d| d.rank)
}
