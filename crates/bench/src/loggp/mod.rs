//! The LogGP parameters of the route between ranks 0 and 1:
//! latency L, send and receive overheads o_s and o_r, gap g between small messages,
//! and gap per byte G, each with a 95 % interval, or a [`Refusal`] saying why the
//! measurements do not support them.
//!
//! Method (Kielmann et al.'s parametrised round trips, as Netgauge measures them).
//! A run is `rounds` passes over the sizes, interleaved so drift reaches every size;
//! each pass measures step 1 for every size, then steps 2–4 for every size:
//! 1. T(m): `iters / rounds` round trips after `warmup` untimed ones (every round:
//!    fewer left T 5-10 % above the ping-pong's at 4 KiB on a loaded VM), timed by
//!    [`PingPong`], the ping-pong of `nf bench pingpong` (same count rule,
//!    [`iters_for`]); the median half round trip.
//! 2. o_s(m): as many messages, each `send` call timed, rank 1 acknowledging each
//!    before the next (not timed); the whole message-and-acknowledgement E₁ is kept.
//! 3. o_r(m): a twentieth as many (at least 10; rank 0 waits out each delay, a wake-up
//!    each on a busy machine): rank 1 waits longer than a round
//!    trip without polling, so the message has arrived, then times handling it. The
//!    wait spins: after a sleep o_r would include the wake-up and cold caches, which
//!    a ping-pong's receiver never pays, and o_s + o_r would exceed T.
//! 4. g(m): streams of `stream` = k back-to-back messages acknowledged at the end,
//!    E_k from the first send to the acknowledgement;
//!    g(m) = (E_k − E₁) / (k − 1), the round trip of the last message cancelling.
//!
//! The medians of each pass go to [`fit`](mod@fit) (see there for the fit, the intervals and
//! when it refuses).

pub mod fit;

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nf_core::{CoreError, World};
use serde::Serialize;

pub use fit::{fit, Estimate, Model, Point, Refusal, Round, SizeRounds};

use crate::params::ParamError;
use crate::pingpong::{iters_for, PingPong};

const SINK: u16 = 0x0B23;
const ACK: u16 = 0x0B24;

/// What to measure.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// Message sizes in bytes, ascending, at least [`fit::MIN_SIZES`] different ones.
    pub sizes: Vec<usize>,
    /// Timed round trips per size over all rounds (fewer above 64 KiB, as the
    /// ping-pong's [`iters_for`]).
    pub iters: usize,
    /// Untimed round trips before each size in each round (at most the size's
    /// timed count over all rounds).
    pub warmup: usize,
    /// Passes over the sizes; the intervals resample them.
    pub rounds: usize,
    /// Messages per stream for g(m), at least 2.
    pub stream: usize,
}

impl Params {
    /// Whether a fit can come of these, before any rank starts.
    pub fn check(&self) -> Result<(), ParamError> {
        let mut sizes = self.sizes.clone();
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.len() < fit::MIN_SIZES || sizes[0] == 0 || sizes != self.sizes {
            return Err(ParamError::new(
                "sizes",
                self.sizes
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
                format!(
                    "give at least {} different sizes of 1 byte or more, ascending \
                     (G is a slope, and a line through two points cannot be checked)",
                    fit::MIN_SIZES
                ),
            ));
        }
        if self.rounds < fit::MIN_ROUNDS {
            return Err(ParamError::new(
                "rounds",
                self.rounds,
                format!(
                    "at least {} (the intervals resample rounds)",
                    fit::MIN_ROUNDS
                ),
            ));
        }
        if self.iters < self.rounds {
            return Err(ParamError::new(
                "iters",
                self.iters,
                "at least one timed round trip per round (--iters ≥ --rounds)",
            ));
        }
        if self.stream < 2 {
            return Err(ParamError::new(
                "stream",
                self.stream,
                "at least 2 (g is the difference of a stream and one message)",
            ));
        }
        Ok(())
    }

    /// Untimed round trips of `size` before its ping-pong in each round: `warmup`, at
    /// most the size's whole count, as `nf bench pingpong` caps it.
    fn warmup_for(&self, size: usize) -> usize {
        self.warmup.min(iters_for(size, self.iters))
    }

    /// Timed round trips of `size` in one round.
    fn per_round(&self, size: usize) -> usize {
        (iters_for(size, self.iters) / self.rounds).max(1)
    }
}

/// The counts the acknowledgement handlers keep.
struct Counters {
    sunk: Rc<Cell<u64>>,
    acks: Rc<Cell<u64>>,
}

