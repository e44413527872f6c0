//! Statistics of variability (the same benchmark at different times): tail percentiles
//! and the coefficient of variation. Whether two runs differ is
//! [`crate::equivalence`]'s question.

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
}
