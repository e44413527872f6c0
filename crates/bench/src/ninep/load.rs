//! `nf bench 9p --clients 1,4,16,64`: many clients at once against each server.
//!
//! Per client count N and round (the servers' order flips every round, as in the msize
//! sweep), each server gets, in turn:
//!
//! 1. N connections at the msize given, each attached: N separate clients, as N
//!    programs would be (a gateway sees N client connections);
//! 2. all N start together and, for the duration given, each repeats one request: read
//!    the whole [`LOAD_FILE`] ([`LOAD_BYTES`]) as a program reading a file would —
//!    walk, open, `Tread`s until [`LOAD_BYTES`] came, clunk — timing each request.
//!
//! A round's throughput is the requests every client completed over the wall time from
//! the common start until the last client stopped (a request under way at the end is
//! finished and counted); its latencies are every request's time. Per server and N the
//! rounds pool: requests / seconds, and the 50th and 99th percentiles of all the
//! requests' times. The ratios ours / theirs are medians over rounds of the same-round
//! ratios (throughput, and p99 latency: below 1 is better for ours there).

use std::fmt::Write as _;
use std::path::Path;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use nf_ninep::LOpenFlags;
use nf_ninep_client::{ClientError, Root};
use serde::Serialize;

use crate::ninep::{BenchError, Served, ServerInfo};
use crate::report::{hostname, rfc3339_utc, ReportError};
use crate::stats::Summary;

/// The file every load request reads whole.
pub const LOAD_FILE: &str = "load.bin";
/// Its size: 64 KiB.
pub const LOAD_BYTES: usize = 64 << 10;

/// What the load test measures.
#[derive(Debug, Clone)]
pub struct LoadParams {
    /// The client counts, in the order run.
    pub clients: Vec<usize>,
    /// How long the clients send requests, per server, count and round.
    pub duration: Duration,
    /// Rounds of (server A, server B) per client count.
    pub alternations: usize,
    /// The msize every client asks for.
    pub msize: u32,
    /// The user to attach as ([`crate::ninep::Params::user`]).
    pub user: String,
}

/// One server, client count and round.
#[derive(Debug, Clone, Serialize)]
pub struct LoadRound {
    /// The server's name.
    pub server: String,
    /// Clients at once.
    pub clients: usize,
    /// The round, from 1.
    pub round: usize,
    /// Requests completed by all clients.
    pub requests: usize,
    /// Wall time from the common start to the last client's stop.
    pub seconds: f64,
    /// Requests per second.
    pub rate: f64,
    /// Data rate: requests × [`LOAD_BYTES`] / seconds, in MB/s (10^6 B).
    pub mb_per_s: f64,
    /// Median request time, µs.
    pub p50_us: f64,
    /// 99th percentile of request times, µs.
    pub p99_us: f64,
    /// Longest request, µs.
    pub max_us: f64,
}

/// One server and client count, every round pooled.
#[derive(Debug, Clone, Serialize)]
pub struct LoadCase {
    /// The server's name.
    pub server: String,
    /// Clients at once.
    pub clients: usize,
    /// Requests over all rounds.
    pub requests: usize,
    /// Requests per second: all rounds' requests over all rounds' seconds.
    pub rate: f64,
    /// Data rate in MB/s.
    pub mb_per_s: f64,
    /// Median of every request's time, µs.
    pub p50_us: f64,
    /// 99th percentile of every request's time, µs.
    pub p99_us: f64,
    /// Longest request, µs.
    pub max_us: f64,
}

/// Ours against theirs for one client count.
#[derive(Debug, Clone, Serialize)]
pub struct LoadRatio {
    /// Clients at once.
    pub clients: usize,
    /// Median over rounds of ours / theirs requests per second (above 1: ours is
    /// faster).
    pub rate_ratio: f64,
    /// Median over rounds of ours / theirs p99 latency (below 1: ours is faster).
    pub p99_ratio: f64,
}

