//! Fitting LogGP to what [`super::run`] measured, with the physical constraints
//! L, o_s, o_r, g, G ≥ 0, a 95 % interval for each parameter, and a refusal when the
//! measurements do not support the model.
//!
//! The input is, per size m and per round, the medians of that round's samples: T(m),
//! o_s(m), o_r(m) and the gap g(m). A round is one pass over all sizes; rounds are
//! interleaved so that slow drift (another process, frequency changes) spreads over
//! every size, and they are the unit of resampling: samples within a round follow
//! each other and are not independent, rounds are far closer to it.
//!
//! 1. Per size, the median over rounds of each quantity.
//! 2. g and G: the line g(m) = g + (m − 1)·G by weighted least squares with weights
//!    1/g(m)² (relative errors, so the 1 MiB point does not decide the intercept; the
//!    floor is 10 ns, the clock's resolution), under g, G ≥ 0. With two unknowns the
//!    constrained optimum is the unconstrained one or lies on a face (g = 0, G = 0 or
//!    both), so it is found exactly by comparing those candidates.
//! 3. o_s and o_r: their medians at the smallest size m₀ (LogGP's overheads are per
//!    message; the growth of o_s(m) with m is the copy, reported per size).
//! 4. L = T(m₀) − o_s − o_r − (m₀ − 1)·G, and 0 where that is negative.
//! 5. Intervals: the percentile bootstrap, [`BOOTSTRAP`] times resampling the rounds
//!    with replacement (the same rounds for every size) and repeating 1–4.
//!
//! Refused ([`Refusal`]) rather than reported: fewer than [`MIN_SIZES`] sizes or
//! [`MIN_ROUNDS`] rounds; a parameter whose unconstrained interval lies wholly below
//! −[`NEGATIVE`] of its scale (the data say it is negative: the constraint would hide
//! a model that does not fit); one whose unconstrained interval reaches below
//! −[`NOISY`] times its scale (too noisy to place it); and a gap line whose relative
//! RMS residual exceeds [`MAX_GAP_REL_RMS`]. The scale of L and g is T(m₀); that of G
//! is T at the largest size divided by its bytes.
//!
//! Why L may bind a little: o_s and o_r are each timed alone, with a clock read each,
//! while a ping-pong's receiver is already polling when the message lands. Where the
//! "wire" is a cache line (shared memory) or the sender's own system call (loopback
//! TCP), L is close to 0 and o_s + o_r can exceed T by a fraction of it; L is then 0,
//! its interval says so, and the residual at m₀ shows the excess. Only an excess of
//! more than T itself is refused (on shared memory at 8 B, T is
//! 0.15–0.5 µs and o_s + o_r, each with its clock reads, 0.2–0.3 µs).
//!
//! T̂(m) = L + o_s + o_r + (m − 1)·G is LogGP's, with constant overheads. Where the
//! CPU copies (shared memory, TCP) o_s(m) and o_r(m) grow with m and T̂ falls short of
//! T at large sizes; the per-size residuals show it, and they are not a reason to
//! refuse: G, the streaming rate, is still what was measured.

use serde::Serialize;

use crate::rng::SplitMix64;

/// Least number of different sizes the fit accepts (two unknowns in the gap line,
/// and one more to see whether it is a line).
pub const MIN_SIZES: usize = 3;
/// Least number of rounds: the bootstrap resamples rounds.
pub const MIN_ROUNDS: usize = 3;
/// Bootstrap replicates.
pub const BOOTSTRAP: usize = 1000;
/// Largest accepted relative RMS residual of the gap line.
pub const MAX_GAP_REL_RMS: f64 = 0.5;
/// How far below zero, as a fraction of its scale, the whole unconstrained interval
/// of a parameter may lie before the fit is refused.
pub const NEGATIVE: f64 = 1.0;
/// How many times its scale the unconstrained interval may reach below zero.
pub const NOISY: f64 = 2.0;
/// Smallest time a weight is computed from, µs (the clock's resolution).
const FLOOR_US: f64 = 0.01;

/// One round's medians at one size, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Round {
    /// Half round trip.
    pub t_us: f64,
    /// Time of one `send` call.
    pub o_s_us: f64,
    /// Time to handle a message that has already arrived.
    pub o_r_us: f64,
    /// Time per message of a back-to-back stream.
    pub g_us: f64,
}

