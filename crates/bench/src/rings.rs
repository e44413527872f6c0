//! HPCC's b_eff method: ping-pong over every pair of ranks, then rings
//! in which every rank exchanges with both neighbours at once, in natural order and
//! in random orders.
//!
//! Definitions (HPC Challenge's):
//! - *pair* latency is the median half round trip of `lat_size` bytes between two
//!   ranks while the others wait; pair bandwidth is `bw_size` / the median half
//!   round trip of `bw_size` bytes;
//! - in a *ring*, each iteration every rank sends one message to its left and one to
//!   its right neighbour and waits for theirs; ring latency is the median time of an
//!   iteration of `lat_size` bytes, averaged over ranks; ring bandwidth is
//!   `2 · bw_size` (both directions) / the median iteration time of `bw_size` bytes,
//!   per rank, averaged over ranks;
//! - a *random ring* orders the ranks by a permutation drawn from `seed` (the same
//!   on every rank); its figures are averaged over the orderings.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

use nf_core::{CoreError, ReduceOp, World};
use serde::Serialize;

use crate::pingpong::PingPong;
use crate::stats::Summary;

const RING: u16 = 0x0B14;

/// What to measure.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// Bytes of the latency messages.
    pub lat_size: usize,
    /// Bytes of the bandwidth messages.
    pub bw_size: usize,
    /// Timed repetitions of latency messages (pair round trips, ring iterations).
    pub iters: usize,
    /// Timed repetitions of bandwidth messages.
    pub bw_iters: usize,
    /// Untimed repetitions before each measurement.
    pub warmup: usize,
    /// Random orderings of the random ring.
    pub orderings: usize,
    /// Seed of the random orderings.
    pub seed: u64,
}

/// min / avg / max of a figure over pairs or ranks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `values` (`None` if empty).
    pub fn of(values: &[f64]) -> Option<Spread> {
        let s = Summary::from_samples(values)?;
        Some(Spread {
            min: s.min,
            avg: s.avg,
            max: s.max,
        })
    }
}

/// One ring's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Ring {
    /// The order of the ranks around the ring.
    pub order: Vec<usize>,
    /// Latency per rank in µs (median iteration time).
    pub latency_us: Vec<f64>,
    /// Bandwidth per rank in MB/s.
    pub bandwidth_mb_s: Vec<f64>,
}

/// Everything `nf bench rings` measured (rank 0's copy).
#[derive(Debug, Clone, Serialize)]
pub struct Rings {
    /// The parameters.
    pub params: Params,
    /// Ranks in the job.
    pub ranks: usize,
    /// Host of each rank (`NF_HOST` as the launcher set it, else the host name).
    pub hosts: Vec<String>,
    /// `pair_latency_us[i][j]`: pair latency in µs (0 on the diagonal).
    pub pair_latency_us: Vec<Vec<f64>>,
    /// `pair_bandwidth_mb_s[i][j]`: pair bandwidth in MB/s (0 on the diagonal).
    pub pair_bandwidth_mb_s: Vec<Vec<f64>>,
    /// `transport[i][j]`: how rank i reached rank j ("self" on the diagonal).
    pub transport: Vec<Vec<String>>,
    /// Pair latency over all pairs.
    pub pingpong_latency_us: Spread,
    /// Pair bandwidth over all pairs.
    pub pingpong_bandwidth_mb_s: Spread,
    /// The natural ring (0, 1, …, n−1).
    pub natural: Ring,
    /// The random rings.
    pub random: Vec<Ring>,
    /// Natural ring latency averaged over ranks, µs.
    pub natural_latency_us: f64,
    /// Natural ring bandwidth averaged over ranks, MB/s.
    pub natural_bandwidth_mb_s: f64,
    /// Random ring latency averaged over ranks and orderings, µs.
    pub random_latency_us: f64,
    /// Random ring bandwidth averaged over ranks and orderings, MB/s.
    pub random_bandwidth_mb_s: f64,
}

/// A permutation of `0..n` from `seed` (splitmix64 into a Fisher-Yates shuffle), the
/// same on every rank.
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut state = seed;
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (next() % (i as u64 + 1)) as usize;
        p.swap(i, j);
    }
    p
}

/// MB/s of `bytes` moved in `us` microseconds.
fn mb_s(bytes: usize, us: f64) -> f64 {
    if us > 0.0 {
        bytes as f64 / us
    } else {
        0.0
    }
}

fn median(samples: &[f64]) -> f64 {
    Summary::from_samples(samples).map_or(0.0, |s| s.median)
}

/// The ring handler's state: ring messages received, per source.
struct Counters {
    ring: Rc<RefCell<Vec<u64>>>,
}

fn register(world: &World) -> Result<Counters, CoreError> {
    let c = Counters {
        ring: Rc::new(RefCell::new(vec![0; world.size()])),
    };
    let r = Rc::clone(&c.ring);
    world.register(RING, move |_, am| r.borrow_mut()[am.src] += 1)?;
    world.barrier()?;
    Ok(c)
}

