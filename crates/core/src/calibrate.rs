//! The single-copy threshold, measured at start-up on each host.
//!
//! Where copying through frames (two copies, pipelined across two cores) stops beating
//! a single-copy read (CMA) depends on the machine: 4 MiB on a 2-core VM, 256 KiB on a
//! 16-core Xeon. No fixed default suits both, and a new user never runs `nf tune`, so
//! the first job on a host measures it:
//!
//! 1. Only when the threshold is the default (neither `NF_RNDV_THRESHOLD` nor `nf
//!    tune` gave it), `NF_RNDV_CALIBRATE` is not `off`, single copy works here, and at
//!    least two ranks of the job share this host. A measurement cached for this host
//!    (the tune cache's `rndv_measured`, keyed by host identity) that is younger than
//!    [`FRESH`] is used instead ([`RETRY`] for an inconclusive one).
//! 2. The host's two lowest ranks measure: the *driver* (the lowest) sends `PING`s of
//!    each size in [`SIZES`], once by frames and once by single copy (the order
//!    reversed every other round), and times the `PONG`s the *follower* returns by the
//!    same protocol; [`ROUNDS`] rounds, each protocol's lower quartile of round trips
//!    per size ([`typical`]: preemptions on a busy host lengthen some round trips and
//!    never shorten one, so the median of a few moved the choice by a factor of two;
//!    the fastest alone favoured single copy, whose round trips spread wider: on the
//!    2-core VM its fastest at 64 KiB was within 10 % of frames' while its median was
//!    1.3× theirs). The driver stops when
//!    its budget (`NF_RNDV_CALIBRATE`, ms) runs out, also while it waits for a PONG
//!    (a follower that refuses the payload never answers): unless every round
//!    finished (a quiet 2-core VM needs about 120 ms for all three), or if the
//!    follower refused single copy, the result is inconclusive.
//! 3. The choice is [`choose`]'s: the smallest size from which single copy is never
//!    more than [`TOLERANCE`] slower; inconclusive keeps the default.
//! 4. The driver sends the choice (`PLAN`) to every other rank of the host; those
//!    whose threshold is the default adopt it, and wait for it in `World::init`, so a
//!    host's ranks start with the same threshold. The driver caches it for the host.
//!
//! The messages run on a reserved handler that runs at any depth (as the collectives'
//! mailbox), and the ranks measure inside a nested section, so a user message that
//! arrives meanwhile is queued, not run before its handler is registered.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::am::Reserved;
use crate::error::CoreError;
use crate::tune::{Measured, Tuned};
use crate::world::{Nested, RndvStats, World};

/// Payload sizes measured: from four default frames to the default threshold.
pub const SIZES: [usize; 7] = [
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
    2 << 20,
    4 << 20,
];

/// Rounds over every size and both protocols.
pub const ROUNDS: usize = 3;

/// How much slower single copy may measure and still be chosen: near-ties go to
/// single copy on purpose, as it moves each byte once where frames move it twice,
/// which matters to the other cores of a busy node, not to the ping-pong.
pub const TOLERANCE: f64 = 1.10;

/// How long a host's measurement is used before it is taken again.
pub const FRESH: Duration = Duration::from_secs(24 * 3600);

/// How long an inconclusive measurement stands before it is tried again.
pub const RETRY: Duration = Duration::from_secs(3600);

/// Where a rank's single-copy threshold came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RndvSource {
    /// `NF_RNDV_THRESHOLD` or `nf tune`'s cache.
    Given,
    /// Measured by this job's ranks at start-up.
    Measured,
    /// Measured by an earlier job on this host (the tune cache).
    Cached,
    /// The default: no measurement (off, inconclusive, one rank on the host, no
    /// single copy).
    Default,
}

impl RndvSource {
    /// One word for reports.
    pub fn name(self) -> &'static str {
        match self {
            RndvSource::Given => "given",
            RndvSource::Measured => "measured",
            RndvSource::Cached => "cached",
            RndvSource::Default => "default",
        }
    }
}

/// The threshold of rows `(size, frames µs, single copy µs)` in increasing size: the
/// smallest size from which single copy is never more than [`TOLERANCE`] slower, at
/// that size or any larger; the largest size if none; `None` without rows.
pub fn choose(rows: &[(usize, f64, f64)]) -> Option<usize> {
    let fits = |r: &(usize, f64, f64)| r.2 <= r.1 * TOLERANCE;
    (0..rows.len())
        .find(|&i| rows[i..].iter().all(fits))
        .or(rows.len().checked_sub(1))
        .map(|i| rows[i].0)
}

