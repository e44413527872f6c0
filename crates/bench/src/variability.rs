//! Statistics of variability (seed 003's T1..T4): tail percentiles, the coefficient
//! of variation, and whether two runs differ (the Mann–Whitney U test).

use serde::{Deserialize, Serialize};

/// The tail of a set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tail {
    /// Number of samples.
    pub n: usize,
    /// 50th percentile.
    pub median: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest sample.
    pub max: f64,
    /// Coefficient of variation: sample standard deviation / mean.
    pub cv: f64,
}

/// The `q`-th percentile (0..=100) of sorted samples, interpolating linearly between
/// the closest ranks (numpy's default, "linear").
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 100.0) / 100.0;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

impl Tail {
    /// The tail of `samples` (`None` if empty or not all finite).
    pub fn of(samples: &[f64]) -> Option<Tail> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_unstable_by(f64::total_cmp);
        let n = s.len();
        let mean = s.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Tail {
            n,
            median: percentile(&s, 50.0),
            p99: percentile(&s, 99.0),
            p999: percentile(&s, 99.9),
            max: s[n - 1],
            cv: if mean != 0.0 { sd / mean } else { 0.0 },
        })
    }
}

/// The result of comparing two sets of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Mann–Whitney U of the first set.
    pub u: f64,
    /// Its normal approximation (tie-corrected, with continuity correction).
    pub z: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Median of the first set / median of the second.
    pub median_ratio: f64,
}

/// The complementary error function (Numerical Recipes' Chebyshev fit, relative
/// error below 1.2e-7 everywhere).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The Mann–Whitney U test of `a` against `b` (two-sided, normal approximation):
/// whether one tends to be larger than the other, without assuming a distribution —
/// latencies are far from normal. `None` if either set is empty.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<Comparison> {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    let n = all.len();
    let (mut r1, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their average.
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        r1 += rank * all[i..=j].iter().filter(|e| e.1).count() as f64;
        i = j + 1;
    }
    let (f1, f2, fnn) = (n1 as f64, n2 as f64, n as f64);
    let u = r1 - f1 * (f1 + 1.0) / 2.0;
    let mean = f1 * f2 / 2.0;
    let var = f1 * f2 / 12.0 * ((fnn + 1.0) - ties / (fnn * (fnn - 1.0)).max(1.0));
    let z = if var > 0.0 {
        // The continuity correction moves U half a step towards the mean, not past it.
        let d = u - mean;
        let d = if d.abs() <= 0.5 {
            0.0
        } else {
            d - 0.5 * d.signum()
        };
        d / var.sqrt()
    } else {
        0.0
    };
    let med = |v: &[f64]| {
        let mut s = v.to_vec();
        s.sort_unstable_by(f64::total_cmp);
        percentile(&s, 50.0)
    };
    Some(Comparison {
        u,
        z,
        p: erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0),
        median_ratio: med(a) / med(b),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn percentiles_interpolate_like_numpy() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&s, 50.0), 2.5);
        assert_eq!(percentile(&s, 0.0), 1.0);
        assert_eq!(percentile(&s, 100.0), 4.0);
        // numpy.percentile([1, 2, 3, 4], 99) = 3.97
        assert!(close(percentile(&s, 99.0), 3.97, 1e-12));
        let t = Tail::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((t.n, t.median, t.max), (4, 2.5, 4.0));
        // mean 2.5, sample sd sqrt(5/3)
        assert!(close(t.cv, (5.0f64 / 3.0).sqrt() / 2.5, 1e-12));
        assert_eq!(Tail::of(&[]), None);
        assert_eq!(Tail::of(&[1.0, f64::NAN]), None);
    }

    #[test]
    fn erfc_matches_known_values() {
        assert!(close(erfc(0.0), 1.0, 1e-7));
        assert!(close(erfc(1.0), 0.157_299_207, 1e-7));
        assert!(close(erfc(-1.0), 1.842_700_793, 1e-7));
        assert!(close(erfc(3.0), 2.209_049_7e-5, 1e-9));
    }

    #[test]
    fn mann_whitney_by_hand() {
        // a entirely below b: U = 0, mean 4.5, var 9/12 · 7 = 5.25,
        // z = (0 − 4.5 + 0.5) / √5.25 = −1.7457, p = erfc(1.7457 / √2) = 0.08086.
        let c = mann_whitney(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert_eq!(c.u, 0.0);
        assert!(close(c.z, -1.745_743, 1e-5), "{c:?}");
        assert!(close(c.p, 0.080_856, 1e-5), "{c:?}");
        assert!(close(c.median_ratio, 0.4, 1e-12));
        // Identical sets: no evidence of a difference.
        let same = mann_whitney(&[1.0, 2.0, 3.0, 4.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!(same.p > 0.9, "{same:?}");
        // Ties: a = [1, 2, 2], b = [2, 3]; ranks 1, 3, 3 | 3, 5 → R1 = 7, U = 1;
        // ties one group of 3: Σ(t³ − t) = 24; var = 6/12 · (6 − 24/20) = 2.4;
        // z = (1 − 3 + 0.5) / √2.4 = −0.9682.
        let t = mann_whitney(&[1.0, 2.0, 2.0], &[2.0, 3.0]).unwrap();
        assert_eq!(t.u, 1.0);
        assert!(close(t.z, -0.968_246, 1e-5), "{t:?}");
        // Far apart and large: tiny p.
        let lo: Vec<f64> = (0..200).map(|i| 1.0 + i as f64 * 1e-3).collect();
        let hi: Vec<f64> = (0..200).map(|i| 1.5 + i as f64 * 1e-3).collect();
        assert!(mann_whitney(&lo, &hi).unwrap().p < 1e-10);
        assert_eq!(mann_whitney(&[], &[1.0]), None);
    }
}
