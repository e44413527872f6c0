//! Randomized stress against a serial model.
//!
//! Every proc owns one lane of every proc's segment for its puts and gets (so the
//! final bytes do not depend on timing), and all procs accumulate longs into one
//! shared area of every segment (addition commutes, so the sum is exact whatever the
//! order). Each proc models its lanes and its own contributions; at the end the lanes
//! are read back and compared, and the contributions are gathered and summed.

use nf_rma::{Kind, Rma, Scale, Shape, Xfer};

use crate::shapes::own_bytes;
use crate::{ctx, Check, Rng};

const LANE: usize = 16 << 10;
const ACC_LONGS: usize = 512;

/// Offsets of every chunk of a strided side, in the order transfers pair chunks
/// (level 1 fastest), computed by division rather than the library's odometer.
pub fn chunk_offsets(count: &[usize], strides: &[usize]) -> Vec<usize> {
    let total: usize = count[1..].iter().product();
    (0..total)
        .map(|n| {
            let mut rest = n;
            let mut off = 0;
            for (k, s) in strides.iter().enumerate() {
                off += (rest % count[k + 1]) * s;
                rest /= count[k + 1];
            }
            off
        })
        .collect()
}

/// A random strided layout: counts, local strides, remote strides, remote offset.
/// Chunks are `unit`-aligned multiples of `unit` bytes, and never overlap.
struct Layout {
    count: Vec<usize>,
    local: Vec<usize>,
    remote: Vec<usize>,
    offset: usize,
    local_span: usize,
}

impl Layout {
    /// Runs one strided transfer of this layout between `local` and `t`'s memory at
    /// `base` (+ the layout's offset).
    fn run(&self, rma: &Rma<'_>, kind: Kind, t: usize, local: &mut [u8], base: u64) -> Check {
        assert!(local.len() >= self.local_span);
        let x = Xfer {
            kind,
            proc: t,
            shape: Shape::Strided {
                local: local.as_mut_ptr(),
                local_strides: &self.local,
                remote: base + self.offset as u64,
                remote_strides: &self.remote,
                count: &self.count,
            },
        };
        // SAFETY: the local side lies within `local` (its span, asserted above).
        unsafe { rma.xfer(&x) }.map_err(|e| format!("{} of proc {t}: {e}", kind.name()))
    }

    /// Pairs of (local offset, remote offset from `base`) of every chunk.
    fn pairs(&self) -> impl Iterator<Item = (usize, usize)> {
        let lo = chunk_offsets(&self.count, &self.local);
        let ro = chunk_offsets(&self.count, &self.remote);
        let off = self.offset;
        lo.into_iter().zip(ro.into_iter().map(move |r| r + off))
    }
}

/// Bytes from the first to the last byte a strided side touches.
pub fn span(count: &[usize], strides: &[usize]) -> usize {
    count[0]
        + strides
            .iter()
            .enumerate()
            .map(|(k, s)| (count[k + 1] - 1) * s)
            .sum::<usize>()
}

fn layout(rng: &mut Rng, room: usize, unit: usize) -> Layout {
    loop {
        let levels = rng.below(4) as usize;
        let mut count = vec![unit * (1 + rng.below(64 / unit as u64) as usize)];
        for _ in 0..levels {
            count.push(1 + rng.below(4) as usize);
        }
        let mut grow = |pad_max: u64| {
            let mut s = Vec::new();
            let mut prev = count[0];
            for &c in &count[1..] {
                let stride = prev + unit * rng.below(pad_max) as usize;
                s.push(stride);
                prev = stride * c;
            }
            s
        };
        let local = grow(4);
        let remote = grow(8);
        let rspan = span(&count, &remote);
        if rspan > room {
            continue;
        }
        let offset = unit * rng.below(((room - rspan) / unit + 1) as u64) as usize;
        let local_span = span(&count, &local);
        return Layout {
            count,
            local,
            remote,
            offset,
            local_span,
        };
    }
}

