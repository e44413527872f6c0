//! Whether two runs differ, judged on their repetition medians.
//!
//! Samples taken one after another are not independent: a busy core, a frequency step
//! or a page-cache state lasts for many of them, so a test that counts thousands of
//! samples as thousands of observations finds every pair of runs "significantly"
//! different, two identical runs back to back included. Here each repetition is one
//! observation: its median. Repetitions start an interval apart, and what is left of
//! the dependence between them is treated as noise of that one observation.
//!
//! 1. Per run, the logarithms of the repetition medians (so the effect is a ratio and
//!    its interval is symmetric in it).
//! 2. The effect: exp(mean of this run's − mean of the earlier run's), the ratio of the
//!    geometric means of the medians (below 1: this run is faster).
//! 3. Its (1 − 2α) confidence interval from Welch's t (unequal spreads, unequal
//!    counts; the degrees of freedom rounded down, which widens the interval). Where
//!    neighbouring repetitions are alike (the machine's state outlasts an interval),
//!    a run holds fewer independent observations than repetitions: each run counts as
//!    n·(1 − ρ)/(1 + ρ), ρ the lag-1 autocorrelation of its medians (where positive),
//!    the effective size of an AR(1) series.
//! 4. The verdict against a practical-equivalence margin m (two one-sided tests, each
//!    at level α): "no difference" when the interval lies within [1/(1+m), 1+m];
//!    "differs" when it lies wholly outside; "inconclusive" otherwise, with an
//!    estimate of the repetitions per run a verdict would need at the spread seen.

use serde::{Deserialize, Serialize};

/// Fewer repetitions than this in either run leave the spread unknown or the interval
/// too wide to call anything.
pub const MIN_REPS: usize = 3;

/// The default margin: ratios within 5 % either way are practically the same (about
/// what a busy core or a frequency step moves a median between runs).
pub const DEFAULT_MARGIN: f64 = 0.05;

/// What the interval says about the margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The interval lies within the margin.
    NoDifference,
    /// The interval lies wholly outside the margin.
    Differs,
    /// Neither: too few repetitions, or too much spread, or an effect near the margin.
    Inconclusive,
}

impl Verdict {
    /// The words in reports.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::NoDifference => "no difference",
            Verdict::Differs => "differs",
            Verdict::Inconclusive => "inconclusive",
        }
    }
}

/// This run's repetition medians against an earlier run's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Shift {
    /// Repetitions of this run.
    pub reps: usize,
    /// Repetitions of the earlier run.
    pub earlier_reps: usize,
    /// Ratio of the geometric means of the repetition medians, this / earlier.
    pub ratio: f64,
    /// Lower end of its confidence interval (`None` below [`MIN_REPS`] repetitions).
    pub ratio_lo: Option<f64>,
    /// Upper end of its confidence interval.
    pub ratio_hi: Option<f64>,
    /// The interval's confidence level, 1 − 2α.
    pub confidence: f64,
    /// Ratios within [1/(1 + margin), 1 + margin] count as no difference.
    pub margin: f64,
    /// What the interval says.
    pub verdict: Verdict,
    /// When inconclusive: about how many repetitions each run would need for a verdict,
    /// at the spread and effect seen ([`MIN_REPS`] where a run has fewer, a least
    /// count; `None` where the effect sits on the margin).
    pub reps_needed: Option<usize>,
}

