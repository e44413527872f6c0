//! One job from start to end.
//!
//! 1. Check the spec and find the program; in a multi-host job also check the hosts
//!    against the rank count, the remote template, the extra variables' names (they go
//!    on a command line) and decide the PMI address ([`crate::hosts`]); check that
//!    this machine can hold its ranks ([`crate::capacity`]). Nothing has started yet.
//! 2. Catch SIGINT / SIGTERM, make a job id, start the PMI server: a unix socket for a
//!    single-host job; TCP with a fresh secret for a multi-host one.
//! 3. Start the ranks of this machine in rank order, then those of the other hosts
//!    together through the hosts' remote start ([`crate::remote`], rule 4), and their
//!    output forwarders (with `tag_output`, or for ranks that do not write to the
//!    launcher's own streams); if one cannot be started, stop those already running.
//!    A SIGINT or SIGTERM that arrives meanwhile stops those started and ends the job
//!    as interrupted, rather than after the last rank has started.
//! 4. Supervise until the job ends ([`crate::supervise`]).
//! 5. Stop the PMI server (removing a unix socket and its directory), drain output,
//!    call the caller's cleanup hook with the job id — whatever the outcome.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use nf_pmi::{Listen, Server};
use tracing::{debug, info, warn};

use crate::capacity::{self, Demand};
use crate::error::LaunchError;
use crate::hosts::{is_local, is_portable_env_name, Hosts};
use crate::outcome::{JobReport, Outcome, SignalName};
use crate::output::Forwarders;
use crate::remote::RankProcess;
use crate::signals::SignalWatch;
use crate::spawn::{allowed_cpus, remote_rank, spawn_local, Plan};
use crate::spec::{Binding, LaunchSpec};
use crate::supervise::{stop_all, supervise, RankProc};

/// How long to wait for rank output to drain after the ranks are gone.
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Runs the job on this machine and waits for it to end (see [`run_with`]).
pub fn run(spec: &LaunchSpec) -> Result<JobReport, LaunchError> {
    run_with(spec, |_| {})
}

/// Runs the job on this machine, waits for it to end, then calls `on_exit` with the job id.
///
/// `on_exit` runs once the ranks are gone, whatever the outcome, including a rank that
/// could not be started; it does not run when the spec is rejected before anything
/// started. An `Err` means the job could not be started; how a started job ended is in
/// the report's [`Outcome`].
pub fn run_with(spec: &LaunchSpec, on_exit: impl FnOnce(&str)) -> Result<JobReport, LaunchError> {
    run_job(spec, None, on_exit)
}

/// Runs the job across `hosts` (`spec.nprocs` must equal their rank count), waits for
/// it to end, then calls `on_exit` with the job id, as [`run_with`] does.
pub fn run_on_hosts(
    spec: &LaunchSpec,
    hosts: &Hosts,
    on_exit: impl FnOnce(&str),
) -> Result<JobReport, LaunchError> {
    run_job(spec, Some(hosts), on_exit)
}

fn run_job(
    spec: &LaunchSpec,
    hosts: Option<&Hosts>,
    on_exit: impl FnOnce(&str),
) -> Result<JobReport, LaunchError> {
    let mut program = spec.validate()?;
    let listen = match hosts {
        None => Listen::Unix(std::env::temp_dir()),
        Some(hosts) => {
            let bind = check_hosts(spec, hosts)?;
            if hosts.hosts.iter().any(|h| !is_local(&h.name)) {
                program = absolute(program)?;
            }
            Listen::Tcp(bind)
        }
    };
    let local_ranks = match hosts {
        None => spec.nprocs,
        Some(h) => h
            .hosts
            .iter()
            .filter(|h| is_local(&h.name))
            .map(|h| h.ranks)
            .sum(),
    };
    capacity::check(Demand {
        local_ranks,
        all_ranks: spec.nprocs,
        piped: spec.tag_output,
        oversubscribe: spec.oversubscribe,
    })?;
    let cpus = match spec.bind {
        Binding::Core => Some(allowed_cpus().map_err(LaunchError::Affinity)?),
        Binding::None => None,
    };
    let mut signals = SignalWatch::install().map_err(LaunchError::Signals)?;
    let job_id = new_job_id();
    info!(job = %job_id, nprocs = spec.nprocs, program = %program.display(), "starting job");
    let job = Job {
        spec,
        program: &program,
        job_id: &job_id,
        cpus: cpus.as_deref(),
        hosts,
    };
    let result = launch(&job, listen, &mut signals);
    debug!(job = %job_id, "job over; running the cleanup hook");
    on_exit(&job_id);
    let outcome = result?;
    info!(job = %job_id, %outcome, "job ended");
    Ok(JobReport { job_id, outcome })
}

/// Step 1 for a multi-host job: checks the hosts against the spec; returns where the
/// PMI server binds.
fn check_hosts(spec: &LaunchSpec, hosts: &Hosts) -> Result<SocketAddr, LaunchError> {
    hosts.validate(spec.nprocs)?;
    let bind = hosts.bind_addr()?;
    if hosts.hosts.iter().all(|h| is_local(&h.name)) {
        return Ok(bind);
    }
    if bind.ip().is_loopback() {
        warn!(
            %bind,
            "the PMI server binds a loopback address; ranks on other hosts \
             reach it only if the remote template forwards it"
        );
    }
    if let Some((name, _)) = spec.env.iter().find(|(k, _)| !is_portable_env_name(k)) {
        return Err(LaunchError::BadEnvName {
            name: name.to_string_lossy().into_owned(),
        });
    }
    Ok(bind)
}

