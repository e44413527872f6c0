//! The LogGP parameters of the route between ranks 0 and 1 (seed 004, ch. 3):
//! latency L, send and receive overheads o_s and o_r, gap g between small messages,
//! and gap per byte G.
//!
//! Method (in the spirit of Kielmann et al.'s parametrised round trips), per size m:
//! - T(m): median half round trip of a ping-pong;
//! - o_s(m): median time of one `send` call, the receiver acknowledging each message
//!   before the next is sent (the wait for the acknowledgement is not timed);
//! - o_r(m): median time the receiver spends handling a message that has already
//!   arrived: it sleeps longer than a round trip before it polls, then times the poll;
//! - g(m): time per message of a stream of k back-to-back messages, the stream timed
//!   from its first send to the receiver's acknowledgement, minus one T(0).
//!
//! Fit: g(m) = g + (m − 1)·G by least squares over all sizes (G, and g as the
//! intercept); L = T(m₀) − o_s(m₀) − o_r(m₀) at the smallest size m₀. The model's
//! ping-pong is T̂(m) = L + o_s(m₀) + o_r(m₀) + (m − m₀)·G, drawn over the measured
//! one, with the residuals T(m) − T̂(m).

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nf_core::{CoreError, World};
use serde::Serialize;

use crate::pingpong::PingPong;
use crate::stats::Summary;

const SINK: u16 = 0x0B23;
const ACK: u16 = 0x0B24;

/// What to measure.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// Message sizes in bytes (at least two).
    pub sizes: Vec<usize>,
    /// Repetitions per size and measurement.
    pub iters: usize,
    /// Messages per stream for g(m).
    pub stream: usize,
}

/// The measured figures of one size, µs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Point {
    /// Bytes.
    pub size: usize,
    /// Half round trip.
    pub t_us: f64,
    /// Send overhead.
    pub o_s_us: f64,
    /// Receive overhead.
    pub o_r_us: f64,
    /// Gap per message in a stream.
    pub g_us: f64,
    /// The model's half round trip.
    pub t_model_us: f64,
    /// `t_us − t_model_us`.
    pub residual_us: f64,
}

/// The fitted parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Model {
    /// L, µs.
    pub l_us: f64,
    /// o_s at the smallest size, µs.
    pub o_s_us: f64,
    /// o_r at the smallest size, µs.
    pub o_r_us: f64,
    /// g (the intercept of the gap fit), µs.
    pub g_us: f64,
    /// G, µs per byte.
    pub big_g_us_per_byte: f64,
    /// Root mean square of the gap fit's residuals, µs.
    pub gap_fit_rms_us: f64,
}

impl Model {
    /// The model's bandwidth for large messages, MB/s (1 / G).
    pub fn mb_per_s(&self) -> f64 {
        if self.big_g_us_per_byte > 0.0 {
            1.0 / self.big_g_us_per_byte
        } else {
            f64::INFINITY
        }
    }

    /// T̂(m) for a model fitted at smallest size `m0`.
    pub fn half_rtt_us(&self, m: usize, m0: usize) -> f64 {
        self.l_us + self.o_s_us + self.o_r_us + (m as f64 - m0 as f64) * self.big_g_us_per_byte
    }
}

/// Least-squares line through `(x, y)`: `(intercept, slope, residuals)`.
pub fn fit_line(x: &[f64], y: &[f64]) -> Option<(f64, f64, Vec<f64>)> {
    let n = x.len();
    if n < 2 || n != y.len() {
        return None;
    }
    let (mx, my) = (
        x.iter().sum::<f64>() / n as f64,
        y.iter().sum::<f64>() / n as f64,
    );
    let sxx: f64 = x.iter().map(|a| (a - mx) * (a - mx)).sum();
    if sxx == 0.0 {
        return None;
    }
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = sxy / sxx;
    let icpt = my - slope * mx;
    let res = x
        .iter()
        .zip(y)
        .map(|(a, b)| b - (icpt + slope * a))
        .collect();
    Some((icpt, slope, res))
}

/// Fits the model to per-size measurements `(size, t, o_s, o_r, g)` (sizes ascending).
pub fn fit(raw: &[(usize, f64, f64, f64, f64)]) -> Option<(Model, Vec<Point>)> {
    let first = raw.first()?;
    let xs: Vec<f64> = raw.iter().map(|r| (r.0 as f64) - 1.0).collect();
    let gs: Vec<f64> = raw.iter().map(|r| r.4).collect();
    let (g, big_g, res) = fit_line(&xs, &gs)?;
    let rms = (res.iter().map(|r| r * r).sum::<f64>() / res.len() as f64).sqrt();
    let model = Model {
        l_us: first.1 - first.2 - first.3,
        o_s_us: first.2,
        o_r_us: first.3,
        g_us: g,
        big_g_us_per_byte: big_g,
        gap_fit_rms_us: rms,
    };
    let points = raw
        .iter()
        .map(|&(size, t, o_s, o_r, g)| {
            let t_model = model.half_rtt_us(size, first.0);
            Point {
                size,
                t_us: t,
                o_s_us: o_s,
                o_r_us: o_r,
                g_us: g,
                t_model_us: t_model,
                residual_us: t - t_model,
            }
        })
        .collect();
    Some((model, points))
}

/// Handler state.
struct Counters {
    sunk: Rc<Cell<u64>>,
    acks: Rc<Cell<u64>>,
}

fn median(v: &[f64]) -> f64 {
    Summary::from_samples(v).map_or(0.0, |s| s.median)
}