/// Everything one load test found.
#[derive(Debug, Clone, Serialize)]
pub struct LoadComparison {
    /// Always `"9p-load"`.
    pub bench: &'static str,
    /// Host the run was made on.
    pub host: String,
    /// When, RFC 3339 UTC.
    pub timestamp: String,
    /// Source revision, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// The parameters.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The servers, ours first.
    pub servers: Vec<ServerInfo>,
    /// Every round of every server and client count, in the order run.
    pub rounds: Vec<LoadRound>,
    /// Per server and client count, rounds pooled.
    pub cases: Vec<LoadCase>,
    /// Ours / theirs per client count, when two servers were measured.
    pub ratios: Vec<LoadRatio>,
}

/// CSV columns of [`LoadComparison::to_csv`] (one row per round).
pub const LOAD_CSV_HEADER: &str =
    "server,clients,round,requests,seconds,rate,mb_per_s,p50_us,p99_us,max_us";

/// The `q` quantile (0 … 1) of `sorted` (ascending, not empty): the sample at rank
/// ⌈q·n⌉ (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One request: the whole of [`LOAD_FILE`], as a program reading it would.
fn read_whole(root: &Root) -> Result<(), ClientError> {
    let file = root.walk(LOAD_FILE)?.lopen(LOpenFlags::RDONLY)?;
    let mut got = 0;
    while got < LOAD_BYTES {
        let data = file.read_chunk(got as u64, (LOAD_BYTES - got) as u32)?;
        if data.is_empty() {
            break;
        }
        got += data.len();
    }
    file.close()
}

/// `clients` clients of `served` requesting at once for `p.duration`; the wall time and
/// every request's time (µs).
fn measure(served: &Served, clients: usize, p: &LoadParams) -> Result<(f64, Vec<f64>), BenchError> {
    let msize = p.msize;
    let err = |what: &'static str| {
        let server = served.name.clone();
        move |source| BenchError::Client {
            server,
            msize,
            what,
            source: Box::new(source),
        }
    };
    let mut roots = Vec::with_capacity(clients);
    for _ in 0..clients {
        let client = served
            .connect(msize)
            .map_err(|source| BenchError::Connect {
                server: served.name.clone(),
                msize,
                source,
            })?;
        let root = client
            .attach(&p.user, &served.aname)
            .map_err(err("attaching"))?;
        // One untimed request: the file is there, and each connection is warm.
        read_whole(&root).map_err(err("reading the load file"))?;
        roots.push(root);
    }
    let start = Barrier::new(clients + 1);
    let (wall, results) = std::thread::scope(|s| {
        let workers: Vec<_> = roots
            .iter()
            .map(|root| {
                let start = &start;
                s.spawn(move || {
                    start.wait();
                    let began = Instant::now();
                    let mut samples = Vec::new();
                    while began.elapsed() < p.duration {
                        let t = Instant::now();
                        read_whole(root)?;
                        samples.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    Ok::<_, ClientError>(samples)
                })
            })
            .collect();
        start.wait();
        let began = Instant::now();
        let results: Vec<_> = workers
            .into_iter()
            .map(|w| w.join().expect("a load client panicked"))
            .collect();
        (began.elapsed().as_secs_f64(), results)
    });
    let mut samples = Vec::new();
    for r in results {
        samples.extend(r.map_err(err("load request"))?);
    }
    Ok((wall, samples))
}

