//! Watching the ranks until the job ends, and stopping them.
//!
//! Each tick (at most [`TICK`]) the supervisor, in this order:
//! 1. takes a PMI abort request, if any: stop all ranks, `Aborted`;
//! 2. reaps ranks that exited: the first that failed (lowest rank among those seen in
//!    the same tick) stops all ranks, `RankFailed`; all exited with 0: `Success`.
//!    In a multi-host job the supervisor first keeps reaping for up to [`HOST_SETTLE`]:
//!    when by then every rank of a host has ended abnormally, the host is gone as a
//!    whole and the outcome is `HostLost`. A host whose ranks were killed by signals
//!    is named before one whose ranks exited with errors, and that before the others:
//!    ranks that lose a peer may fail as fast as the peer's host dies (a tcp reset),
//!    but they are the consequence, not the cause;
//! 3. takes a SIGINT / SIGTERM received by the launcher: pass it on, stop all, `Interrupted`;
//! 4. checks the job's timeout: stop all, `TimedOut`;
//! 5. waits for the next PMI event or the end of the tick.
//!
//! Stopping: the signal (SIGTERM, or the one received) goes to every rank's process
//! group; after [`GRACE`] (or at once on a second SIGINT / SIGTERM) the rest get
//! SIGKILL; ranks still not reaped [`KILL_WAIT`] later are left behind with a warning.
//! Every wait is bounded, so the supervisor always returns.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use nf_pmi::ServerEvent;
use tracing::{debug, info, warn};

use crate::outcome::{Cause, Outcome, SignalName};
use crate::remote::RankProcess;
use crate::signals::SignalWatch;

/// Longest pause between two looks at the ranks.
pub(crate) const TICK: Duration = Duration::from_millis(10);
/// How long ranks get to exit after the first signal before SIGKILL.
pub(crate) const GRACE: Duration = Duration::from_secs(2);
/// How long to wait for ranks to be reaped after SIGKILL.
pub(crate) const KILL_WAIT: Duration = Duration::from_secs(5);
/// How long after a rank's failure the supervisor waits to see whether the rest of its
/// host follows (a lost host takes its ranks down together; a rank noticing a dead
/// peer takes longer than this).
pub(crate) const HOST_SETTLE: Duration = Duration::from_millis(200);

/// One started rank.
pub(crate) struct RankProc {
    /// Its rank.
    pub(crate) rank: usize,
    /// Its host, in a multi-host job.
    pub(crate) host: Option<String>,
    /// Its process (or session, [`crate::remote`]).
    pub(crate) child: Box<dyn RankProcess>,
    /// How it ended, once reaped.
    pub(crate) exit: Option<Cause>,
}

impl RankProc {
    fn running(&self) -> bool {
        self.exit.is_none()
    }

    /// Reaps the rank if it has exited; returns its cause if it just did.
    fn reap(&mut self) -> Option<Cause> {
        if !self.running() {
            return None;
        }
        let cause = match self.child.try_wait() {
            Ok(None) => return None,
            Ok(Some(cause)) => cause,
            Err(e) => {
                warn!(
                    rank = self.rank,
                    pid = self.child.id(),
                    "cannot wait for rank: {e}; counting it as failed"
                );
                Cause::Exit(-1)
            }
        };
        debug!(rank = self.rank, pid = self.child.id(), %cause, "rank ended");
        self.exit = Some(cause);
        Some(cause)
    }

    fn signal(&self, sig: i32) {
        // Only unreaped ranks are signalled (see `stop_all`), so the process is ours.
        self.child.signal(sig);
    }
}

/// Watches `ranks` until the job ends, and returns how it ended. All ranks are reaped
/// (or given up on after SIGKILL) when this returns.
pub(crate) fn supervise(
    ranks: &mut [RankProc],
    events: &Receiver<ServerEvent>,
    signals: &mut SignalWatch,
    timeout: Option<Duration>,
) -> Outcome {
    let start = Instant::now();
    let mut pending: Option<ServerEvent> = None;
    loop {
        if let Some(ServerEvent::Abort {
            rank,
            message,
            status,
        }) = pending.take().or_else(|| events.try_recv().ok())
        {
            match status {
                Some(0) => tracing::info!(rank, "rank ended the job: {message}"),
                _ => warn!(rank, ?status, "rank ended the job: {message}"),
            }
            stop_all(ranks, libc::SIGTERM, signals);
            return Outcome::Aborted {
                rank,
                message,
                status,
            };
        }
        let mut failed = None;
        for r in ranks.iter_mut() {
            if let Some(cause) = r.reap() {
                if cause != Cause::Exit(0) && failed.is_none() {
                    failed = Some((r.rank, r.child.id(), cause));
                }
            }
        }
        if let Some((rank, pid, cause)) = failed {
            let host = ranks
                .iter()
                .find(|r| r.rank == rank)
                .and_then(|r| r.host.clone());
            warn!(rank, pid, host, %cause, "rank failed; stopping the job");
            if host.is_some() {
                if let Some(lost) = host_lost(ranks, rank) {
                    warn!("every rank of a host ended; the host is lost: {lost}");
                    stop_all(ranks, libc::SIGTERM, signals);
                    return lost;
                }
            }
            stop_all(ranks, libc::SIGTERM, signals);
            return Outcome::RankFailed {
                rank,
                pid,
                cause,
                host,
            };
        }
        if ranks.iter().all(|r| !r.running()) {
            return Outcome::Success;
        }
        if let Some(signal) = signals.take() {
            warn!(
                "launcher received {}; passing it on to the ranks",
                SignalName(signal)
            );
            stop_all(ranks, signal, signals);
            return Outcome::Interrupted { signal };
        }
        if let Some(after) = timeout {
            if start.elapsed() >= after {
                let killed = ranks
                    .iter()
                    .filter(|r| r.running())
                    .map(|r| r.rank)
                    .collect();
                // The caller reports the outcome; a warning here would say it twice.
                info!(?after, "job timed out; stopping it");
                stop_all(ranks, libc::SIGTERM, signals);
                return Outcome::TimedOut { after, killed };
            }
        }
        match events.recv_timeout(TICK) {
            Ok(ev) => pending = Some(ev),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => thread::sleep(TICK),
        }
    }
}