/// This host's cached measurement, if it is still to be used at `now` (seconds since
/// the epoch): the outer `None` means "measure".
pub fn cached_for(tuned: &Tuned, host: &str, now: u64) -> Option<Option<usize>> {
    let m = tuned.rndv_measured.get(host)?;
    let keep = if m.threshold.is_some() { FRESH } else { RETRY };
    (now.saturating_sub(m.at) < keep.as_secs()).then_some(m.threshold)
}

// Message kinds (the header's first byte).
const PING: u8 = 0;
const PONG: u8 = 1;
const PLAN: u8 = 2;
// PING's second byte: the protocol to answer by.
const FRAMES: u8 = 0;
const SINGLE: u8 = 1;
/// PLAN's threshold when the driver has nothing to hand out.
const NO_PLAN: u64 = u64::MAX;

/// What the handler shares with the waiting code.
#[derive(Default)]
struct Shared {
    pongs: Cell<u64>,
    /// The PLAN received: the threshold handed out (`None`: nothing) and whether
    /// it was measured now or cached.
    plan: Cell<Option<(Option<usize>, RndvSource)>>,
    /// This rank's threshold is the default, so a PLAN replaces it.
    adopt: Cell<bool>,
    /// The threshold this rank had before answering PINGs changed it (restored
    /// when the PLAN comes, unless the PLAN replaces it).
    saved: Cell<Option<usize>>,
}

/// The single-copy threshold for a protocol a PING asks for.
fn threshold_for(protocol: u8) -> usize {
    if protocol == SINGLE {
        0
    } else {
        usize::MAX
    }
}

/// Runs at the end of `World::init`: registers the handler, then measures, waits for
/// the host's choice or does nothing, as the module doc says.
pub(crate) fn at_start(world: &World, local: &[usize]) -> Result<RndvSource, CoreError> {
    let shared = Rc::new(Shared::default());
    let cfg = world.config();
    let wants = !cfg.rndv_given && cfg.rndv_calibrate.is_some() && world.single_copy();
    shared.adopt.set(!cfg.rndv_given);
    let h = shared.clone();
    world.register_reserved(Reserved::Calibrate, move |w, am| handle(w, &h, am))?;
    if local.len() < 2 || !world.single_copy() {
        return Ok(source_of(cfg.rndv_given));
    }
    let _nested = Nested::enter(world);
    if local[0] != world.rank() {
        if !wants {
            return Ok(source_of(cfg.rndv_given));
        }
        world.wait_until(|| shared.plan.get().is_some())?;
        if local[1] == world.rank() {
            // The PONGs sent while measuring are not the job's.
            world.state.borrow_mut().stats = RndvStats::default();
        }
        return Ok(match shared.plan.get() {
            Some((Some(_), source)) => source,
            _ => RndvSource::Default,
        });
    }
    drive(world, &shared, local, wants)
}

fn source_of(given: bool) -> RndvSource {
    if given {
        RndvSource::Given
    } else {
        RndvSource::Default
    }
}

