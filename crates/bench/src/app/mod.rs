//! The application probe (an HPL-like kernel to set beside ping-pong): a distributed dense
//! matrix multiply `C = A · B` (`f64`, `n × n`) over global memory, reporting GFLOP/s
//! and parallel efficiency from 1 rank up.
//!
//! Method:
//! 1. Rows are split over the `p` ranks of a team (ranks `0..p`, the others wait):
//!    each holds its rows of `A` and `C` in private memory and its rows of `B` in a
//!    global-memory segment ([`grid`]).
//! 2. Rank `r` computes its rows of `C` as the sum over every rank `q` of its
//!    `A[rows_r, rows_q] · B[rows_q, :]`, panel by panel (at most `panel` rows of `B`
//!    each), its own panels first, then `r + 1, r + 2, …` so the ranks do not all
//!    read from rank 0 at once.
//! 3. The next panel is fetched while the current one is multiplied (two buffers):
//!    by a one-sided get ([`Via::Direct`]), or by 9P reads of the owner's
//!    `/mem/JOB/RANK/ID` file with every message in flight ([`Via::Files`]).
//! 4. The local multiply is `matrixmultiply`'s `dgemm` (one thread per rank).
//! 5. A repetition is timed by rank 0 from a barrier to the barrier after every rank's
//!    last panel; the figure is the best of `reps` (the median is kept too). GFLOP/s
//!    is `2n³` / time; efficiency at `p` ranks is GFLOP/s(p) / (p · GFLOP/s(1)),
//!    where 1 rank multiplies the whole matrix alone (no communication at all).
//! 6. Every product is checked exactly ([`grid::check`]); a wrong one is an error.

pub mod grid;
pub mod source;

use std::sync::{Arc, Mutex};
use std::time::Instant;

use nf_core::{CoreError, ReduceOp, World};
use nf_ninep_client::{ClientError, Root};
use nf_rma::{Rma, RmaError};
use serde::Serialize;

pub use source::Via;
use source::{Fetch, Panel, Source};

use crate::stats::Summary;

/// Why the probe failed.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The job's messaging failed.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// Global memory failed.
    #[error(transparent)]
    Rma(#[from] RmaError),
    /// Reading a block through the node's files failed.
    #[error("{what}")]
    Files {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: Box<ClientError>,
    },
    /// A proc's segment is not in the node's `/mem`.
    #[error("proc {proc}'s block is not published in the node's /mem: `--via files` needs NF_MEM_REGISTRY left on (and the node's nf serve reading the same registry)")]
    NoFile {
        /// The proc.
        proc: usize,
    },
    /// `--via files` was asked without a connection to the node's server.
    #[error("--via files needs the node's 9P server (nf serve's socket; --node PATH)")]
    NoServer,
    /// The files way reads only this node's procs.
    #[error("--via files reads blocks through this node's /mem, but proc {proc} is on another host; run every rank on one host (or use --via direct)")]
    OtherHost {
        /// The proc.
        proc: usize,
    },
    /// A product was wrong.
    #[error("the product on rank {rank} ({ranks} ranks, {via}) is wrong: {what} {index} sums to {got}, not {expected}")]
    Wrong {
        /// The rank that found it.
        rank: usize,
        /// Team size.
        ranks: usize,
        /// How blocks were read.
        via: &'static str,
        /// Row or column.
        what: &'static str,
        /// Its index.
        index: usize,
        /// The sum found.
        got: f64,
        /// The exact sum.
        expected: f64,
    },
    /// A product failed on another rank.
    #[error(
        "the probe failed on another rank ({ranks} ranks); its error is in that rank's output"
    )]
    Elsewhere {
        /// Team size.
        ranks: usize,
    },
}

/// What to measure.
#[derive(Debug, Clone, Serialize)]
pub struct Params {
    /// Matrix order.
    pub n: usize,
    /// Most rows of `B` per panel (one fetch).
    pub panel: usize,
    /// Timed repetitions per team size and way.
    pub reps: usize,
    /// Team sizes, ascending, each at most the job's size.
    pub teams: Vec<usize>,
    /// Ways to read blocks; with several, they alternate within each team size.
    pub via: Vec<Via>,
}