/// Every round at one size.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeRounds {
    /// Bytes.
    pub size: usize,
    /// One entry per round, in the order measured.
    pub rounds: Vec<Round>,
}

/// A fitted parameter with its 95 % bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    /// The fit on the medians.
    pub value: f64,
    /// 2.5th percentile of the bootstrap.
    pub lo: f64,
    /// 97.5th percentile of the bootstrap.
    pub hi: f64,
}

/// The fitted parameters (µs, G in µs per byte).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Model {
    /// Smallest size, bytes: where o_s, o_r and L are taken.
    pub m0: usize,
    /// L.
    pub l_us: Estimate,
    /// o_s at m₀.
    pub o_s_us: Estimate,
    /// o_r at m₀.
    pub o_r_us: Estimate,
    /// g, the intercept of the gap line.
    pub g_us: Estimate,
    /// G, its slope.
    pub big_g_us_per_byte: Estimate,
    /// Relative RMS residual of the gap line.
    pub gap_fit_rel_rms: f64,
    /// Rounds the intervals resample.
    pub rounds: usize,
}

impl Model {
    /// T̂(m) = L + o_s + o_r + (m − 1)·G.
    pub fn half_rtt_us(&self, m: usize) -> f64 {
        self.l_us.value
            + self.o_s_us.value
            + self.o_r_us.value
            + (m as f64 - 1.0) * self.big_g_us_per_byte.value
    }

    /// 1/G in MB/s (MB = 10⁶ B) for an estimate of G: infinite where G is 0.
    pub fn mb_per_s(big_g_us_per_byte: f64) -> f64 {
        if big_g_us_per_byte > 0.0 {
            1.0 / big_g_us_per_byte
        } else {
            f64::INFINITY
        }
    }
}

/// The medians of one size and the model's T̂ there, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
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

/// Why the measurements do not support a LogGP fit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refusal {
    /// Too few sizes for a line and a check of it.
    #[error("{0} different sizes: the fit needs at least {MIN_SIZES}")]
    TooFewSizes(usize),
    /// Too few rounds for an interval.
    #[error("{0} rounds: the intervals need at least {MIN_ROUNDS}")]
    TooFewRounds(usize),
    /// A parameter the data put below zero.
    #[error(
        "{param} comes out below zero, {value:.4} [{lo:.4}, {hi:.4}] {unit} before the \
         constraint {param} ≥ 0: the measured parts do not add up as LogGP says they do"
    )]
    Negative {
        /// Which.
        param: &'static str,
        /// Unconstrained estimate.
        value: f64,
        /// Its interval.
        lo: f64,
        /// Its interval.
        hi: f64,
        /// µs or µs/B.
        unit: &'static str,
    },
    /// A parameter too noisy to place.
    #[error(
        "{param}'s interval [{lo:.4}, {hi:.4}] {unit} reaches far below zero: the \
         measurements are too noisy to place it"
    )]
    Noisy {
        /// Which.
        param: &'static str,
        /// Unconstrained interval.
        lo: f64,
        /// Unconstrained interval.
        hi: f64,
        /// µs or µs/B.
        unit: &'static str,
    },
    /// The gap is not a line in m.
    #[error(
        "the gap g(m) departs from the line g + (m − 1)·G by {:.0} % (RMS; at most {:.0} % \
         accepted)",
        .0 * 100.0,
        MAX_GAP_REL_RMS * 100.0
    )]
    NotALine(f64),
}

/// The parameters of one fit, constrained and not.
#[derive(Debug, Clone, Copy)]
struct Fitted {
    /// L, o_s, o_r, g, G under the constraints.
    fit: [f64; 5],
    /// The same without them.
    free: [f64; 5],
    gap_rel_rms: f64,
}

const NAMES: [(&str, &str); 5] = [
    ("L", "µs"),
    ("o_s", "µs"),
    ("o_r", "µs"),
    ("g", "µs"),
    ("G", "µs/B"),
];