fn elapsed_us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// Measures and fits (collective; ranks 0 and 1 measure, others wait). Rank 0 gets
/// the model and the points.
pub fn run(world: &World, p: &Params) -> Result<Option<(Model, Vec<Point>)>, CoreError> {
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
    let me = world.rank();
    let mut raw = Vec::new();
    let mut t0 = 0.0;
    for &size in &p.sizes {
        let buf = vec![0x3Cu8; size];
        world.barrier()?;
        // T(m)
        let t = pp.measure_pair(0, 1, size, p.iters, 0)?.unwrap_or_default();
        let t_m = median(&t);
        if raw.is_empty() {
            t0 = t_m;
        }
        // o_s(m): each send timed; rank 1 acknowledges each message.
        world.barrier()?;
        let mut o_s = Vec::new();
        if me == 0 {
            for _ in 0..p.iters {
                let want = c.acks.get() + 1;
                let s = Instant::now();
                world.send(1, SINK, &[], &buf)?;
                o_s.push(elapsed_us(s));
                world.wait_until(|| c.acks.get() == want)?;
            }
        } else if me == 1 {
            for _ in 0..p.iters {
                let want = c.sunk.get() + 1;
                world.wait_until(|| c.sunk.get() == want)?;
                world.send(0, ACK, &[], &[])?;
            }
        }
        // o_r(m): rank 1 sleeps past the arrival, then times handling the message.
        world.barrier()?;
        let mut o_r = Vec::new();
        // Longer than the message takes to arrive (rank 0 knows T), at most 1 s.
        let delay_us = bcast_f64(world, 0, 20.0 + 4.0 * t0 + 3.0 * t_m)?;
        let delay = Duration::from_secs_f64((delay_us * 1e-6).clamp(0.0, 1.0));
        if me == 0 {
            for _ in 0..p.iters {
                let want = c.acks.get() + 1;
                world.send(1, SINK, &[], &buf)?;
                world.wait_until(|| c.acks.get() == want)?;
            }
        } else if me == 1 {
            for _ in 0..p.iters {
                let want = c.sunk.get() + 1;
                std::thread::sleep(delay);
                let s = Instant::now();
                world.wait_until(|| c.sunk.get() == want)?;
                o_r.push(elapsed_us(s));
                world.send(0, ACK, &[], &[])?;
            }
        }
        let o_r_m = bcast_f64(world, 1, median(&o_r))?;
        // g(m): a stream of back-to-back messages, acknowledged at the end.
        world.barrier()?;
        let reps = (p.iters / 10).max(3);
        let mut g = Vec::new();
        for _ in 0..reps {
            if me == 0 {
                let want = c.acks.get() + 1;
                let s = Instant::now();
                for _ in 0..p.stream {
                    world.send(1, SINK, &[], &buf)?;
                }
                world.wait_until(|| c.acks.get() == want)?;
                g.push(((elapsed_us(s) - t0) / p.stream as f64).max(0.0));
            } else if me == 1 {
                let want = c.sunk.get() + p.stream as u64;
                world.wait_until(|| c.sunk.get() == want)?;
                world.send(0, ACK, &[], &[])?;
            }
        }
        raw.push((size, t_m, median(&o_s), o_r_m, median(&g)));
    }
    world.barrier()?;
    if me != 0 {
        return Ok(None);
    }
    Ok(fit(&raw))
}

/// `v` as `root` has it, on every rank.
fn bcast_f64(world: &World, root: usize, v: f64) -> Result<f64, CoreError> {
    let mut b = v.to_le_bytes().to_vec();
    world.broadcast(root, &mut b)?;
    Ok(f64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_recovered_exactly() {
        let (a, b, r) = fit_line(&[0.0, 1.0, 2.0, 3.0], &[1.0, 3.0, 5.0, 7.0]).unwrap();
        assert!((a - 1.0).abs() < 1e-12 && (b - 2.0).abs() < 1e-12);
        assert!(r.iter().all(|x| x.abs() < 1e-12));
        assert!(fit_line(&[1.0], &[1.0]).is_none());
        assert!(fit_line(&[2.0, 2.0], &[1.0, 3.0]).is_none());
    }

    #[test]
    fn the_fit_recovers_known_parameters_from_synthetic_data() {
        // L = 0.5, o_s = 0.2, o_r = 0.3, g = 0.25, G = 1e-4 µs/B (10 GB/s), with a
        // deterministic ±1 % wobble on g(m).
        let (l, os, or, g, big_g) = (0.5, 0.2, 0.3, 0.25, 1e-4);
        let sizes = [8usize, 64, 512, 4096, 32768, 262_144, 1_048_576];
        let raw: Vec<_> = sizes
            .iter()
            .enumerate()
            .map(|(k, &m)| {
                let wobble = if k % 2 == 0 { 1.01 } else { 0.99 };
                let gm = (g + (m as f64 - 1.0) * big_g) * wobble;
                let t = l + os + or + (m as f64 - 8.0) * big_g;
                (m, t, os, or, gm)
            })
            .collect();
        let (model, points) = fit(&raw).unwrap();
        assert!((model.l_us - l).abs() < 1e-9, "{model:?}");
        assert!((model.o_s_us - os).abs() < 1e-12 && (model.o_r_us - or).abs() < 1e-12);
        assert!(
            (model.big_g_us_per_byte - big_g).abs() / big_g < 0.02,
            "{model:?}"
        );
        assert!((model.g_us - g).abs() < 0.3, "{model:?}");
        assert!((model.mb_per_s() - 10_000.0).abs() / 10_000.0 < 0.02);
        // The model's ping-pong follows the synthetic one within the wobble.
        for p in &points {
            assert!(p.residual_us.abs() <= 0.02 * p.t_us + 1e-9, "{p:?}");
        }
        assert!(fit(&raw[..1]).is_none());
    }
}
