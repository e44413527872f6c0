//! Where a global array's elements live, and which pieces of which blocks a numpy
//! index selects. Pure arithmetic, no Python and no memory.
//!
//! An array of shape `(n_0, …)` is cut along every dimension into blocks; block
//! `(i_0, …)` (row-major over the block grid) belongs to rank `i_0·g_1·… + …`, and is
//! stored there row-major. Ranks past the number of blocks own nothing.

/// The block boundaries of every dimension: `bounds[d]` = `[0, …, n_d]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dist {
    pub shape: Vec<usize>,
    pub bounds: Vec<Vec<usize>>,
}

/// Why a distribution cannot be made.
pub(crate) type DistError = String;

/// The number of blocks along each dimension for `procs` ranks: the prime factors
/// of `procs`, largest first, each given to the dimension with the most elements
/// per block so far (GA's default: blocks as square as the shape allows).
fn default_grid(shape: &[usize], procs: usize) -> Vec<usize> {
    let mut factors = Vec::new();
    let (mut p, mut f) = (procs, 2);
    while p > 1 {
        while p % f == 0 {
            factors.push(f);
            p /= f;
        }
        f += 1;
    }
    factors.reverse();
    let mut grid = vec![1usize; shape.len()];
    for f in factors {
        let best = (0..shape.len())
            .filter(|&d| shape[d] >= grid[d] * f)
            .max_by(|&a, &b| {
                let (ea, eb) = (
                    shape[a] as f64 / grid[a] as f64,
                    shape[b] as f64 / grid[b] as f64,
                );
                ea.total_cmp(&eb).then(b.cmp(&a))
            });
        // A factor no dimension can take leaves ranks without a block.
        if let Some(d) = best {
            grid[d] *= f;
        }
    }
    grid
}

/// `n` cut into `g` nearly equal blocks.
fn even(n: usize, g: usize) -> Vec<usize> {
    (0..=g).map(|i| i * n / g).collect()
}

impl Dist {
    /// The default distribution of `shape` over `procs` ranks.
    pub(crate) fn block(shape: &[usize], procs: usize) -> Dist {
        let grid = default_grid(shape, procs);
        Dist {
            shape: shape.to_vec(),
            bounds: shape.iter().zip(&grid).map(|(&n, &g)| even(n, g)).collect(),
        }
    }

    /// A distribution from per-dimension block sizes: one size for equal blocks
    /// (the last may be shorter), or the list of sizes.
    pub(crate) fn chunked(
        shape: &[usize],
        chunks: &[Vec<usize>],
        procs: usize,
    ) -> Result<Dist, DistError> {
        if chunks.len() != shape.len() {
            return Err(format!(
                "chunks has {} entries but the array has {} dimensions",
                chunks.len(),
                shape.len()
            ));
        }
        let mut bounds = Vec::new();
        for (d, (&n, c)) in shape.iter().zip(chunks).enumerate() {
            let b: Vec<usize> = match c.as_slice() {
                [size] => {
                    if *size == 0 {
                        return Err(format!(
                            "chunks[{d}] is 0: blocks hold at least one element"
                        ));
                    }
                    let mut b: Vec<usize> = (0..n).step_by(*size).collect();
                    b.push(n);
                    b
                }
                sizes => {
                    if sizes.iter().sum::<usize>() != n || sizes.contains(&0) {
                        return Err(format!(
                            "chunks[{d}] = {sizes:?} must be positive sizes adding up to {n}"
                        ));
                    }
                    std::iter::once(0)
                        .chain(sizes.iter().scan(0, |acc, s| {
                            *acc += s;
                            Some(*acc)
                        }))
                        .collect()
                }
            };
            bounds.push(if n == 0 { vec![0, 0] } else { b });
        }
        let dist = Dist {
            shape: shape.to_vec(),
            bounds,
        };
        if dist.blocks() > procs {
            return Err(format!(
                "chunks make {} blocks but the job has {procs} ranks: use larger chunks",
                dist.blocks()
            ));
        }
        Ok(dist)
    }

    /// Blocks along each dimension.
    pub(crate) fn grid(&self) -> Vec<usize> {
        self.bounds.iter().map(|b| b.len() - 1).collect()
    }

    /// Blocks in all.
    pub(crate) fn blocks(&self) -> usize {
        self.grid().iter().product()
    }

    /// The block index of `rank` along each dimension (`None` if it owns nothing).
    fn coords(&self, rank: usize) -> Option<Vec<usize>> {
        if rank >= self.blocks() {
            return None;
        }
        let grid = self.grid();
        let mut c = vec![0; grid.len()];
        let mut r = rank;
        for d in (0..grid.len()).rev() {
            c[d] = r % grid[d];
            r /= grid[d];
        }
        Some(c)
    }