impl Params {
    /// Bytes rank 0 allocates at most: in the smallest team its rows of `A` and `C`
    /// per way, of `B` once, and two panels per way.
    pub fn rank0_bytes(&self) -> u128 {
        let (n, ways) = (self.n as u128, self.via.len() as u128);
        let p = self.teams.first().copied().unwrap_or(1).max(1) as u128;
        let rows = n.div_ceil(p);
        8 * rows * n * (1 + 2 * ways) + 8 * ways * 2 * (self.panel as u128).min(n) * n
    }
}

/// Team sizes `1, 2, 4, …` up to `size`, and `size` itself.
pub fn default_teams(size: usize) -> Vec<usize> {
    let mut t: Vec<usize> = std::iter::successors(Some(1), |&p| Some(p * 2))
        .take_while(|&p| p < size)
        .collect();
    t.push(size);
    t
}

/// One team size and way.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Ranks multiplying.
    pub ranks: usize,
    /// Hosts they are on.
    pub hosts: usize,
    /// How blocks were read.
    pub via: Via,
    /// The routes rank 0 read the others' blocks by (`rma-direct`, `rma-ofi-native`,
    /// `rma-service-tcp`, or `9p-files`); none with one rank.
    pub routes: Vec<String>,
    /// Best repetition, seconds.
    pub best_s: f64,
    /// Median repetition, seconds.
    pub median_s: f64,
    /// `2n³` / best.
    pub gflops: f64,
    /// GFLOP/s / (ranks · GFLOP/s of 1 rank), the same way.
    pub efficiency: f64,
    /// Every repetition's product was checked exactly.
    pub checked: bool,
}

/// The probe's report.
#[derive(Debug, Clone, Serialize)]
pub struct AppReport {
    /// Always `"app"`.
    pub bench: &'static str,
    /// What was measured.
    pub params: Params,
    /// Host of rank 0.
    pub host: String,
    /// One row per team size and way.
    pub rows: Vec<Row>,
}

impl AppReport {
    /// A plain-text table; with both ways, files / direct time per team size.
    pub fn to_table(&self) -> String {
        use std::fmt::Write as _;
        let p = &self.params;
        let mut out = format!(
            "# nf bench app: C = A·B, {n}×{n} f64, panels of {} rows, best of {} (rank 0 on {})\n",
            p.panel,
            p.reps,
            self.host,
            n = p.n
        );
        let _ = writeln!(
            out,
            "{:>6} {:>6} {:>7} {:>10} {:>10} {:>9} {:>11}  route",
            "ranks", "hosts", "via", "best s", "GFLOP/s", "eff.", "vs direct"
        );
        for r in &self.rows {
            let direct = self
                .rows
                .iter()
                .find(|d| d.ranks == r.ranks && d.via == Via::Direct && r.via != Via::Direct);
            let ratio = direct.map_or(String::from("-"), |d| {
                format!("{:.3}×", r.best_s / d.best_s)
            });
            let _ = writeln!(
                out,
                "{:>6} {:>6} {:>7} {:>10.4} {:>10.2} {:>9.3} {:>11}  {}",
                r.ranks,
                r.hosts,
                r.via.name(),
                r.best_s,
                r.gflops,
                r.efficiency,
                ratio,
                if r.routes.is_empty() {
                    "-".to_owned()
                } else {
                    r.routes.join("+")
                }
            );
        }
        out
    }
}

impl AppReport {
    /// One line per row, with a header and `#` comments.
    pub fn to_csv(&self) -> String {
        use std::fmt::Write as _;
        let p = &self.params;
        let mut out = format!(
            "# nf bench app: n {}, panel {}, reps {}, rank 0 on {}\n",
            p.n, p.panel, p.reps, self.host
        );
        out.push_str("ranks,hosts,via,best_s,median_s,gflops,efficiency\n");
        for r in &self.rows {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{}",
                r.ranks,
                r.hosts,
                r.via.name(),
                r.best_s,
                r.median_s,
                r.gflops,
                r.efficiency
            );
        }
        out
    }
}