/// After `first` failed: reaps for up to [`HOST_SETTLE`] (less once `first`'s host has
/// ended), and returns `HostLost` for a host whose ranks have all ended abnormally,
/// preferring one with ranks killed by signals, then `first`'s own host.
fn host_lost(ranks: &mut [RankProc], first: usize) -> Option<Outcome> {
    let first_host = ranks.iter().find(|r| r.rank == first)?.host.clone()?;
    let deadline = Instant::now() + HOST_SETTLE;
    loop {
        for r in ranks.iter_mut() {
            r.reap();
        }
        let mine = ranks
            .iter()
            .filter(|r| r.host.as_ref() == Some(&first_host));
        if mine.clone().all(|r| !r.running()) && ranks.iter().all(|r| r.exit.is_some())
            || Instant::now() >= deadline
        {
            break;
        }
        thread::sleep(TICK);
    }
    let mut hosts: Vec<&str> = Vec::new();
    for h in ranks.iter().filter_map(|r| r.host.as_deref()) {
        if !hosts.contains(&h) {
            hosts.push(h);
        }
    }
    let ended = |h: &str| -> Option<Vec<(usize, Cause)>> {
        ranks
            .iter()
            .filter(|r| r.host.as_deref() == Some(h))
            .map(|r| match r.exit {
                Some(cause) if cause != Cause::Exit(0) => Some((r.rank, cause)),
                _ => None,
            })
            .collect()
    };
    // max_by_key keeps the last of equal keys: go backwards so the first host wins.
    let (host, mut lost) = hosts
        .into_iter()
        .rev()
        .filter_map(|h| ended(h).map(|lost| (h, lost)))
        .max_by_key(|(h, lost)| {
            let killed = lost.iter().any(|(_, c)| matches!(c, Cause::Signal(_)));
            (killed, *h == first_host)
        })?;
    let host = host.to_owned();
    // The first failure first, the others in rank order.
    lost.sort_by_key(|&(rank, _)| (rank != first, rank));
    Some(Outcome::HostLost { host, ranks: lost })
}

/// Sends `first` to every running rank, then SIGKILL after the grace period, and reaps them.
pub(crate) fn stop_all(ranks: &mut [RankProc], first: i32, signals: &mut SignalWatch) {
    let running = |ranks: &[RankProc]| ranks.iter().any(RankProc::running);
    if !running(ranks) {
        return;
    }
    debug!(signal = first, "stopping all ranks");
    for r in ranks.iter().filter(|r| r.running()) {
        r.signal(first);
    }
    wait_reaped(ranks, GRACE, Some(signals));
    if running(ranks) {
        debug!("grace period over; sending SIGKILL");
        for r in ranks.iter().filter(|r| r.running()) {
            r.signal(libc::SIGKILL);
        }
        wait_reaped(ranks, KILL_WAIT, None);
    }
    for r in ranks.iter().filter(|r| r.running()) {
        warn!(
            rank = r.rank,
            pid = r.child.id(),
            "rank survived SIGKILL for {KILL_WAIT:?}; leaving it behind"
        );
    }
}

/// Reaps ranks until none runs or `within` has passed (or, with `signals`, a new signal arrives).
fn wait_reaped(ranks: &mut [RankProc], within: Duration, mut signals: Option<&mut SignalWatch>) {
    let deadline = Instant::now() + within;
    loop {
        for r in ranks.iter_mut() {
            r.reap();
        }
        if ranks.iter().all(|r| !r.running()) || Instant::now() >= deadline {
            return;
        }
        if let Some(s) = signals.as_deref_mut() {
            if s.take().is_some() {
                debug!("second signal during the grace period; killing now");
                return;
            }
        }
        thread::sleep(TICK);
    }
}