    /// The rank owning block `coords`.
    fn rank_of(&self, coords: &[usize]) -> usize {
        coords
            .iter()
            .zip(self.grid())
            .fold(0, |acc, (&c, g)| acc * g + c)
    }

    /// The global index range `[lo, hi)` of `rank`'s block along every dimension
    /// (empty ranges for a rank that owns nothing).
    pub(crate) fn range_of(&self, rank: usize) -> Vec<(usize, usize)> {
        match self.coords(rank) {
            Some(c) => c
                .iter()
                .zip(&self.bounds)
                .map(|(&i, b)| (b[i], b[i + 1]))
                .collect(),
            None => vec![(0, 0); self.shape.len()],
        }
    }

    /// The shape of `rank`'s block.
    pub(crate) fn block_shape(&self, rank: usize) -> Vec<usize> {
        self.range_of(rank).iter().map(|(lo, hi)| hi - lo).collect()
    }

    /// The pieces of `sel`, one per block it touches.
    pub(crate) fn pieces(&self, sel: &[Sel]) -> Vec<Piece> {
        // Per dimension: (block, first k, last k + 1) for every block touched.
        let per_dim: Vec<Vec<(usize, usize, usize)>> = sel
            .iter()
            .zip(&self.bounds)
            .map(|(s, b)| {
                (0..b.len() - 1)
                    .filter_map(|i| {
                        let (k0, k1) = s.ks_within(b[i], b[i + 1]);
                        (k0 < k1).then_some((i, k0, k1))
                    })
                    .collect()
            })
            .collect();
        if per_dim.iter().any(Vec::is_empty) {
            return Vec::new();
        }
        let mut out = Vec::new();
        let mut idx = vec![0usize; per_dim.len()];
        loop {
            let coords: Vec<usize> = idx.iter().zip(&per_dim).map(|(&i, v)| v[i].0).collect();
            let rank = self.rank_of(&coords);
            let lo: Vec<usize> = coords
                .iter()
                .zip(&self.bounds)
                .map(|(&c, b)| b[c])
                .collect();
            let block = self.block_shape(rank);
            out.push(Piece {
                rank,
                block_offset: (0..sel.len())
                    .map(|d| sel[d].start + per_dim[d][idx[d]].1 * sel[d].step - lo[d])
                    .collect(),
                block_shape: block,
                out_offset: (0..sel.len()).map(|d| per_dim[d][idx[d]].1).collect(),
                count: (0..sel.len())
                    .map(|d| per_dim[d][idx[d]].2 - per_dim[d][idx[d]].1)
                    .collect(),
            });
            // Next combination, last dimension fastest.
            let mut d = per_dim.len();
            loop {
                if d == 0 {
                    return out;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < per_dim[d].len() {
                    break;
                }
                idx[d] = 0;
            }
        }
    }
}

/// The selection along one dimension: `count` indices `start + k·step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Sel {
    pub start: usize,
    pub step: usize,
    pub count: usize,
    /// Selected by an integer: the dimension is dropped from the result.
    pub drop: bool,
}

impl Sel {
    /// The `k` range `[k0, k1)` whose indices fall in `[lo, hi)`.
    fn ks_within(&self, lo: usize, hi: usize) -> (usize, usize) {
        let k_at = |x: usize| {
            if x <= self.start {
                0
            } else {
                (x - self.start).div_ceil(self.step).min(self.count)
            }
        };
        (k_at(lo), k_at(hi))
    }
}

/// The part of a selection that lies in one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// The block's owner.
    pub rank: usize,
    /// Index in the block of the piece's first element, per dimension.
    pub block_offset: Vec<usize>,
    /// The block's shape.
    pub block_shape: Vec<usize>,
    /// Index in the result of the piece's first element, per dimension.
    pub out_offset: Vec<usize>,
    /// Elements of the piece per dimension.
    pub count: Vec<usize>,
}

/// Row-major element strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1];
    }
    s
}

/// One piece as ARMCI's strided form, in bytes: the offsets of its first element in
/// the block and in the result, `count` (bytes of a contiguous run, then runs per
/// level), and the block's and the result's stride of every level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Strided {
    pub block_start: usize,
    pub out_start: usize,
    pub count: Vec<usize>,
    pub block_strides: Vec<usize>,
    pub out_strides: Vec<usize>,
}