/// One rank's part of one team size: its rows of `A`, `B` (in global memory) and `C`.
struct Part<'a, 'w> {
    n: usize,
    panel: usize,
    me: usize,
    rows: Vec<std::ops::Range<usize>>,
    /// Our rows of `A` (the same for every way).
    a: &'a [f64],
    c: Vec<f64>,
    /// Our rows of `B`, in our segment.
    own_b: &'a [f64],
    /// The two panel buffers (made once: their pages are not faulted in while timed).
    bufs: [Panel; 2],
    source: Source<'a, 'w>,
}

impl Part<'_, '_> {
    /// Panels in the order this rank multiplies them: (proc, first row in its block, rows).
    fn panels(&self) -> Vec<(usize, usize, usize)> {
        let p = self.rows.len();
        let mut v = Vec::new();
        for q in (self.me..p).chain(0..self.me) {
            let len = self.rows[q].len();
            let mut at = 0;
            while at < len {
                let take = self.panel.min(len - at);
                v.push((q, at, take));
                at += take;
            }
        }
        v
    }

    /// Computes our rows of `C`, fetching each panel while multiplying the one before.
    fn multiply(&mut self) -> Result<(), AppError> {
        let n = self.n;
        let mine = self.rows[self.me].clone();
        let panels = self.panels();
        let bufs = &self.bufs;
        let mut first = true;
        let mut pending: Option<Fetch<'_>> = None;
        for (i, &(q, at, take)) in panels.iter().enumerate() {
            if let Some(f) = pending.take() {
                f.finish()?;
            }
            if let Some(&(q2, at2, take2)) = panels.get(i + 1) {
                if q2 != self.me {
                    let dst = &bufs[(i + 1) % 2];
                    // SAFETY: buffer (i + 1) % 2 is not touched until this fetch is
                    // finished at the top of the next pass, and lives to the end.
                    pending =
                        Some(unsafe { self.source.start(q2, at2 * n * 8, take2 * n * 8, dst) }?);
                }
            }
            let guard;
            let b: &[f64] = if q == self.me {
                &self.own_b[at * n..(at + take) * n]
            } else {
                guard = bufs[i % 2].lock().unwrap_or_else(|e| e.into_inner());
                &guard[..take * n]
            };
            let k0 = self.rows[q].start + at;
            gemm(self.a, &mut self.c, mine.len(), n, k0, take, b, first);
            first = false;
        }
        Ok(())
    }
}

/// `c (m × n) (+)= a[:, k0..k0+k] · b (k × n)`, all row-major with `n` columns (`a` has
/// `n` columns too); `first` overwrites `c`.
#[allow(clippy::too_many_arguments)]
fn gemm(a: &[f64], c: &mut [f64], m: usize, n: usize, k0: usize, k: usize, b: &[f64], first: bool) {
    if m == 0 || k == 0 {
        if first {
            c.fill(0.0);
        }
        return;
    }
    assert!(a.len() >= m * n && c.len() >= m * n && b.len() >= k * n && k0 + k <= n);
    let beta = if first { 0.0 } else { 1.0 };
    let nn = n as isize;
    // SAFETY: the assert above bounds every index dgemm forms: a[i·n + k0 + l] for
    // i < m, l < k; b[l·n + j] and c[i·n + j] for j < n; c is borrowed mutably and
    // overlaps neither a nor b.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr().add(k0),
            nn,
            1,
            b.as_ptr(),
            nn,
            1,
            beta,
            c.as_mut_ptr(),
            nn,
            1,
        );
    }
}