pub fn stress(rma: &Rma<'_>, seed: u64, iters: usize) -> Check {
    let (n, me) = (rma.size(), rma.rank());
    let acc_at = n * LANE;
    let seg = acc_at + ACC_LONGS * 8;
    let bases = ctx(rma.malloc(seg), "malloc")?;
    let mut lanes = vec![vec![0u8; LANE]; n];
    let mut contrib = vec![vec![0i64; ACC_LONGS]; n];
    let mut rng = Rng(seed ^ (me as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let (mut puts, mut gets, mut accs) = (0, 0, 0);
    for it in 0..iters {
        let t = rng.below(n as u64) as usize;
        let lane_base = bases[t] + (me * LANE) as u64;
        match rng.below(10) {
            0..=3 => {
                let l = layout(&mut rng, LANE, 1);
                let mut local: Vec<u8> = (0..l.local_span).map(|_| rng.step() as u8).collect();
                l.run(rma, Kind::Put, t, &mut local, lane_base)
                    .map_err(|e| format!("iteration {it}: {e}"))?;
                for (a, r) in l.pairs() {
                    lanes[t][r..r + l.count[0]].copy_from_slice(&local[a..a + l.count[0]]);
                }
                puts += 1;
            }
            4..=5 => {
                ctx(rma.fence(t), "fence")?;
                let l = layout(&mut rng, LANE, 1);
                let mut local = vec![0u8; l.local_span];
                l.run(rma, Kind::Get, t, &mut local, lane_base)
                    .map_err(|e| format!("iteration {it}: {e}"))?;
                for (a, r) in l.pairs() {
                    if local[a..a + l.count[0]] != lanes[t][r..r + l.count[0]] {
                        return Err(format!(
                            "iteration {it}: get_strided from proc {t} differs from the model \
                             at lane offset {r}"
                        ));
                    }
                }
                gets += 1;
            }
            6..=8 => {
                let l = layout(&mut rng, ACC_LONGS * 8, 8);
                let scale = 1 + rng.below(3) as i64;
                let mut local = vec![0u8; l.local_span];
                for (a, r) in l.pairs() {
                    for e in 0..l.count[0] / 8 {
                        let v = rng.below(201) as i64 - 100;
                        local[a + 8 * e..a + 8 * e + 8].copy_from_slice(&v.to_le_bytes());
                        contrib[t][r / 8 + e] += scale * v;
                    }
                }
                let area = bases[t] + acc_at as u64;
                l.run(rma, Kind::Acc(Scale::Long(scale)), t, &mut local, area)
                    .map_err(|e| format!("iteration {it}: {e}"))?;
                accs += 1;
            }
            _ if rng.below(2) == 0 => ctx(rma.fence(t), "fence")?,
            _ => ctx(rma.all_fence(), "all_fence")?,
        }
    }
    ctx(rma.barrier(), "barrier")?;
    for (t, lane) in lanes.iter().enumerate() {
        let mut got = vec![0u8; LANE];
        ctx(
            // SAFETY: `got` holds LANE writable bytes.
            unsafe { rma.get(bases[t] + (me * LANE) as u64, got.as_mut_ptr(), LANE, t) },
            "final get",
        )?;
        if let Some(i) = got.iter().zip(lane).position(|(a, b)| a != b) {
            return Err(format!(
                "proc {t}'s lane of proc {me} differs from the model at byte {i}"
            ));
        }
    }
    let mine: Vec<u8> = contrib
        .iter()
        .flatten()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let all = ctx(rma.wireup().allgather(&mine), "allgather")?;
    let area = own_bytes(rma, bases[me] + acc_at as u64, ACC_LONGS * 8)?;
    for i in 0..ACC_LONGS {
        let want: i64 = all
            .iter()
            .map(|c| {
                let o = (me * ACC_LONGS + i) * 8;
                i64::from_le_bytes(c[o..o + 8].try_into().expect("8 bytes"))
            })
            .sum();
        let got = i64::from_le_bytes(area[8 * i..8 * i + 8].try_into().expect("8 bytes"));
        if got != want {
            return Err(format!(
                "accumulated long {i} is {got}, the model says {want}"
            ));
        }
    }
    println!("rank {me}: {puts} puts, {gets} gets, {accs} accumulates match the model");
    ctx(rma.barrier(), "barrier")?;
    ctx(rma.free(bases[me]), "free")
}