/// Iteration times (µs) of a ring exchange of `size` bytes with `left` and `right`.
fn ring(
    w: &World,
    c: &Counters,
    (left, right): (usize, usize),
    size: usize,
    iters: usize,
    warmup: usize,
) -> Result<Vec<f64>, CoreError> {
    let buf = vec![0xC3u8; size];
    let mut out = Vec::with_capacity(iters);
    // Targets are absolute: a neighbour may be an iteration ahead, and its early
    // message must not count for the current one. Every earlier ring message has
    // arrived (each ring ends once all are in), so the base is read before the barrier.
    let (base_l, base_r) = {
        let r = c.ring.borrow();
        (r[left], r[right])
    };
    let per = if left == right { 2 } else { 1 };
    w.barrier()?;
    for i in 0..warmup + iters {
        let k = (i as u64 + 1) * per;
        let (want_l, want_r) = (base_l + k, base_r + k);
        let t = Instant::now();
        w.send(right, RING, &[], &buf)?;
        w.send(left, RING, &[], &buf)?;
        w.wait_until(|| {
            let r = c.ring.borrow();
            r[left] >= want_l && r[right] >= want_r
        })?;
        if i >= warmup {
            out.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    w.barrier()?;
    Ok(out)
}

/// Every rank's value of `mine`, on every rank.
fn gather(w: &World, mine: f64) -> Result<Vec<f64>, CoreError> {
    let mut v = vec![0.0; w.size()];
    v[w.rank()] = mine;
    w.allreduce(&mut v, ReduceOp::Sum)?;
    Ok(v)
}

/// One ring in `order`: every rank's latency and bandwidth.
fn measure_ring(w: &World, c: &Counters, p: &Params, order: Vec<usize>) -> Result<Ring, CoreError> {
    let n = order.len();
    let pos = order
        .iter()
        .position(|&r| r == w.rank())
        .expect("a permutation");
    let nb = (order[(pos + n - 1) % n], order[(pos + 1) % n]);
    let lat = median(&ring(w, c, nb, p.lat_size, p.iters, p.warmup)?);
    let t_bw = median(&ring(
        w,
        c,
        nb,
        p.bw_size,
        p.bw_iters,
        p.warmup.min(p.bw_iters),
    )?);
    Ok(Ring {
        order,
        latency_us: gather(w, lat)?,
        bandwidth_mb_s: gather(w, mb_s(2 * p.bw_size, t_bw))?,
    })
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Runs the whole method (collective); rank 0 gets the results.
pub fn run(
    world: &World,
    p: &Params,
    mut on_step: impl FnMut(&str),
) -> Result<Option<Rings>, CoreError> {
    let n = world.size();
    if n < 2 {
        return Err(CoreError::Collective("rings need at least 2 ranks".into()));
    }
    let pp = PingPong::new(world)?;
    let c = register(world)?;
    let me = world.rank();
    let mut lat = vec![0.0; n * n];
    let mut bw = vec![0.0; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let l = pp.measure_pair(i, j, p.lat_size, p.iters, p.warmup)?;
            let b = pp.measure_pair(i, j, p.bw_size, p.bw_iters, p.warmup.min(p.bw_iters))?;
            if let (Some(l), Some(b)) = (l, b) {
                let (l, b) = (median(&l), mb_s(p.bw_size, median(&b)));
                for (a, z) in [(i, j), (j, i)] {
                    lat[a * n + z] = l;
                    bw[a * n + z] = b;
                }
            }
            world.barrier()?;
        }
        if me == 0 {
            on_step(&format!("pairs of rank {i}"));
        }
    }
    world.allreduce(&mut lat, ReduceOp::Sum)?;
    world.allreduce(&mut bw, ReduceOp::Sum)?;
    // Each rank's view of how it reaches every other, and its host, gathered.
    let mut mine = Vec::new();
    for j in 0..n {
        let name = if j == me {
            "self"
        } else {
            world.route(j).map_or("none", |r| r.name())
        };
        mine.extend_from_slice(name.as_bytes());
        mine.push(b',');
    }
    // The host as the launcher was given it (`nf run --hosts`), else the kernel's name.
    let host = std::env::var("NF_HOST").unwrap_or_else(|_| crate::report::hostname());
    mine.extend_from_slice(host.as_bytes());
    let mut rows = Vec::with_capacity(n);
    for r in 0..n {
        let mut b = if r == me { mine.clone() } else { Vec::new() };
        world.broadcast(r, &mut b)?;
        rows.push(String::from_utf8_lossy(&b).into_owned());
    }
    let natural = measure_ring(world, &c, p, (0..n).collect())?;
    if me == 0 {
        on_step("natural ring");
    }
    let mut random = Vec::new();
    for k in 0..p.orderings {
        random.push(measure_ring(
            world,
            &c,
            p,
            permutation(n, p.seed.wrapping_add(k as u64)),
        )?);
        if me == 0 {
            on_step(&format!("random ring {}", k + 1));
        }
    }
    if me != 0 {
        return Ok(None);
    }
    let matrix = |v: &[f64]| v.chunks(n).map(<[f64]>::to_vec).collect::<Vec<_>>();
    let off_diag = |v: &[f64]| {
        (0..n * n)
            .filter(|k| k / n != k % n)
            .map(|k| v[k])
            .collect::<Vec<_>>()
    };
    let (transport, hosts): (Vec<Vec<String>>, Vec<String>) = rows
        .iter()
        .map(|row| {
            let mut parts: Vec<String> = row.split(',').map(str::to_owned).collect();
            let host = parts.pop().unwrap_or_default();
            (parts, host)
        })
        .unzip();
    let rand_lat: Vec<f64> = random.iter().flat_map(|r| r.latency_us.clone()).collect();
    let rand_bw: Vec<f64> = random
        .iter()
        .flat_map(|r| r.bandwidth_mb_s.clone())
        .collect();
    let zero = Spread {
        min: 0.0,
        avg: 0.0,
        max: 0.0,
    };
    Ok(Some(Rings {
        params: p.clone(),
        ranks: n,
        hosts,
        pingpong_latency_us: Spread::of(&off_diag(&lat)).unwrap_or(zero),
        pingpong_bandwidth_mb_s: Spread::of(&off_diag(&bw)).unwrap_or(zero),
        pair_latency_us: matrix(&lat),
        pair_bandwidth_mb_s: matrix(&bw),
        transport,
        natural_latency_us: mean(&natural.latency_us),
        natural_bandwidth_mb_s: mean(&natural.bandwidth_mb_s),
        natural,
        random_latency_us: mean(&rand_lat),
        random_bandwidth_mb_s: mean(&rand_bw),
        random,
    }))
}

impl Rings {
    /// The summary table, HPCC's rows.
    pub fn to_table(&self) -> String {
        let p = &self.pingpong_latency_us;
        let b = &self.pingpong_bandwidth_mb_s;
        let mut s = format!(
            "# rings: {} ranks on {} host(s), latency {} B, bandwidth {} B, {} random orderings\n",
            self.ranks,
            {
                let mut h = self.hosts.clone();
                h.sort();
                h.dedup();
                h.len()
            },
            self.params.lat_size,
            self.params.bw_size,
            self.params.orderings
        );
        s += "# figure                         min         avg         max\n";
        s += &format!(
            "pingpong_latency_us      {:>11.3} {:>11.3} {:>11.3}\n",
            p.min, p.avg, p.max
        );
        s += &format!(
            "pingpong_bandwidth_mb_s  {:>11.1} {:>11.1} {:>11.1}\n",
            b.min, b.avg, b.max
        );
        s += &format!(
            "natural_ring_latency_us              {:>11.3}\n",
            self.natural_latency_us
        );
        s += &format!(
            "natural_ring_bandwidth_mb_s          {:>11.1}\n",
            self.natural_bandwidth_mb_s
        );
        s += &format!(
            "random_ring_latency_us               {:>11.3}\n",
            self.random_latency_us
        );
        s += &format!(
            "random_ring_bandwidth_mb_s           {:>11.1}\n",
            self.random_bandwidth_mb_s
        );
        s
    }

    /// One CSV row per pair, then one per ring and rank.
    pub fn to_csv(&self) -> String {
        let mut s = String::from("kind,from,to,transport,latency_us,bandwidth_mb_s\n");
        for i in 0..self.ranks {
            for j in 0..self.ranks {
                if i != j {
                    s += &format!(
                        "pair,{i},{j},{},{:.4},{:.2}\n",
                        self.transport[i][j],
                        self.pair_latency_us[i][j],
                        self.pair_bandwidth_mb_s[i][j]
                    );
                }
            }
        }
        let rings = std::iter::once(("natural".to_owned(), &self.natural)).chain(
            self.random
                .iter()
                .enumerate()
                .map(|(k, r)| (format!("random{k}"), r)),
        );
        for (name, r) in rings {
            let n = r.order.len();
            for (pos, &rank) in r.order.iter().enumerate() {
                let right = r.order[(pos + 1) % n];
                s += &format!(
                    "{name},{rank},{right},{},{:.4},{:.2}\n",
                    self.transport[rank][right], r.latency_us[rank], r.bandwidth_mb_s[rank]
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_are_permutations_and_repeatable() {
        for n in [1, 2, 5, 64] {
            let mut p = permutation(n, 7);
            assert_eq!(p, permutation(n, 7));
            p.sort_unstable();
            assert_eq!(p, (0..n).collect::<Vec<_>>());
        }
        assert_ne!(permutation(16, 1), permutation(16, 2));
    }

    #[test]
    fn spreads_and_rates() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Some(Spread {
                min: 1.0,
                avg: 2.0,
                max: 3.0
            })
        );
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(mb_s(2_000_000, 1000.0), 2000.0);
        assert_eq!(mb_s(8, 0.0), 0.0);
        assert_eq!(mean(&[1.0, 2.0, 6.0]), 3.0);
    }
}