/// Runs the probe on every team size (collective over the world); rank 0 gets the
/// report. `node` is this rank's connection to its node's 9P server, needed for
/// [`Via::Files`]. `step` is called after each team size and way.
pub fn run(
    world: &World,
    rma: &Rma<'_>,
    p: &Params,
    node: Option<&Root>,
    mut step: impl FnMut(&str),
) -> Result<Option<AppReport>, AppError> {
    let me = world.rank();
    let mut rows: Vec<Row> = Vec::new();
    for &team in &p.teams {
        let split = grid::split(p.n, team);
        let my_rows = split.get(me).cloned().unwrap_or(0..0);
        let bytes = my_rows.len() * p.n * 8;
        let bases = rma.malloc(bytes)?;
        // Our block of B, filled before the barrier after which others read it.
        let own_b: &[f64] = if bytes > 0 {
            let ptr = bases[me] as *mut f64;
            // SAFETY: malloc mapped `bytes` bytes for us at our base; nothing else
            // writes to it (the other ranks only read, after the barrier below).
            let s = unsafe { std::slice::from_raw_parts_mut(ptr, my_rows.len() * p.n) };
            s.copy_from_slice(&grid::fill(my_rows.clone(), p.n, grid::b));
            s
        } else {
            &[]
        };
        let hosts = {
            let d = rma.domains();
            let mut ids: Vec<usize> = (0..team).filter_map(|q| d.id_of(q)).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        // Errors inside are agreed on by every rank (see `agree`), so all leave here
        // together and free the segment together.
        let times = match measure(world, rma, p, node, team, &split, own_b, &bases) {
            Ok(t) => t,
            Err(e) => {
                let _ = rma.free(bases[me]);
                return Err(e);
            }
        };
        for (via, times) in p.via.iter().zip(times) {
            if me == 0 {
                let s = Summary::from_samples(&times).expect("reps ≥ 1");
                let gflops = 2.0 * (p.n as f64).powi(3) / s.min / 1e9;
                let one = rows
                    .iter()
                    .find(|r| r.ranks == 1 && r.via == *via)
                    .map_or(gflops, |r| r.gflops);
                let mut routes: Vec<String> = match via {
                    Via::Direct => (1..team)
                        .map(|q| crate::rma::route_name(rma.route(q)).to_owned())
                        .collect(),
                    Via::Files => (1..team).map(|_| "9p-files".to_owned()).collect(),
                };
                routes.sort();
                routes.dedup();
                rows.push(Row {
                    ranks: team,
                    hosts,
                    via: *via,
                    routes,
                    best_s: s.min,
                    median_s: s.median,
                    gflops,
                    efficiency: gflops / (team as f64 * one),
                    checked: true,
                });
            }
        }
        step(&format!("{team} ranks"));
        rma.free(bases[me])?;
    }
    Ok((me == 0).then(|| AppReport {
        bench: "app",
        params: p.clone(),
        host: crate::report::hostname(),
        rows,
    }))
}

/// Times `p.reps` products of one team size read each way of `p.via`, the ways
/// alternating (each repetition starts with the other one); rank 0's times per way.
#[allow(clippy::too_many_arguments)]
fn measure(
    world: &World,
    rma: &Rma<'_>,
    p: &Params,
    node: Option<&Root>,
    team: usize,
    split: &[std::ops::Range<usize>],
    own_b: &[f64],
    bases: &[u64],
) -> Result<Vec<Vec<f64>>, AppError> {
    let me = world.rank();
    let active = me < team;
    let my_rows = split.get(me).cloned().unwrap_or(0..0);
    let mut parts = Vec::with_capacity(p.via.len());
    let mut failed = None;
    let panel = p.panel.min(p.n).max(1);
    let a = grid::fill(my_rows.clone(), p.n, grid::a);
    for via in &p.via {
        // Every way is set up on every rank even after a failure: setting up files is
        // collective.
        let source = match via {
            Via::Direct => Ok(Source::Direct { rma, bases }),
            Via::Files => files_source(world, rma, node, split, bases),
        };
        match source {
            Ok(source) => parts.push(Part {
                n: p.n,
                panel,
                me,
                rows: split.to_vec(),
                a: &a,
                c: vec![0.0; my_rows.len() * p.n],
                own_b,
                bufs: std::array::from_fn(|_| Arc::new(Mutex::new(vec![0.0; panel * p.n]))),
                source,
            }),
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
    let mut checked = failed.map_or(Ok(()), Err);
    let mut times = vec![Vec::with_capacity(p.reps); p.via.len()];
    for rep in 0..p.reps {
        for w in 0..parts.len() {
            let w = if rep % 2 == 0 { w } else { parts.len() - 1 - w };
            let part = &mut parts[w];
            // Starts the repetition together, and stops everyone if the last check
            // failed anywhere.
            agree(world, team, checked)?;
            let t0 = Instant::now();
            let done = if active { part.multiply() } else { Ok(()) };
            agree(world, team, done)?;
            times[w].push(t0.elapsed().as_secs_f64());
            checked = if active {
                let c = grid::check(&part.c, my_rows.clone(), p.n);
                // A repetition that skipped a panel would otherwise pass on the last
                // one's sums.
                part.c.fill(f64::NAN);
                c.map_err(|m| AppError::Wrong {
                    rank: me,
                    ranks: team,
                    via: p.via[w].name(),
                    what: m.what,
                    index: m.index,
                    got: m.got,
                    expected: m.expected,
                })
            } else {
                Ok(())
            };
        }
    }
    agree(world, team, checked)?;
    Ok(times)
}

/// `local` on every rank if it is `Ok` everywhere (collective; a barrier): a rank
/// whose step failed returns its error, the others [`AppError::Elsewhere`], so all
/// leave at the same point and none waits for a rank that left.
fn agree<T>(world: &World, team: usize, local: Result<T, AppError>) -> Result<T, AppError> {
    let mut failed = [u32::from(local.is_err())];
    world.allreduce(&mut failed, ReduceOp::Max)?;
    match local {
        Ok(_) if failed[0] != 0 => Err(AppError::Elsewhere { ranks: team }),
        other => other,
    }
}

/// Opens the `/mem` files of every other active proc's block (collective: every rank
/// shares its segment's number, and whether it can read the others').
fn files_source<'a, 'w>(
    world: &World,
    rma: &'a Rma<'w>,
    node: Option<&Root>,
    split: &[std::ops::Range<usize>],
    bases: &[u64],
) -> Result<Source<'a, 'w>, AppError> {
    let me = world.rank();
    let team = split.len();
    let active = me < team;
    // ids[q]: 1 + the number of q's segment (0: none); the last slot: some rank
    // cannot read this way.
    let mut ids = vec![0u64; world.size() + 1];
    if let Some(f) = rma.mem_file(bases[me]) {
        ids[me] = f.id + 1;
    }
    let problem = if !active || team == 1 {
        None
    } else if let Some(proc) = (0..team).find(|&q| !rma.same_node(q)) {
        Some(AppError::OtherHost { proc })
    } else if node.is_none() {
        Some(AppError::NoServer)
    } else {
        None
    };
    ids[world.size()] = u64::from(problem.is_some());
    world.allreduce(&mut ids, ReduceOp::Max)?;
    if let Some(e) = problem {
        return Err(e);
    }
    if ids[world.size()] != 0 {
        return Err(AppError::Elsewhere { ranks: team });
    }
    let mut paths = vec![None; world.size()];
    if active {
        for q in (0..team).filter(|&q| q != me && !split[q].is_empty()) {
            let id = ids[q].checked_sub(1).ok_or(AppError::NoFile { proc: q })?;
            paths[q] = Some(format!("/mem/{}/{q}/{id}", world.job_id()));
        }
    }
    match node {
        Some(root) if paths.iter().any(Option::is_some) => Source::files(root, &paths, me),
        _ => Ok(Source::Files(Vec::new())),
    }
}