/// The driver's part: use the cache or measure, adopt, tell the host, cache.
fn drive(
    world: &World,
    shared: &Shared,
    local: &[usize],
    wants: bool,
) -> Result<RndvSource, CoreError> {
    let plan = |t: Option<usize>, cached: bool| -> Result<(), CoreError> {
        let v = t.map_or(NO_PLAN, |t| t as u64).to_le_bytes();
        let mut header = [PLAN, u8::from(cached), 0, 0, 0, 0, 0, 0, 0, 0];
        header[2..].copy_from_slice(&v);
        for &r in &local[1..] {
            world.send_reserved(r, Reserved::Calibrate, &header, &[])?;
        }
        Ok(())
    };
    if !wants {
        plan(None, false)?;
        return Ok(source_of(world.config().rndv_given));
    }
    let host = nf_sys::host::host_identity();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let cache = crate::tune::cached().unwrap_or_default();
    if let Some(known) = cached_for(&cache, &host, now) {
        if let Some(t) = known {
            world.set_rndv_threshold(t);
        }
        plan(known, true)?;
        return Ok(known.map_or(RndvSource::Default, |_| RndvSource::Cached));
    }
    let budget = world.config().rndv_calibrate.unwrap_or_default();
    let default = world.rndv_threshold();
    let rows = measure(world, shared, local[1], budget)?;
    let refused = world.rndv_stats().refused > 0;
    world.state.borrow_mut().stats = RndvStats::default();
    let choice = if refused { None } else { choose(&rows) };
    world.set_rndv_threshold(choice.unwrap_or(default));
    plan(choice, false)?;
    tracing::info!(
        threshold = ?choice,
        rows = ?rows,
        "single-copy threshold measured on this host (size, frames µs, single copy µs)"
    );
    let mut cache = crate::tune::cached().unwrap_or_default();
    // Entries of hosts long gone (every reboot is a new identity) do not pile up.
    cache
        .rndv_measured
        .retain(|_, m| now.saturating_sub(m.at) < FRESH.as_secs());
    cache.rndv_measured.insert(
        host,
        Measured {
            threshold: choice,
            at: now,
        },
    );
    if let Err(e) = crate::tune::store(&cache) {
        tracing::debug!(error = %e, "cannot cache the measured single-copy threshold");
    }
    Ok(match choice {
        Some(_) => RndvSource::Measured,
        None => RndvSource::Default,
    })
}

/// Ping-pongs with `peer` by both protocols within `budget`; the rows for [`choose`]
/// (empty unless every round finished).
fn measure(
    world: &World,
    shared: &Shared,
    peer: usize,
    budget: Duration,
) -> Result<Vec<(usize, f64, f64)>, CoreError> {
    let start = Instant::now();
    let data = vec![0x5a_u8; SIZES[SIZES.len() - 1].min(world.config().max_payload)];
    // Whether the PONG came back within the budget: a follower that refuses the
    // payload (a lower NF_MAX_PAYLOAD) never answers, and must not hang the start.
    let exchange = |protocol: u8, size: usize| -> Result<bool, CoreError> {
        let want = shared.pongs.get() + 1;
        world.send_reserved(peer, Reserved::Calibrate, &[PING, protocol], &data[..size])?;
        world.wait_until(|| shared.pongs.get() >= want || start.elapsed() > budget)?;
        Ok(shared.pongs.get() >= want)
    };
    // samples[size][protocol]: each round trip, µs
    // Sizes this rank may send (NF_MAX_PAYLOAD may be lower than the largest).
    let sizes: Vec<usize> = SIZES
        .into_iter()
        .filter(|&s| s <= world.config().max_payload)
        .collect();
    let mut samples = vec![[Vec::new(), Vec::new()]; sizes.len()];
    let mut rounds = 0;
    'rounds: for round in 0..ROUNDS {
        for (i, &size) in sizes.iter().enumerate() {
            let mut order = [FRAMES, SINGLE];
            if round % 2 == 1 {
                order.reverse();
            }
            for protocol in order {
                world.set_rndv_threshold(threshold_for(protocol));
                // 2 MiB a protocol and size, 3 to 8 round trips: with fewer, one
                // preempted 4 MiB sample decided the choice. A warm-up (buffers
                // faulted in, paths taken once) in the first round only.
                let reps = ((2 << 20) / size).clamp(3, 8);
                if round == 0 && !exchange(protocol, size)? {
                    break 'rounds;
                }
                for _ in 0..reps {
                    let t = Instant::now();
                    if !exchange(protocol, size)? {
                        break 'rounds;
                    }
                    samples[i][protocol as usize].push(t.elapsed().as_secs_f64() * 1e6);
                }
                if start.elapsed() > budget {
                    break 'rounds;
                }
            }
        }
        rounds += 1;
    }
    // A busy host that cannot finish every round in time measures its load, not its
    // copies: inconclusive.
    if rounds < ROUNDS {
        return Ok(Vec::new());
    }
    Ok(sizes
        .iter()
        .zip(&samples)
        .map(|(&s, [f, c])| (s, typical(f), typical(c)))
        .collect())
}

/// What a protocol's round trip costs, from its samples `xs` (µs): the lower quartile.
/// Below the median, since a busy host's preemptions lengthen some round trips and
/// never shorten one; above the fastest, which is one lucky round trip and not what a
/// run of them costs. NaN if empty.
pub fn typical(xs: &[f64]) -> f64 {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 4).copied().unwrap_or(f64::NAN)
}