/// Runs the load test on `servers` (the first is "ours"), calling
/// `progress(server, clients)` before each round, and compares them.
pub fn run_load(
    servers: &[Served],
    p: &LoadParams,
    mut progress: impl FnMut(&str, usize),
) -> Result<LoadComparison, BenchError> {
    let mut rounds = Vec::new();
    let mut cases = Vec::new();
    for (ci, &n) in p.clients.iter().enumerate() {
        // Per server: every request's time and every round's seconds, pooled.
        let mut pooled: Vec<(Vec<f64>, f64)> = vec![(Vec::new(), 0.0); servers.len()];
        for k in 0..p.alternations {
            let mut order: Vec<usize> = (0..servers.len()).collect();
            if (ci + k) % 2 == 1 {
                order.reverse();
            }
            for s in order {
                progress(&servers[s].name, n);
                let (seconds, mut samples) = measure(&servers[s], n, p)?;
                samples.sort_unstable_by(f64::total_cmp);
                let requests = samples.len();
                let (p50, p99, max) = if requests > 0 {
                    (
                        quantile(&samples, 0.5),
                        quantile(&samples, 0.99),
                        samples[requests - 1],
                    )
                } else {
                    (f64::NAN, f64::NAN, f64::NAN)
                };
                rounds.push(LoadRound {
                    server: servers[s].name.clone(),
                    clients: n,
                    round: k + 1,
                    requests,
                    seconds,
                    rate: requests as f64 / seconds,
                    mb_per_s: (requests * LOAD_BYTES) as f64 / seconds / 1e6,
                    p50_us: p50,
                    p99_us: p99,
                    max_us: max,
                });
                pooled[s].0.extend(samples);
                pooled[s].1 += seconds;
            }
        }
        for (s, (mut samples, seconds)) in pooled.into_iter().enumerate() {
            if samples.is_empty() {
                continue;
            }
            samples.sort_unstable_by(f64::total_cmp);
            let requests = samples.len();
            cases.push(LoadCase {
                server: servers[s].name.clone(),
                clients: n,
                requests,
                rate: requests as f64 / seconds,
                mb_per_s: (requests * LOAD_BYTES) as f64 / seconds / 1e6,
                p50_us: quantile(&samples, 0.5),
                p99_us: quantile(&samples, 0.99),
                max_us: samples[requests - 1],
            });
        }
    }
    let ratios = match servers {
        [ours, theirs, ..] => ratios(&rounds, &p.clients, &ours.name, &theirs.name),
        _ => Vec::new(),
    };
    let mut params = serde_json::Map::new();
    params.insert("clients".into(), p.clients.clone().into());
    params.insert("seconds".into(), p.duration.as_secs_f64().into());
    params.insert("alternations".into(), p.alternations.into());
    params.insert("msize".into(), p.msize.into());
    params.insert(
        "request".into(),
        format!("walk, open, read {LOAD_BYTES} B, clunk").into(),
    );
    Ok(LoadComparison {
        bench: "9p-load",
        host: hostname(),
        timestamp: rfc3339_utc(std::time::SystemTime::now()),
        git: None,
        params,
        servers: servers.iter().map(ServerInfo::of).collect(),
        rounds,
        cases,
        ratios,
    })
}

/// The median over rounds of ours / theirs, per client count.
fn ratios(rounds: &[LoadRound], clients: &[usize], ours: &str, theirs: &str) -> Vec<LoadRatio> {
    let median = |xs: Vec<f64>| Summary::from_samples(&xs).map(|s| s.median);
    clients
        .iter()
        .filter_map(|&n| {
            let side = |name: &str| {
                rounds
                    .iter()
                    .filter(move |r| r.server == name && r.clients == n)
                    .collect::<Vec<_>>()
            };
            let (o, t) = (side(ours), side(theirs));
            let pairs = || o.iter().zip(&t);
            Some(LoadRatio {
                clients: n,
                rate_ratio: median(pairs().map(|(a, b)| a.rate / b.rate).collect())?,
                p99_ratio: median(pairs().map(|(a, b)| a.p99_us / b.p99_us).collect())?,
            })
        })
        .collect()
}

