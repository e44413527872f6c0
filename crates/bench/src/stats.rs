//! Summary statistics of timing samples.

/// Summary of a set of samples (the unit is the caller's; ninefold uses microseconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Smallest sample.
    pub min: f64,
    /// Arithmetic mean.
    pub avg: f64,
    /// Middle sample; the mean of the two middle samples when `n` is even.
    pub median: f64,
    /// Largest sample.
    pub max: f64,
    /// Sample standard deviation (divisor `n - 1`; 0 when `n == 1`).
    pub stddev: f64,
}

impl Summary {
    /// Summarises `samples`; `None` when there are none or any is NaN or infinite.
    pub fn from_samples(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let n = samples.len();
        let mut sorted = samples.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let avg = sorted.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            let ss: f64 = sorted.iter().map(|x| (x - avg) * (x - avg)).sum();
            (ss / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Some(Summary {
            n,
            min: sorted[0],
            avg,
            median,
            max: sorted[n - 1],
            stddev,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn empty_is_none() {
        assert_eq!(Summary::from_samples(&[]), None);
    }

    #[test]
    fn non_finite_is_none() {
        assert_eq!(Summary::from_samples(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::from_samples(&[f64::INFINITY]), None);
    }

    #[test]
    fn single_sample() {
        let s = Summary::from_samples(&[3.5]).unwrap();
        assert_eq!(
            s,
            Summary {
                n: 1,
                min: 3.5,
                avg: 3.5,
                median: 3.5,
                max: 3.5,
                stddev: 0.0
            }
        );
    }

    #[test]
    fn odd_count() {
        // Unsorted on purpose.
        let s = Summary::from_samples(&[5.0, 1.0, 4.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.n, 5);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.max, 5.0);
        assert_eq!(s.median, 3.0);
        assert!(close(s.avg, 3.0));
        // Sum of squared deviations 10, divided by 4.
        assert!(close(s.stddev, 2.5f64.sqrt()));
    }

    #[test]
    fn even_count() {
        let s = Summary::from_samples(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert_eq!(s.median, 4.5);
        assert!(close(s.avg, 5.0));
        // Sum of squared deviations 32, divided by 7.
        assert!(close(s.stddev, (32.0f64 / 7.0).sqrt()));
        assert_eq!((s.min, s.max), (2.0, 9.0));
    }

    #[test]
    fn two_samples_median_is_mean() {
        let s = Summary::from_samples(&[10.0, 1.0]).unwrap();
        assert_eq!(s.median, 5.5);
        assert_eq!(s.avg, 5.5);
    }
}