/// Fits the model to `sizes` (ascending, each with the same number of rounds).
pub fn fit(sizes: &[SizeRounds]) -> Result<(Model, Vec<Point>), Refusal> {
    if sizes.len() < MIN_SIZES {
        return Err(Refusal::TooFewSizes(sizes.len()));
    }
    let rounds = sizes.iter().map(|s| s.rounds.len()).min().unwrap_or(0);
    if rounds < MIN_ROUNDS {
        return Err(Refusal::TooFewRounds(rounds));
    }
    let all: Vec<usize> = (0..rounds).collect();
    let medians = medians_of(sizes, &all);
    let best = fit_medians(sizes, &medians);
    let mut rng = SplitMix64(0x4C6F_6747_5000_0001);
    let mut pick = vec![0; rounds];
    let reps: Vec<Fitted> = (0..BOOTSTRAP)
        .map(|_| {
            for p in &mut pick {
                *p = rng.below(rounds);
            }
            fit_medians(sizes, &medians_of(sizes, &pick))
        })
        .collect();
    let interval = |get: &dyn Fn(&Fitted) -> f64| {
        let mut v: Vec<f64> = reps.iter().map(get).collect();
        v.sort_by(f64::total_cmp);
        (percentile(&v, 0.025), percentile(&v, 0.975))
    };
    let t_first = medians[0][0];
    let (last, t_last) = (sizes[sizes.len() - 1].size, medians[sizes.len() - 1][0]);
    for (k, &(param, unit)) in NAMES.iter().enumerate() {
        let scale = if k == 4 {
            t_last / last as f64
        } else {
            t_first
        };
        let (lo, hi) = interval(&|f: &Fitted| f.free[k]);
        if hi < -NEGATIVE * scale {
            return Err(Refusal::Negative {
                param,
                value: best.free[k],
                lo,
                hi,
                unit,
            });
        }
        if lo < -NOISY * scale {
            return Err(Refusal::Noisy {
                param,
                lo,
                hi,
                unit,
            });
        }
    }
    if best.gap_rel_rms > MAX_GAP_REL_RMS {
        return Err(Refusal::NotALine(best.gap_rel_rms));
    }
    let est = |k: usize| {
        let (lo, hi) = interval(&|f: &Fitted| f.fit[k]);
        Estimate {
            value: best.fit[k],
            lo,
            hi,
        }
    };
    let model = Model {
        m0: sizes[0].size,
        l_us: est(0),
        o_s_us: est(1),
        o_r_us: est(2),
        g_us: est(3),
        big_g_us_per_byte: est(4),
        gap_fit_rel_rms: best.gap_rel_rms,
        rounds,
    };
    let points = sizes
        .iter()
        .zip(&medians)
        .map(|(s, &[t, o_s, o_r, g])| {
            let t_model = model.half_rtt_us(s.size);
            Point {
                size: s.size,
                t_us: t,
                o_s_us: o_s,
                o_r_us: o_r,
                g_us: g,
                t_model_us: t_model,
                residual_us: t - t_model,
            }
        })
        .collect();
    Ok((model, points))
}

/// Per size, the medians over all rounds: what was measured, model or not.
pub fn medians(sizes: &[SizeRounds]) -> Vec<Round> {
    let all: Vec<usize> = (0..sizes.iter().map(|s| s.rounds.len()).min().unwrap_or(0)).collect();
    medians_of(sizes, &all)
        .into_iter()
        .map(|[t_us, o_s_us, o_r_us, g_us]| Round {
            t_us,
            o_s_us,
            o_r_us,
            g_us,
        })
        .collect()
}

/// Per size, the medians of T, o_s, o_r and g over the rounds `pick`.
fn medians_of(sizes: &[SizeRounds], pick: &[usize]) -> Vec<[f64; 4]> {
    let mut buf = Vec::with_capacity(pick.len());
    sizes
        .iter()
        .map(|s| {
            let mut of = |get: fn(&Round) -> f64| {
                buf.clear();
                buf.extend(pick.iter().map(|&r| get(&s.rounds[r])));
                median(&mut buf)
            };
            [
                of(|r| r.t_us),
                of(|r| r.o_s_us),
                of(|r| r.o_r_us),
                of(|r| r.g_us),
            ]
        })
        .collect()
}

/// Steps 2–4 of the module docs on per-size medians.
fn fit_medians(sizes: &[SizeRounds], medians: &[[f64; 4]]) -> Fitted {
    let x: Vec<f64> = sizes.iter().map(|s| s.size as f64 - 1.0).collect();
    let y: Vec<f64> = medians.iter().map(|m| m[3]).collect();
    let w: Vec<f64> = y
        .iter()
        .map(|v| 1.0 / v.abs().max(FLOOR_US).powi(2))
        .collect();
    let (free_g, free_big_g) = wls_line(&x, &y, &w);
    let (g, big_g) = nn_line(&x, &y, &w);
    let sse = x
        .iter()
        .zip(&y)
        .zip(&w)
        .map(|((x, y), w)| w * (y - g - big_g * x).powi(2))
        .sum::<f64>();
    let [t0, o_s, o_r, _] = medians[0];
    let l_free = t0 - o_s - o_r - x[0] * free_big_g;
    let l = (t0 - o_s - o_r - x[0] * big_g).max(0.0);
    Fitted {
        fit: [l, o_s, o_r, g, big_g],
        free: [l_free, o_s, o_r, free_g, free_big_g],
        gap_rel_rms: (sse / x.len() as f64).sqrt(),
    }
}

