//! How `nf tune` turns measurements into a choice.
//!
//! Every value of a knob is run once per round (the order reversed every other round,
//! so a load spike does not always land on the same value); each job reports the
//! median half round trip per size. A value's *score* is the geometric mean, over the
//! knob's sizes, of its median over rounds: every size counts the same whatever its
//! magnitude. The lowest score wins, unless the default scores within [`TIE`] of it:
//! a change must pay for itself clearly, as the default is known to work.
//!
//! The single-copy threshold keeps its own rule, the one jobs use when they measure
//! it at start-up ([`nf_core::calibrate::choose`]): the smallest size from which
//! single copy is never more than [`nf_core::calibrate::TOLERANCE`] slower.

/// How much slower than the best the default may score and still be kept.
pub const TIE: f64 = 1.05;

/// The median of `xs` (the mean of the middle two for an even count); NaN if empty.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A value's score: the geometric mean of its per-size times; infinite (never
/// chosen) if a time is missing or not positive.
pub fn score(times_us: &[f64]) -> f64 {
    if times_us.is_empty() || times_us.iter().any(|t| !(t.is_finite() && *t > 0.0)) {
        return f64::INFINITY;
    }
    (times_us.iter().map(|t| t.ln()).sum::<f64>() / times_us.len() as f64).exp()
}

/// The index of the value chosen among `scores`, `default` being the default's.
pub fn pick(scores: &[f64], default: usize) -> usize {
    let best = (0..scores.len())
        .min_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap_or(default);
    if scores
        .get(default)
        .is_some_and(|d| *d <= scores[best] * TIE)
    {
        default
    } else {
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn scores_weigh_every_size_alike_and_missing_times_lose() {
        // Halving the small size's time matters as much as halving the large one's.
        assert!((score(&[1.0, 100.0]) - 10.0).abs() < 1e-9);
        assert!((score(&[0.5, 100.0]) - score(&[1.0, 50.0])).abs() < 1e-9);
        assert_eq!(score(&[1.0, 0.0]), f64::INFINITY);
        assert_eq!(score(&[f64::NAN]), f64::INFINITY);
        assert_eq!(score(&[]), f64::INFINITY);
    }

    #[test]
    fn the_default_wins_ties_and_a_clear_winner_wins() {
        // Default (index 2) within 5 % of the best: kept.
        assert_eq!(pick(&[1.0, 0.97, 1.0, 1.2], 2), 2);
        // Best more than 5 % faster: chosen.
        assert_eq!(pick(&[1.0, 0.80, 1.0, 1.2], 2), 1);
        // A default that did not run (infinite) loses to anything measured.
        assert_eq!(pick(&[1.0, 2.0, f64::INFINITY], 2), 0);
        // Nothing measured: the default.
        assert_eq!(pick(&[f64::INFINITY, f64::INFINITY], 1), 1);
    }
}