impl Piece {
    /// This piece as a strided transfer between its block and a C-ordered result of
    /// `out_shape`, for elements of `item` bytes and the selection's `steps`.
    pub(crate) fn strided(&self, steps: &[usize], out_shape: &[usize], item: usize) -> Strided {
        let bs = strides(&self.block_shape);
        let os = strides(out_shape);
        let nd = self.count.len();
        let dot = |a: &[usize], b: &[usize]| a.iter().zip(b).map(|(x, y)| x * y).sum::<usize>();
        let mut s = Strided {
            block_start: dot(&self.block_offset, &bs) * item,
            out_start: dot(&self.out_offset, &os) * item,
            count: vec![item],
            block_strides: Vec::new(),
            out_strides: Vec::new(),
        };
        if nd == 0 {
            return s;
        }
        // The last dimension is one contiguous run when its step is 1.
        let mut first = nd - 1;
        if steps[nd - 1] == 1 {
            s.count[0] = self.count[nd - 1] * item;
        } else {
            first = nd;
        }
        for d in (0..first).rev() {
            if self.count[d] == 1 {
                continue;
            }
            s.count.push(self.count[d]);
            s.block_strides.push(steps[d] * bs[d] * item);
            s.out_strides.push(os[d] * item);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(n: usize) -> Sel {
        Sel {
            start: 0,
            step: 1,
            count: n,
            drop: false,
        }
    }

    #[test]
    fn the_default_grid_follows_the_shape() {
        assert_eq!(default_grid(&[100, 100], 4), vec![2, 2]);
        assert_eq!(default_grid(&[1000, 10], 4), vec![4, 1]);
        assert_eq!(default_grid(&[7], 3), vec![3]);
        assert_eq!(default_grid(&[2], 4), vec![2]);
        let d = Dist::block(&[10, 7], 6);
        assert_eq!(d.blocks(), 6);
        assert_eq!(d.range_of(0), vec![(0, 3), (0, 3)]);
        assert_eq!(d.range_of(5), vec![(6, 10), (3, 7)]);
        assert_eq!(d.range_of(6), vec![(0, 0), (0, 0)]);
    }

    #[test]
    fn chunks_are_checked() {
        let d = Dist::chunked(&[10, 4], &[vec![4], vec![3, 1]], 6).unwrap();
        assert_eq!(d.bounds, vec![vec![0, 4, 8, 10], vec![0, 3, 4]]);
        assert!(Dist::chunked(&[10], &[vec![3]], 2).is_err());
        assert!(Dist::chunked(&[10], &[vec![3, 3]], 2).is_err());
        assert!(Dist::chunked(&[10], &[vec![0]], 2).is_err());
        assert!(Dist::chunked(&[10, 2], &[vec![5]], 2).is_err());
    }

    #[test]
    fn pieces_cover_a_selection_exactly_once() {
        let d = Dist::block(&[10, 7], 4); // 2 × 2 blocks: rows 0..5, 5..10; cols 0..3, 3..7
        let sel = [
            Sel {
                start: 1,
                step: 3,
                count: 3,
                drop: false,
            }, // rows 1, 4, 7
            all(7),
        ];
        let p = d.pieces(&sel);
        assert_eq!(p.len(), 4);
        let total: usize = p.iter().map(|p| p.count.iter().product::<usize>()).sum();
        assert_eq!(total, 21);
        assert_eq!(p[0].rank, 0);
        assert_eq!(p[0].block_offset, vec![1, 0]);
        assert_eq!(p[0].count, vec![2, 3]);
        assert_eq!(p[3].rank, 3);
        assert_eq!(p[3].block_offset, vec![2, 0]);
        assert_eq!(p[3].out_offset, vec![2, 3]);
        assert_eq!(p[3].count, vec![1, 4]);
    }

    #[test]
    fn a_piece_becomes_armci_strides() {
        let d = Dist::block(&[10, 7], 4);
        let sel = [
            Sel {
                start: 1,
                step: 3,
                count: 3,
                drop: false,
            },
            Sel {
                start: 0,
                step: 2,
                count: 4,
                drop: false,
            },
        ];
        let p = d.pieces(&sel);
        // Block 0 is 5 × 3; it holds rows 1, 4 and columns 0, 2.
        let s = p[0].strided(&[3, 2], &[3, 4], 8);
        assert_eq!(s.block_start, 3 * 8);
        assert_eq!(s.count, vec![8, 2, 2]);
        assert_eq!(s.block_strides, vec![2 * 8, 3 * 3 * 8]);
        assert_eq!(s.out_strides, vec![8, 4 * 8]);
    }
}