/// Weighted least-squares line `y = a + b·x`: `(a, b)`; a flat line through the
/// weighted mean where all `x` are equal.
fn wls_line(x: &[f64], y: &[f64], w: &[f64]) -> (f64, f64) {
    let sw: f64 = w.iter().sum();
    let mx = x.iter().zip(w).map(|(x, w)| w * x).sum::<f64>() / sw;
    let my = y.iter().zip(w).map(|(y, w)| w * y).sum::<f64>() / sw;
    let (mut sxx, mut sxy) = (0.0, 0.0);
    for ((x, y), w) in x.iter().zip(y).zip(w) {
        sxx += w * (x - mx) * (x - mx);
        sxy += w * (x - mx) * (y - my);
    }
    if sxx == 0.0 {
        return (my, 0.0);
    }
    let b = sxy / sxx;
    (my - b * mx, b)
}

/// [`wls_line`] under `a, b ≥ 0`: the unconstrained optimum if feasible, else the
/// best of the faces `a = 0`, `b = 0` (each clamped), which is exact for a convex
/// problem in two unknowns.
fn nn_line(x: &[f64], y: &[f64], w: &[f64]) -> (f64, f64) {
    let (a, b) = wls_line(x, y, w);
    if a >= 0.0 && b >= 0.0 {
        return (a, b);
    }
    let sse = |a: f64, b: f64| {
        x.iter()
            .zip(y)
            .zip(w)
            .map(|((x, y), w)| w * (y - a - b * x).powi(2))
            .sum::<f64>()
    };
    let sum = |f: &dyn Fn(f64, f64, f64) -> f64| {
        x.iter()
            .zip(y)
            .zip(w)
            .map(|((x, y), w)| f(*x, *y, *w))
            .sum::<f64>()
    };
    let sxx = sum(&|x, _, w| w * x * x);
    let slope_only = if sxx > 0.0 {
        (sum(&|x, y, w| w * x * y) / sxx).max(0.0)
    } else {
        0.0
    };
    let icpt_only = (sum(&|_, y, w| w * y) / sum(&|_, _, w| w)).max(0.0);
    [(0.0, slope_only), (icpt_only, 0.0)]
        .into_iter()
        .min_by(|p, q| sse(p.0, p.1).total_cmp(&sse(q.0, q.1)))
        .unwrap_or((0.0, 0.0))
}