fn elapsed_us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// Measures (collective; ranks 0 and 1 measure, others wait). Rank 0 gets every
/// round's medians per size, to give to [`fit()`]; the other ranks get `None`.
pub fn run(world: &World, p: &Params) -> Result<Option<Vec<SizeRounds>>, CoreError> {
    if world.size() < 2 {
        return Err(CoreError::Collective(
            "loggp needs 2 ranks (nf run -n 2)".into(),
        ));
    }
    let pp = PingPong::new(world)?;
    let c = Counters {
        sunk: Rc::default(),
        acks: Rc::default(),
    };
    let s = Rc::clone(&c.sunk);
    world.register(SINK, move |_, _| s.set(s.get() + 1))?;
    let a = Rc::clone(&c.acks);
    world.register(ACK, move |_, _| a.set(a.get() + 1))?;
    world.barrier()?;
    let mut out: Vec<SizeRounds> = p
        .sizes
        .iter()
        .map(|&size| SizeRounds {
            size,
            rounds: Vec::with_capacity(p.rounds),
        })
        .collect();
    for _ in 0..p.rounds {
        // T over every size first, as `nf bench pingpong` runs: streams of large
        // messages between ping-pongs leave them slower (by 15-25 % at 64 KiB).
        let mut t = Vec::with_capacity(p.sizes.len());
        for &size in &p.sizes {
            world.barrier()?;
            let mut s = pp
                .measure_pair(0, 1, size, p.per_round(size), p.warmup_for(size))?
                .unwrap_or_default();
            t.push(fit::median(&mut s));
        }
        for (k, &size) in p.sizes.iter().enumerate() {
            out[k]
                .rounds
                .push(overheads(world, &c, p, size, t[0], t[k])?);
        }
    }
    world.barrier()?;
    Ok((world.rank() == 0).then_some(out))
}

/// Steps 2–4 of the module docs for one size in one round, given T at the smallest
/// size `t0` and at this one `t_m` (known on rank 0). Rank 0 gets the medians.
fn overheads(
    world: &World,
    c: &Counters,
    p: &Params,
    size: usize,
    t0: f64,
    t_m: f64,
) -> Result<Round, CoreError> {
    let me = world.rank();
    let n = p.per_round(size);
    let buf = vec![0x3Cu8; size];
    // o_s(m) and E₁(m).
    world.barrier()?;
    let (mut o_s, mut e1) = (Vec::with_capacity(n), Vec::with_capacity(n));
    if me == 0 {
        for _ in 0..n {
            let want = c.acks.get() + 1;
            let s = Instant::now();
            world.send(1, SINK, &[], &buf)?;
            o_s.push(elapsed_us(s));
            world.wait_until(|| c.acks.get() == want)?;
            e1.push(elapsed_us(s));
        }
    } else if me == 1 {
        echo_acks(world, c, n, 1, Duration::ZERO, None)?;
    }
    // o_r(m): wait longer than the message takes to arrive (rank 0 knows T), ≤ 1 s.
    world.barrier()?;
    let delay_us = bcast_f64(world, 0, 20.0 + 4.0 * t0 + 3.0 * t_m)?;
    let delay = Duration::from_secs_f64((delay_us * 1e-6).clamp(0.0, 1.0));
    let n_r = (n / 20).max(10);
    let mut o_r = Vec::with_capacity(n_r);
    if me == 0 {
        send_and_wait(world, c, &buf, n_r, 1)?;
    } else if me == 1 {
        echo_acks(world, c, n_r, 1, delay, Some(&mut o_r))?;
    }
    let o_r_m = bcast_f64(world, 1, fit::median(&mut o_r))?;
    // g(m): streams of k, acknowledged at the end.
    world.barrier()?;
    let streams = (n / p.stream).max(3);
    let mut ek = Vec::with_capacity(streams);
    if me == 0 {
        for _ in 0..streams {
            let s = Instant::now();
            send_and_wait(world, c, &buf, 1, p.stream)?;
            ek.push(elapsed_us(s));
        }
    } else if me == 1 {
        echo_acks(world, c, streams, p.stream, Duration::ZERO, None)?;
    }
    let g = (fit::median(&mut ek) - fit::median(&mut e1)) / (p.stream - 1) as f64;
    Ok(Round {
        t_us: t_m,
        o_s_us: fit::median(&mut o_s),
        o_r_us: o_r_m,
        g_us: g,
    })
}

/// Rank 0: `times` times, `per` messages of `buf` to rank 1 and the wait for its
/// acknowledgement.
fn send_and_wait(
    world: &World,
    c: &Counters,
    buf: &[u8],
    times: usize,
    per: usize,
) -> Result<(), CoreError> {
    for _ in 0..times {
        let want = c.acks.get() + 1;
        for _ in 0..per {
            world.send(1, SINK, &[], buf)?;
        }
        world.wait_until(|| c.acks.get() == want)?;
    }
    Ok(())
}

/// Rank 1: `times` times, waits for `per` messages and acknowledges them; with
/// `timed`, first waits `delay` (not polling) and times the handling of the message
/// that has arrived meanwhile.
fn echo_acks(
    world: &World,
    c: &Counters,
    times: usize,
    per: usize,
    delay: Duration,
    mut timed: Option<&mut Vec<f64>>,
) -> Result<(), CoreError> {
    for _ in 0..times {
        let want = c.sunk.get() + per as u64;
        spin(delay);
        let s = Instant::now();
        world.wait_until(|| c.sunk.get() == want)?;
        if let Some(v) = timed.as_deref_mut() {
            v.push(elapsed_us(s));
        }
        world.send(0, ACK, &[], &[])?;
    }
    Ok(())
}

/// Waits `d` without polling and without giving up the CPU: a sleep would leave the
/// caches and the clock speed cold, and o_r would time the wake-up, not the receive.
fn spin(d: Duration) {
    let s = Instant::now();
    while s.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// `v` as `root` has it, on every rank.
fn bcast_f64(world: &World, root: usize, v: f64) -> Result<f64, CoreError> {
    let mut b = v.to_le_bytes().to_vec();
    world.broadcast(root, &mut b)?;
    Ok(f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}