/// The program's absolute path, for ranks started on other hosts.
fn absolute(program: PathBuf) -> Result<PathBuf, LaunchError> {
    std::path::absolute(&program).map_err(|source| LaunchError::ProgramPath { program, source })
}

/// What is known about a job before its PMI server starts.
struct Job<'a> {
    spec: &'a LaunchSpec,
    program: &'a Path,
    job_id: &'a str,
    cpus: Option<&'a [usize]>,
    hosts: Option<&'a Hosts>,
}

/// Steps 2 (from the PMI server on) to 5.
fn launch(
    job: &Job<'_>,
    listen: Listen,
    signals: &mut SignalWatch,
) -> Result<Outcome, LaunchError> {
    let spec = job.spec;
    let (events_tx, events) = mpsc::channel();
    let server = Server::start_on(listen, job.job_id, spec.nprocs, events_tx)?;
    let plan = Plan {
        spec,
        program: job.program,
        job_id: job.job_id,
        pmi_addr: server.addr().clone(),
        secret: server.secret().map(str::to_owned),
        cpus: job.cpus,
        job_cpus: std::env::var_os(crate::spawn::JOB_CPUS)
            .is_none()
            .then(nf_sys::cpus::usable),
        hosts: job.hosts.map(|h| (h, h.layout())),
    };
    debug!(addr = %server.addr(), "PMI server listening");
    let mut ranks = Vec::with_capacity(spec.nprocs);
    let mut output = Forwarders::new();
    let mut remote = Vec::new();
    let mut failed = None;
    for rank in 0..spec.nprocs {
        if let Some(signal) = signals.take() {
            warn!(
                started = ranks.len(),
                "launcher received {} while starting ranks; stopping those started",
                SignalName(signal)
            );
            stop_all(&mut ranks, signal, signals);
            server.stop();
            output.finish(OUTPUT_DRAIN);
            return Ok(Outcome::Interrupted { signal });
        }
        if plan.is_remote(rank) {
            remote.push(rank);
            continue;
        }
        if let Err(source) =
            spawn_local(&plan, rank).and_then(|c| keep(&plan, rank, c, &mut ranks, &mut output))
        {
            failed = Some((rank, source));
            break;
        }
    }
    if failed.is_none() && !remote.is_empty() {
        failed = start_remote(&plan, &remote, &mut ranks, &mut output);
    }
    if let Some((rank, source)) = failed {
        stop_all(&mut ranks, libc::SIGTERM, signals);
        server.stop();
        output.finish(OUTPUT_DRAIN);
        return Err(spawn_error(&plan, rank, source));
    }
    let outcome = supervise(&mut ranks, &events, signals, spec.timeout);
    server.stop();
    output.finish(OUTPUT_DRAIN);
    Ok(outcome)
}

/// Step 3 for the ranks on other hosts: all at once through the hosts' remote start
/// ([`crate::remote`], rule 4); the rank that could not start, if any.
fn start_remote(
    plan: &Plan<'_>,
    remote: &[usize],
    ranks: &mut Vec<RankProc>,
    output: &mut Forwarders,
) -> Option<(usize, std::io::Error)> {
    let (hosts, _) = plan.hosts.as_ref()?;
    let envs: Vec<_> = remote.iter().map(|&r| plan.remote_env(r)).collect();
    let asked: Vec<_> = remote
        .iter()
        .zip(&envs)
        .filter_map(|(&r, env)| remote_rank(plan, r, env))
        .collect();
    let started = hosts.remote.start_all(&asked);
    for (child, &rank) in started.procs.into_iter().zip(remote) {
        if let Err(e) = keep(plan, rank, child, ranks, output) {
            return Some((rank, e));
        }
    }
    started.error
}

/// Keeps a started rank for supervision, and forwards its output.
fn keep(
    plan: &Plan<'_>,
    rank: usize,
    mut child: Box<dyn RankProcess>,
    ranks: &mut Vec<RankProc>,
    output: &mut Forwarders,
) -> std::io::Result<()> {
    debug!(
        rank,
        pid = child.id(),
        host = plan.host(rank),
        "rank started"
    );
    let (out, err) = child.take_output();
    let forwarded = output.add(&plan.label(rank), plan.spec.tag_output, out, err);
    ranks.push(RankProc {
        rank,
        host: plan.host(rank).map(str::to_owned),
        child,
        exit: None,
    });
    forwarded
}

fn spawn_error(plan: &Plan<'_>, rank: usize, source: std::io::Error) -> LaunchError {
    match (&plan.hosts, plan.host(rank)) {
        (Some((hosts, _)), Some(host)) if plan.is_remote(rank) => LaunchError::SpawnRemote {
            rank,
            host: host.to_owned(),
            how: hosts.remote.describe(),
            source,
        },
        _ => LaunchError::Spawn {
            rank,
            program: plan.spec.program.clone(),
            source,
        },
    }
}

/// `<launcher pid>x<8 random hex digits>`: unique per job, safe in file names.
fn new_job_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS once per process and varied per instance.
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u128(
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{}x{:08x}", std::process::id(), h.finish() & 0xffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_unique_and_file_safe() {
        let a = new_job_id();
        let b = new_job_id();
        assert_ne!(a, b);
        assert!(nf_pmi::env::is_valid_job_id(&a), "{a}");
        assert!(a.starts_with(&format!("{}x", std::process::id())));
    }
}