/// Median of `v` (reordered); NaN when empty.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The `q` quantile of sorted `v`, interpolating between ranks.
fn percentile(v: &[f64], q: f64) -> f64 {
    let pos = q * (v.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    match v.get(i + 1) {
        Some(next) => v[i] + frac * (next - v[i]),
        None => v[i],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZES: [usize; 7] = [8, 64, 512, 4096, 32768, 262_144, 1_048_576];

    /// Rounds of a route with parameters `[L, o_s, o_r, g, G]`, each round's medians
    /// off by up to ±`noise` (relative, uniform, fixed seed).
    fn synthetic(p: [f64; 5], noise: f64, rounds: usize) -> Vec<SizeRounds> {
        let [l, o_s, o_r, g, big_g] = p;
        let mut rng = SplitMix64(7);
        let mut jitter = |v: f64| {
            let u = rng.uniform();
            v * (1.0 + noise * (2.0 * u - 1.0))
        };
        SIZES
            .iter()
            .map(|&m| {
                let x = m as f64 - 1.0;
                SizeRounds {
                    size: m,
                    rounds: (0..rounds)
                        .map(|_| Round {
                            t_us: jitter(l + o_s + o_r + x * big_g),
                            o_s_us: jitter(o_s),
                            o_r_us: jitter(o_r),
                            g_us: jitter(g + x * big_g),
                        })
                        .collect(),
                }
            })
            .collect()
    }

    fn all(m: &Model) -> [Estimate; 5] {
        [m.l_us, m.o_s_us, m.o_r_us, m.g_us, m.big_g_us_per_byte]
    }

    #[test]
    fn known_parameters_lie_within_their_intervals() {
        // 10 GB/s; 5 % noise on every round.
        let truth = [0.5, 0.2, 0.3, 0.25, 1e-4];
        let (model, points) = fit(&synthetic(truth, 0.05, 15)).unwrap();
        for (e, t) in all(&model).iter().zip(truth) {
            assert!(0.0 <= e.lo && e.lo <= e.value && e.value <= e.hi, "{e:?}");
            assert!(e.lo <= t && t <= e.hi, "{t} outside {e:?}");
            assert!((e.value - t).abs() <= 0.1 * t, "{t} vs {e:?}");
        }
        assert!((Model::mb_per_s(model.big_g_us_per_byte.value) - 1e4).abs() < 500.0);
        assert_eq!((model.m0, model.rounds), (8, 15));
        for p in &points {
            assert!((p.t_model_us + p.residual_us - p.t_us).abs() < 1e-9);
            assert!(p.residual_us.abs() <= 0.1 * p.t_us, "{p:?}");
        }
    }

    #[test]
    fn a_zero_latency_stays_at_zero_and_is_never_negative() {
        // Shared memory: the message is there once written, L = 0 and g = 0; noise
        // pushes the unconstrained L and g below zero in about half the resamples.
        let truth = [0.0, 0.2, 0.3, 0.0, 1e-4];
        let (model, _) = fit(&synthetic(truth, 0.05, 15)).unwrap();
        for e in all(&model) {
            assert!(0.0 <= e.lo && e.lo <= e.value && e.value <= e.hi, "{e:?}");
        }
        assert_eq!(model.l_us.lo, 0.0, "{model:?}");
        assert!(model.l_us.hi < 0.1 && model.g_us.hi < 0.1, "{model:?}");
    }

    #[test]
    fn overheads_larger_than_the_round_trip_are_refused() {
        // o_s + o_r exceeds T by 0.6 µs, more than T itself.
        let truth = [-0.6, 0.6, 0.5, 0.25, 1e-4];
        match fit(&synthetic(truth, 0.02, 15)) {
            Err(Refusal::Negative { param: "L", hi, .. }) => assert!(hi < 0.0),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn noise_larger_than_the_quantities_is_refused() {
        let truth = [0.5, 0.2, 0.3, 0.25, 1e-4];
        let e = fit(&synthetic(truth, 10.0, 15)).unwrap_err();
        assert!(
            matches!(e, Refusal::Noisy { .. } | Refusal::Negative { .. }),
            "{e}"
        );
    }

    #[test]
    fn a_gap_that_is_no_line_is_refused() {
        let mut data = synthetic([0.5, 0.2, 0.3, 0.25, 1e-4], 0.01, 15);
        for (k, s) in data.iter_mut().enumerate() {
            for r in &mut s.rounds {
                r.g_us *= if k % 2 == 0 { 4.0 } else { 0.25 };
            }
        }
        assert!(matches!(fit(&data), Err(Refusal::NotALine(_))));
    }

    #[test]
    fn too_few_sizes_or_rounds_are_refused() {
        let data = synthetic([0.5, 0.2, 0.3, 0.25, 1e-4], 0.01, 15);
        assert_eq!(fit(&data[..2]), Err(Refusal::TooFewSizes(2)));
        let short = synthetic([0.5, 0.2, 0.3, 0.25, 1e-4], 0.01, 2);
        assert_eq!(fit(&short), Err(Refusal::TooFewRounds(2)));
    }

    #[test]
    fn the_non_negative_line_is_the_constrained_optimum() {
        let x = [0.0, 1.0, 2.0, 3.0];
        let w = [1.0; 4];
        assert_eq!(nn_line(&x, &[1.0, 3.0, 5.0, 7.0], &w), (1.0, 2.0));
        // Falling line: the best non-negative one is flat through the mean.
        assert_eq!(nn_line(&x, &[4.0, 3.0, 2.0, 1.0], &w), (2.5, 0.0));
        // Negative intercept: the best line through the origin.
        let (a, b) = nn_line(&x, &[-1.0, 1.0, 3.0, 5.0], &w);
        assert_eq!(a, 0.0);
        assert!((b - 22.0 / 14.0).abs() < 1e-12);
    }
}
