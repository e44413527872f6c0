//! The probe's matrices: how rows are split over ranks, what the matrices hold, and
//! the exact checks of a product.
//!
//! `A` and `B` hold small integers (a formula of the indices), so every sum the
//! multiply forms is an integer below 2^53 and exact in `f64` in any order: a
//! product is checked for equality, not within a tolerance. The checks are `O(n²)`
//! against the multiply's `O(n³)`: each row sum of `C` must equal `A`'s row times
//! `B`'s row sums, and each column sum over a rank's rows must equal those rows'
//! column sums of `A` times `B` — a panel multiplied at the wrong place, missed or
//! taken twice changes both.

use std::ops::Range;

/// Rows `0..n` split into `parts` contiguous ranges as evenly as possible (the first
/// `n mod parts` get one more), as Global Arrays splits a dimension.
pub fn split(n: usize, parts: usize) -> Vec<Range<usize>> {
    let (base, extra) = (n / parts, n % parts);
    let mut start = 0;
    (0..parts)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

/// `A[i][k]`.
pub fn a(i: usize, k: usize) -> f64 {
    ((i * 7 + k * 3) % 11) as f64 - 5.0
}

/// `B[k][j]`.
pub fn b(k: usize, j: usize) -> f64 {
    ((k * 5 + j * 2) % 13) as f64 - 6.0
}

/// Rows `rows` of an `n`-column matrix filled by `f`, row-major.
pub fn fill(rows: Range<usize>, n: usize, f: fn(usize, usize) -> f64) -> Vec<f64> {
    let mut m = Vec::with_capacity(rows.len() * n);
    for i in rows {
        m.extend((0..n).map(|j| f(i, j)));
    }
    m
}

/// Where a checked product differs from the exact one.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    /// `"row"` or `"column"`.
    pub what: &'static str,
    /// The global row or column index.
    pub index: usize,
    /// The product's sum.
    pub got: f64,
    /// The exact sum.
    pub expected: f64,
}

/// Checks rows `rows` of `C = A · B` (`c`, row-major, `n` columns) by their row sums
/// and their column sums.
pub fn check(c: &[f64], rows: Range<usize>, n: usize) -> Result<(), Mismatch> {
    let b_row_sums: Vec<f64> = (0..n).map(|k| (0..n).map(|j| b(k, j)).sum()).collect();
    let mut a_col_sums = vec![0.0; n];
    for (r, i) in rows.clone().enumerate() {
        let row = &c[r * n..(r + 1) * n];
        let got: f64 = row.iter().sum();
        let mut expected = 0.0;
        for (k, sum) in a_col_sums.iter_mut().enumerate() {
            expected += a(i, k) * b_row_sums[k];
            *sum += a(i, k);
        }
        if got != expected {
            return Err(Mismatch {
                what: "row",
                index: i,
                got,
                expected,
            });
        }
    }
    for j in 0..n {
        let got: f64 = (0..rows.len()).map(|r| c[r * n + j]).sum();
        let expected: f64 = (0..n).map(|k| a_col_sums[k] * b(k, j)).sum();
        if got != expected {
            return Err(Mismatch {
                what: "column",
                index: j,
                got,
                expected,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain triple loop, for small `n`.
    fn naive(rows: Range<usize>, n: usize) -> Vec<f64> {
        let mut c = vec![0.0; rows.len() * n];
        for (r, i) in rows.enumerate() {
            for k in 0..n {
                for j in 0..n {
                    c[r * n + j] += a(i, k) * b(k, j);
                }
            }
        }
        c
    }

    #[test]
    fn split_covers_every_row_once_and_evenly() {
        assert_eq!(split(10, 3), vec![0..4, 4..7, 7..10]);
        assert_eq!(split(2, 4), vec![0..1, 1..2, 2..2, 2..2]);
        assert_eq!(split(8, 1), vec![0..8]);
    }

    #[test]
    fn check_accepts_the_exact_product_and_catches_errors() {
        let n = 17;
        let rows = 5..11;
        let c = naive(rows.clone(), n);
        assert_eq!(check(&c, rows.clone(), n), Ok(()));

        // A panel taken twice: one k counted again in one row.
        let mut twice = c.clone();
        for j in 0..n {
            twice[2 * n + j] += a(7, 3) * b(3, j);
        }
        assert_eq!(check(&twice, rows.clone(), n).unwrap_err().index, 7);

        // One entry too big and its neighbour too small by as much: the row sum
        // agrees, two column sums do not.
        let mut moved = c.clone();
        moved[n + 1] += 1.0;
        moved[n + 2] -= 1.0;
        let e = check(&moved, rows.clone(), n).unwrap_err();
        assert_eq!((e.what, e.index), ("column", 1));

        // Rows of another rank's block: every row sum is wrong somewhere.
        let shifted = naive(6..12, n);
        assert!(check(&shifted, rows, n).is_err());
    }
}