/// Mean and sample variance.
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = if x.len() > 1 {
        x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// A run's log medians as observations: their mean, the variance of that mean, and
/// the effective count behind it (fewer than the repetitions where neighbours are
/// alike; ρ capped at 0.9 so a short run's noisy estimate cannot zero the count).
fn summary(x: &[f64]) -> (f64, f64, f64) {
    let (mean, var) = mean_var(x);
    let n = x.len() as f64;
    let c0: f64 = x.iter().map(|v| (v - mean) * (v - mean)).sum();
    let c1: f64 = x.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum();
    let rho = if c0 > 0.0 {
        (c1 / c0).clamp(0.0, 0.9)
    } else {
        0.0
    };
    let n_eff = (n * (1.0 - rho) / (1.0 + rho)).max(2.0).min(n);
    (mean, var / n_eff, n_eff)
}

/// P(|T| < t) for Student's t with `df` (≥ 1) whole degrees of freedom, by the finite
/// series of Abramowitz & Stegun 26.7.3–4, written in θ = atan(t / √df).
fn t_central(theta: f64, df: u32) -> f64 {
    let (s, c2) = (theta.sin(), theta.cos() * theta.cos());
    // Terms 1, (1/2)c², (1·3)/(2·4)c⁴, … (even df) or 1, (2/3)c², (2·4)/(3·5)c⁴, … (odd).
    let even = df.is_multiple_of(2);
    let (mut term, mut sum, mut k) = (1.0, 1.0, if even { 1 } else { 2 });
    while k + 1 < df {
        term *= f64::from(k) / f64::from(k + 1) * c2;
        sum += term;
        k += 2;
    }
    if even {
        s * sum
    } else if df == 1 {
        2.0 * theta / std::f64::consts::PI
    } else {
        2.0 / std::f64::consts::PI * (theta + s * theta.cos() * sum)
    }
}

/// The t such that P(T < t) = `p` (0.5 < p < 1) for `df` whole degrees of freedom.
pub fn t_quantile(p: f64, df: u32) -> f64 {
    let want = 2.0 * p - 1.0;
    // P(|T| < t) rises with θ from 0 to π/2: bisect on θ, which is bounded.
    let (mut lo, mut hi) = (0.0, std::f64::consts::FRAC_PI_2);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if t_central(mid, df.max(1)) < want {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    f64::from(df.max(1)).sqrt() * (0.5 * (lo + hi)).tan()
}

/// Compares this run's repetition medians with an earlier run's (both positive, µs);
/// `alpha` is each one-sided test's level, `margin` the practical-equivalence margin
/// (0.05: 5 %). `None` if either run has no positive median.
pub fn compare(medians: &[f64], earlier: &[f64], alpha: f64, margin: f64) -> Option<Shift> {
    let logs = |v: &[f64]| -> Vec<f64> {
        v.iter()
            .filter(|x| x.is_finite() && **x > 0.0)
            .map(|x| x.ln())
            .collect()
    };
    let (x, y) = (logs(medians), logs(earlier));
    if x.is_empty() || y.is_empty() {
        return None;
    }
    let ((mx, ex, nx), (my, ey, ny)) = (summary(&x), summary(&y));
    let d = mx - my;
    let bound = margin.ln_1p();
    let mut shift = Shift {
        reps: x.len(),
        earlier_reps: y.len(),
        ratio: d.exp(),
        ratio_lo: None,
        ratio_hi: None,
        confidence: 1.0 - 2.0 * alpha,
        margin,
        verdict: Verdict::Inconclusive,
        reps_needed: None,
    };
    if x.len() < MIN_REPS || y.len() < MIN_REPS {
        shift.reps_needed = Some(MIN_REPS);
        return Some(shift);
    }
    let se = (ex + ey).sqrt();
    // Welch–Satterthwaite; identical medians within each run leave no spread at all.
    let df = if se > 0.0 {
        ((ex + ey).powi(2) / (ex * ex / (nx - 1.0) + ey * ey / (ny - 1.0))).floor() as u32
    } else {
        (nx + ny - 2.0) as u32
    };
    let half = t_quantile(1.0 - alpha, df) * se;
    shift.ratio_lo = Some((d - half).exp());
    shift.ratio_hi = Some((d + half).exp());
    shift.verdict = if d.abs() + half <= bound {
        Verdict::NoDifference
    } else if d.abs() - half > bound {
        Verdict::Differs
    } else {
        Verdict::Inconclusive
    };
    if shift.verdict == Verdict::Inconclusive {
        // Equal effective counts n per run at the pooled spread s (per effective
        // observation): half-width t·s·√(2/n) must fit between the effect and the
        // margin; repetitions are n times those per effective observation. t depends
        // on n: iterate a few times.
        let gap = (bound - d.abs()).abs();
        let s2 = (ex * nx + ey * ny) / 2.0;
        let per_obs = (x.len() as f64 / nx + y.len() as f64 / ny) / 2.0;
        if gap > 1e-9 {
            let mut n = 2.0 * s2 * (t_quantile(1.0 - alpha, 1_000) / gap).powi(2);
            for _ in 0..4 {
                let df = (2.0 * n.max(2.0) - 2.0) as u32;
                n = 2.0 * s2 * (t_quantile(1.0 - alpha, df) / gap).powi(2);
            }
            let n = (n * per_obs).ceil().max(x.len().max(y.len()) as f64 + 1.0);
            shift.reps_needed = Some(n.min(1e9) as usize);
        }
    }
    Some(shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        // Two-sided 90 % and 95 % points.
        for (p, df, want) in [
            (0.975, 1, 12.706),
            (0.975, 2, 4.303),
            (0.975, 3, 3.182),
            (0.975, 10, 2.228),
            (0.95, 5, 2.015),
            (0.95, 30, 1.697),
            (0.99, 4, 3.747),
            (0.975, 1_000, 1.962),
        ] {
            let t = t_quantile(p, df);
            assert!((t - want).abs() < 1e-3, "t({p}, {df}) = {t}, tables {want}");
        }
    }

    use crate::rng::SplitMix64 as Rng;

    /// A run as a watch sees it: `reps` repetitions of `n` samples around `level` µs,
    /// each repetition shifted by its own level (2 % sd) and its samples AR(1) noise
    /// (φ = 0.95, 10 % sd): strongly dependent, like samples taken in a row.
    fn run(rng: &mut Rng, reps: usize, n: usize, level: f64) -> Vec<Vec<f64>> {
        let phi: f64 = 0.95;
        let innov = 0.10 * (1.0 - phi * phi).sqrt();
        (0..reps)
            .map(|_| {
                let rep_level = level * (1.0 + 0.02 * rng.normal());
                let mut e = 0.10 * rng.normal();
                (0..n)
                    .map(|_| {
                        e = phi * e + innov * rng.normal();
                        rep_level * (1.0 + e).max(0.05)
                    })
                    .collect()
            })
            .collect()
    }

    /// The interval's ends (there is one from [`MIN_REPS`] repetitions on).
    fn ends(s: &Shift) -> (f64, f64) {
        (s.ratio_lo.unwrap(), s.ratio_hi.unwrap())
    }

    fn medians(run: &[Vec<f64>]) -> Vec<f64> {
        run.iter()
            .map(|s| crate::variability::Tail::of(s).unwrap().median)
            .collect()
    }

    #[test]
    fn dependent_runs_from_one_distribution_never_differ() {
        let (mut no_difference, mut covered) = (0, 0);
        for seed in 0..20 {
            let mut rng = Rng(seed);
            let a = medians(&run(&mut rng, 20, 500, 1.0));
            let b = medians(&run(&mut rng, 20, 500, 1.0));
            let s = compare(&a, &b, 0.05, DEFAULT_MARGIN).unwrap();
            assert_ne!(s.verdict, Verdict::Differs, "seed {seed}: {s:?}");
            let (lo, hi) = ends(&s);
            assert!(lo <= s.ratio && s.ratio <= hi, "{s:?}");
            covered += usize::from(lo < 1.0 && 1.0 < hi);
            no_difference += usize::from(s.verdict == Verdict::NoDifference);
        }
        // A 90 % interval within ±5 % most of the time (a per-seed outcome, not a rate
        // asserted: the seeds are fixed).
        assert!(no_difference >= 16, "{no_difference} of 20");
        assert!(covered >= 15, "the interval held 1 in {covered} of 20");
    }

    /// Repetition medians whose level wanders as AR(1) (φ = 0.8, 5 % sd): the
    /// machine's state outlasting several intervals.
    fn wandering(rng: &mut Rng, reps: usize) -> Vec<f64> {
        let phi: f64 = 0.8;
        let mut e = 0.05 * rng.normal();
        (0..reps)
            .map(|_| {
                e = phi * e + 0.05 * (1.0 - phi * phi).sqrt() * rng.normal();
                e.exp()
            })
            .collect()
    }

    #[test]
    fn repetitions_that_wander_together_count_as_fewer_and_never_differ() {
        for seed in 0..40 {
            let mut rng = Rng(1_000 + seed);
            let (a, b) = (wandering(&mut rng, 30), wandering(&mut rng, 30));
            let s = compare(&a, &b, 0.05, DEFAULT_MARGIN).unwrap();
            assert_ne!(s.verdict, Verdict::Differs, "seed {seed}: {s:?}");
        }
        // The count shrinks with the likeness of neighbours, never below 2.
        let (_, _, n) = summary(&[0.0, 0.0, 0.1, 0.1, 0.2, 0.2, 0.3, 0.3]);
        assert!((2.0..8.0).contains(&n), "{n}");
        let (_, _, n) = summary(&[0.0, 0.1, 0.0, 0.1, 0.0, 0.1]);
        assert_eq!(n, 6.0);
    }

    #[test]
    fn a_twenty_percent_shift_differs_and_the_interval_holds_it() {
        let mut covered = 0;
        for seed in 0..20 {
            let mut rng = Rng(100 + seed);
            let slow = medians(&run(&mut rng, 20, 500, 1.2));
            let base = medians(&run(&mut rng, 20, 500, 1.0));
            let s = compare(&slow, &base, 0.05, DEFAULT_MARGIN).unwrap();
            assert_eq!(s.verdict, Verdict::Differs, "seed {seed}: {s:?}");
            let (lo, hi) = ends(&s);
            assert!(lo > 1.05, "{s:?}");
            covered += usize::from(lo < 1.2 && 1.2 < hi);
            let faster = compare(&base, &slow, 0.05, DEFAULT_MARGIN).unwrap();
            assert_eq!(faster.verdict, Verdict::Differs);
            assert!(ends(&faster).1 < 1.0 / 1.05, "{faster:?}");
        }
        // A 90 % interval holds the true ratio about 18 times in 20.
        assert!(covered >= 15, "{covered} of 20");
    }

    #[test]
    fn too_few_or_too_spread_repetitions_are_inconclusive_and_say_what_is_needed() {
        let s = compare(&[1.0, 1.01], &[1.0, 0.99], 0.05, 0.05).unwrap();
        assert_eq!(s.verdict, Verdict::Inconclusive);
        assert_eq!(
            (s.reps, s.earlier_reps, s.reps_needed),
            (2, 2, Some(MIN_REPS))
        );
        // Medians spread ±10 %: an interval far wider than the margin.
        let wide = compare(&[1.0, 1.2, 0.9, 1.1], &[1.1, 0.9, 1.0, 1.2], 0.05, 0.05).unwrap();
        assert_eq!(wide.verdict, Verdict::Inconclusive, "{wide:?}");
        let need = wide.reps_needed.expect("an estimate");
        assert!(need > 4, "{wide:?}");
        // With that many repetitions at that spread (whole cycles, so both runs keep
        // the same values), the same runs are called.
        let need = need.div_ceil(4) * 4;
        let many = |v: &[f64]| v.iter().cycle().take(need).copied().collect::<Vec<_>>();
        let more = compare(
            &many(&[1.0, 1.2, 0.9, 1.1]),
            &many(&[1.1, 0.9, 1.0, 1.2]),
            0.05,
            0.05,
        )
        .unwrap();
        assert_eq!(more.verdict, Verdict::NoDifference, "{more:?}");
        assert_eq!(compare(&[], &[1.0], 0.05, 0.05), None);
    }

    #[test]
    fn the_margin_decides_a_small_real_shift() {
        let a = [1.00, 1.01, 0.99, 1.00, 1.01, 0.99];
        let b: Vec<f64> = a.iter().map(|x| x * 1.03).collect();
        let s = compare(&b, &a, 0.05, 0.05).unwrap();
        assert!((s.ratio - 1.03).abs() < 1e-9, "{s:?}");
        assert_eq!(s.verdict, Verdict::NoDifference, "{s:?}");
        let strict = compare(&b, &a, 0.05, 0.01).unwrap();
        assert_eq!(strict.verdict, Verdict::Differs, "{strict:?}");
    }
}
