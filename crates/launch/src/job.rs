//! One job from start to end.
//!
//! 1. Check the spec and find the program; nothing has started yet.
//! 2. Catch SIGINT / SIGTERM, make a job id, start the PMI server.
//! 3. Start the ranks (and their output forwarders with `tag_output`); if one cannot be
//!    started, stop those already running.
//! 4. Supervise until the job ends ([`crate::supervise`]).
//! 5. Stop the PMI server (removing its socket and directory), drain output, call the
//!    caller's cleanup hook with the job id — whatever the outcome.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use nf_pmi::Server;
use tracing::{debug, info};

use crate::error::LaunchError;
use crate::outcome::{JobReport, Outcome};
use crate::output::Forwarders;
use crate::signals::SignalWatch;
use crate::spawn::{allowed_cpus, spawn_rank, Plan};
use crate::spec::{Binding, LaunchSpec};
use crate::supervise::{stop_all, supervise, RankProc};

/// How long to wait for rank output to drain after the ranks are gone.
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Runs the job and waits for it to end (see [`run_with`]).
pub fn run(spec: &LaunchSpec) -> Result<JobReport, LaunchError> {
    run_with(spec, |_| {})
}

/// Runs the job, waits for it to end, then calls `on_exit` with the job id.
///
/// `on_exit` runs once the ranks are gone, whatever the outcome, including a rank that
/// could not be started; it does not run when the spec is rejected before anything
/// started. An `Err` means the job could not be started; how a started job ended is in
/// the report's [`Outcome`].
pub fn run_with(spec: &LaunchSpec, on_exit: impl FnOnce(&str)) -> Result<JobReport, LaunchError> {
    let program = spec.validate()?;
    let cpus = match spec.bind {
        Binding::Core => Some(allowed_cpus().map_err(LaunchError::Affinity)?),
        Binding::None => None,
    };
    let mut signals = SignalWatch::install().map_err(LaunchError::Signals)?;
    let job_id = new_job_id();
    info!(job = %job_id, nprocs = spec.nprocs, program = %program.display(), "starting job");
    let result = launch(spec, &program, &job_id, cpus.as_deref(), &mut signals);
    debug!(job = %job_id, "job over; running the cleanup hook");
    on_exit(&job_id);
    let outcome = result?;
    info!(job = %job_id, %outcome, "job ended");
    Ok(JobReport { job_id, outcome })
}

fn launch(
    spec: &LaunchSpec,
    program: &Path,
    job_id: &str,
    cpus: Option<&[usize]>,
    signals: &mut SignalWatch,
) -> Result<Outcome, LaunchError> {
    let (events_tx, events) = mpsc::channel();
    let server = Server::start(&std::env::temp_dir(), job_id, spec.nprocs, events_tx)?;
    let plan = Plan {
        spec,
        program,
        job_id,
        pmi_addr: server.addr(),
        cpus,
    };
    let mut ranks = Vec::with_capacity(spec.nprocs);
    let mut output = Forwarders::new();
    for rank in 0..spec.nprocs {
        let started = spawn_rank(&plan, rank).and_then(|mut child| {
            debug!(rank, pid = child.id(), "rank started");
            let forwarded = output.add(rank, child.stdout.take(), child.stderr.take());
            ranks.push(RankProc {
                rank,
                child,
                exit: None,
            });
            forwarded
        });
        if let Err(source) = started {
            stop_all(&mut ranks, libc::SIGTERM, signals);
            server.stop();
            output.finish(OUTPUT_DRAIN);
            return Err(LaunchError::Spawn {
                rank,
                program: spec.program.clone(),
                source,
            });
        }
    }
    let outcome = supervise(&mut ranks, &events, signals, spec.timeout);
    server.stop();
    output.finish(OUTPUT_DRAIN);
    Ok(outcome)
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