impl LoadComparison {
    /// The pooled cases as an aligned table, then the ratios.
    pub fn to_table(&self) -> String {
        let mut out = format!(
            "9p load ({}), host {}, {}\n",
            self.params
                .get("request")
                .and_then(|r| r.as_str())
                .unwrap_or_default(),
            self.host,
            self.timestamp
        );
        for s in &self.servers {
            let _ = writeln!(out, "# {}: {}, attach name {:?}", s.name, s.addr, s.aname);
        }
        let _ = writeln!(
            out,
            "{:<10} {:>7} {:>9} {:>10} {:>9} {:>10} {:>10}",
            "server", "clients", "requests", "req/s", "MB/s", "p50 µs", "p99 µs"
        );
        for c in &self.cases {
            let _ = writeln!(
                out,
                "{:<10} {:>7} {:>9} {:>10.1} {:>9.1} {:>10.1} {:>10.1}",
                c.server, c.clients, c.requests, c.rate, c.mb_per_s, c.p50_us, c.p99_us
            );
        }
        if !self.ratios.is_empty() {
            let _ = writeln!(
                out,
                "\n# ratios ours / theirs, medians of the per-round ratios (req/s: above 1 \
                 ours is faster; p99: below 1 ours is faster)"
            );
            let _ = writeln!(out, "{:>7} {:>9} {:>9}", "clients", "req/s", "p99");
            for r in &self.ratios {
                let _ = writeln!(
                    out,
                    "{:>7} {:>9.2} {:>9.2}",
                    r.clients, r.rate_ratio, r.p99_ratio
                );
            }
        }
        out
    }

    /// Every round as CSV ([`LOAD_CSV_HEADER`]).
    pub fn to_csv(&self) -> String {
        let mut out = format!("{LOAD_CSV_HEADER}\n");
        for r in &self.rounds {
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{}",
                r.server,
                r.clients,
                r.round,
                r.requests,
                r.seconds,
                r.rate,
                r.mb_per_s,
                r.p50_us,
                r.p99_us,
                r.max_us
            );
        }
        out
    }

    /// Writes the comparison as pretty JSON to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), ReportError> {
        let mut text = serde_json::to_string_pretty(self).map_err(|source| ReportError::Json {
            path: path.into(),
            source,
        })?;
        text.push('\n');
        crate::ninep::compare::write_file(path, &text)
    }

    /// Writes [`LoadComparison::to_csv`] to `path`.
    pub fn write_csv(&self, path: &Path) -> Result<(), ReportError> {
        crate::ninep::compare::write_file(path, &self.to_csv())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_take_the_nearest_rank() {
        let xs: Vec<f64> = (1..=200).map(f64::from).collect();
        assert_eq!(quantile(&xs, 0.5), 100.0);
        assert_eq!(quantile(&xs, 0.99), 198.0);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
        assert_eq!(quantile(&[1.0, 2.0], 0.0), 1.0);
    }

    fn round(server: &str, clients: usize, rate: f64, p99_us: f64) -> LoadRound {
        LoadRound {
            server: server.into(),
            clients,
            round: 1,
            requests: 1,
            seconds: 1.0,
            rate,
            mb_per_s: 0.0,
            p50_us: 0.0,
            p99_us,
            max_us: 0.0,
        }
    }

    #[test]
    fn ratios_pair_rounds_per_client_count() {
        let rounds = vec![
            round("gateway", 4, 90.0, 200.0),
            round("direct", 4, 100.0, 100.0),
            round("direct", 4, 50.0, 400.0),
            round("gateway", 4, 40.0, 400.0),
            round("gateway", 16, 10.0, 1.0),
        ];
        let r = ratios(&rounds, &[4, 16], "gateway", "direct");
        // 16 clients: no round of "direct", no ratio.
        assert_eq!(r.len(), 1);
        // Rounds 0.9 and 0.8 → 0.85; p99 2.0 and 1.0 → 1.5.
        assert!((r[0].rate_ratio - 0.85).abs() < 1e-9);
        assert!((r[0].p99_ratio - 1.5).abs() < 1e-9);
    }
}
