//! Ping-pong between ranks 0 and 1 (the usual half-round-trip method): rank 0 sends,
//! rank 1's handler echoes the same bytes back, rank 0 times each round trip and
//! records half of it. Warm-up rounds are not recorded. Other ranks only join the
//! barriers.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use nf_core::{CoreError, World};

use crate::params::{check_iters, check_sizes, ParamError};

const PING: u16 = 0x0B01;
const PONG: u16 = 0x0B02;
const STOP: u16 = 0x0B03;

/// What to measure.
#[derive(Debug, Clone)]
pub struct Params {
    /// Message sizes in bytes.
    pub sizes: Vec<usize>,
    /// Timed round trips for small messages (see [`iters_for`]).
    pub iters: usize,
    /// Untimed round trips before each size.
    pub warmup: usize,
}

impl Params {
    /// Whether the ping-pong can run these: at least one size and one iteration.
    pub fn check(&self) -> Result<(), ParamError> {
        check_sizes(&self.sizes, |_| true, "a size")?;
        check_iters(self.iters)
    }
}

/// Timed round trips for `size`: `iters` up to 64 KiB, then fewer so each size moves
/// about `iters × 64 KiB`, but never fewer than 20. The C MPI ping-pong uses the
/// same rule so both sides time the same number of trips.
pub fn iters_for(size: usize, iters: usize) -> usize {
    const FULL_UP_TO: usize = 64 * 1024;
    if size <= FULL_UP_TO {
        iters
    } else {
        (iters * FULL_UP_TO / size).max(20).min(iters)
    }
}

/// The default sizes: powers of two from 8 B to 8 MiB, plus 2,000,000 B as HPCC uses.
pub fn default_sizes() -> Vec<usize> {
    let mut s: Vec<usize> = (3..=23).map(|p| 1usize << p).collect();
    s.push(2_000_000);
    s.sort_unstable();
    s
}

/// Half-round-trip samples of one size, in microseconds.
#[derive(Debug, Clone)]
pub struct SizeSamples {
    /// Message size in bytes.
    pub size: usize,
    /// One sample per timed round trip.
    pub half_rtt_us: Vec<f64>,
}

/// Everything rank 0 measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Per size, in the order asked.
    pub sizes: Vec<SizeSamples>,
    /// Cost of one `poll()` that finds nothing, in nanoseconds.
    pub poll_empty_ns: f64,
}

/// Measures the cost of an empty poll on this rank (nothing in flight anywhere).
pub fn empty_poll_ns(world: &World, polls: usize) -> Result<f64, CoreError> {
    world.barrier()?;
    let t = Instant::now();
    for _ in 0..polls {
        world.poll()?;
    }
    let ns = t.elapsed().as_nanos() as f64 / polls as f64;
    world.barrier()?;
    Ok(ns)
}

/// A ping-pong between ranks 0 and 1 of `world`; handlers are registered once.
pub struct PingPong<'w> {
    world: &'w World,
    pongs: Rc<Cell<usize>>,
    /// STOPs received, ever: a count, not a flag, because a rank may answer a whole
    /// pair's exchange, STOP included, while it still waits in the barrier before it
    /// (a dissemination barrier lets some ranks leave before others), and the next
    /// pair's STOP can then arrive before this rank has waited for the previous one.
    stops: Rc<Cell<usize>>,
    /// STOPs this rank's waits have consumed.
    stops_seen: Cell<usize>,
}

impl<'w> PingPong<'w> {
    /// Registers the ping-pong handlers (collective: every rank calls it).
    pub fn new(world: &'w World) -> Result<Self, CoreError> {
        if world.size() < 2 {
            return Err(CoreError::Collective(
                "ping-pong needs at least 2 ranks (nf run -n 2)".into(),
            ));
        }
        let pongs = Rc::new(Cell::new(0usize));
        let stops = Rc::new(Cell::new(0usize));
        world.register(PING, |w, am| {
            if let Err(e) = w.send(am.src, PONG, &[], am.payload) {
                tracing::error!(error = %e, "ping-pong echo failed");
            }
        })?;
        let p = Rc::clone(&pongs);
        world.register(PONG, move |_, _| p.set(p.get() + 1))?;
        let s = Rc::clone(&stops);
        world.register(STOP, move |_, _| s.set(s.get() + 1))?;
        Ok(PingPong {
            world,
            pongs,
            stops,
            stops_seen: Cell::new(0),
        })
    }

    /// Times `iters` round trips of `size` bytes after `warmup` untimed ones
    /// (collective). Rank 0 gets the half-round-trip samples in µs.
    pub fn measure(
        &self,
        size: usize,
        iters: usize,
        warmup: usize,
    ) -> Result<Option<Vec<f64>>, CoreError> {
        let samples = self.measure_pair(0, 1, size, iters, warmup)?;
        self.world.barrier()?;
        Ok(samples)
    }

    /// [`PingPong::measure`] between ranks `from` and `to` only (the other ranks do not
    /// call it; no barrier). `from` gets the half-round-trip samples in µs.
    pub fn measure_pair(
        &self,
        from: usize,
        to: usize,
        size: usize,
        iters: usize,
        warmup: usize,
    ) -> Result<Option<Vec<f64>>, CoreError> {
        let w = self.world;
        if w.rank() == from {
            let buf = vec![0xA5u8; size];
            let mut samples = Vec::with_capacity(iters);
            for i in 0..warmup + iters {
                let want = self.pongs.get() + 1;
                let t = Instant::now();
                w.send(to, PING, &[], &buf)?;
                w.wait_until(|| self.pongs.get() == want)?;
                if i >= warmup {
                    samples.push(t.elapsed().as_secs_f64() * 1e6 / 2.0);
                }
            }
            w.send(to, STOP, &[], &[])?;
            return Ok(Some(samples));
        }
        if w.rank() == to {
            let want = self.stops_seen.get() + 1;
            w.wait_until(|| self.stops.get() >= want)?;
            self.stops_seen.set(want);
        }
        Ok(None)
    }
}

/// Runs the ping-pong over `p.sizes`; rank 0 gets `Some(measurements)`, everyone else
/// `None`. `on_size` is called on rank 0 after each size (for a progress bar).
pub fn run(
    world: &World,
    p: &Params,
    mut on_size: impl FnMut(usize),
) -> Result<Option<Measured>, CoreError> {
    let pp = PingPong::new(world)?;
    let poll_empty_ns = empty_poll_ns(world, 1_000_000)?;
    let mut out = Vec::new();
    for &size in &p.sizes {
        let iters = iters_for(size, p.iters);
        if let Some(half_rtt_us) = pp.measure(size, iters, p.warmup.min(iters))? {
            out.push(SizeSamples { size, half_rtt_us });
            on_size(size);
        }
    }
    Ok((world.rank() == 0).then_some(Measured {
        sizes: out,
        poll_empty_ns,
    }))
}