/// The reserved handler: answer PINGs by the protocol asked, count PONGs, take PLANs.
fn handle(world: &World, shared: &Shared, am: &crate::am::Am<'_>) {
    match am.header.first() {
        Some(&PING) => {
            // Changing the threshold rebuilds every peer's plan: only when it differs.
            let want = threshold_for(am.header.get(1).copied().unwrap_or(FRAMES));
            let had = world.rndv_threshold();
            if had != want {
                if shared.saved.get().is_none() {
                    shared.saved.set(Some(had));
                }
                world.set_rndv_threshold(want);
            }
            if let Err(e) = world.send_reserved(am.src, Reserved::Calibrate, &[PONG], am.payload) {
                tracing::warn!(error = %e, "answering the single-copy measurement");
            }
        }
        Some(&PONG) => {
            shared.pongs.set(shared.pongs.get() + 1);
        }
        Some(&PLAN) if am.header.len() == 10 => {
            let mut v = [0; 8];
            v.copy_from_slice(&am.header[2..]);
            let t = u64::from_le_bytes(v);
            let t = (t != NO_PLAN).then_some(t as usize);
            match (t, shared.adopt.get(), shared.saved.take()) {
                (Some(t), true, _) => world.set_rndv_threshold(t),
                (_, _, Some(before)) => world.set_rndv_threshold(before),
                _ => {}
            }
            let source = if am.header[1] == 1 {
                RndvSource::Cached
            } else {
                RndvSource::Measured
            };
            shared.plan.set(Some((t, source)));
        }
        _ => tracing::warn!(src = am.src, "a malformed single-copy measurement message"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn single_copy_is_chosen_from_where_it_never_loses_by_more_than_the_tolerance() {
        // Single copy wins from 128 on, except a near-tie at 256 (within 10 %).
        let rows = [
            (64, 1.0, 2.0),
            (128, 2.0, 1.5),
            (256, 4.0, 4.3),
            (512, 8.0, 5.0),
        ];
        assert_eq!(choose(&rows), Some(128));
        // A loss beyond the tolerance at a larger size moves the choice up.
        let rows = [(64, 1.0, 0.5), (128, 2.0, 2.5), (256, 4.0, 3.0)];
        assert_eq!(choose(&rows), Some(256));
        // Frames win everywhere: the largest size measured.
        assert_eq!(choose(&[(16, 1.0, 9.0), (32, 1.0, 9.0)]), Some(32));
        assert_eq!(choose(&[]), None);
    }

    #[test]
    fn a_protocol_costs_its_lower_quartile_neither_its_luckiest_nor_its_preempted_trips() {
        // One lucky round trip and two preempted ones among eight.
        let xs = [9.0, 6.0, 9.5, 40.0, 8.5, 9.0, 300.0, 8.8];
        assert_eq!(typical(&xs), 8.8);
        assert_eq!(typical(&[3.0]), 3.0);
        assert!(typical(&[]).is_nan());
        // Wider spread loses a tie that the fastest would have called: single copy
        // (c) as fast as frames (f) once, slower in most round trips.
        let f = [6.0, 6.1, 6.2, 6.3, 6.4, 6.5, 6.6, 6.7];
        let c = [6.1, 8.0, 8.5, 8.7, 9.0, 9.2, 9.4, 9.6];
        assert_eq!(
            choose(&[(64, typical(&f), typical(&c)), (128, 10.0, 7.0)]),
            Some(128)
        );
    }

    #[test]
    fn a_cached_measurement_is_used_while_fresh_and_only_on_its_own_host() {
        let at = 1_000_000;
        let tuned = Tuned {
            rndv_measured: BTreeMap::from([
                (
                    "a".to_owned(),
                    Measured {
                        threshold: Some(262144),
                        at,
                    },
                ),
                (
                    "b".to_owned(),
                    Measured {
                        threshold: None,
                        at,
                    },
                ),
            ]),
            ..Tuned::default()
        };
        assert_eq!(cached_for(&tuned, "a", at + 10), Some(Some(262144)));
        assert_eq!(cached_for(&tuned, "a", at + FRESH.as_secs()), None);
        assert_eq!(cached_for(&tuned, "b", at + 10), Some(None));
        assert_eq!(cached_for(&tuned, "b", at + RETRY.as_secs()), None);
        assert_eq!(cached_for(&tuned, "c", at), None);
    }
}
