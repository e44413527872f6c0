//! The outcome of `nf bench 9p`: one [`Case`] per server, msize and test, and one
//! [`RatioRow`] per msize and test; as an aligned table, JSON and CSV, and as
//! ping-pong-shaped [`Report`]s for the plots.
//!
//! ```json
//! { "bench": "9p", "host": "node1", "timestamp": "…", "git": "abc1234",
//!   "params": { "alternations": 3, "small_iters": 2000, … },
//!   "servers": [ { "name": "ninefold", "addr": "unix:/tmp/…/ninefold.sock",
//!                  "aname": "/fs" }, … ],
//!   "cases": [ { "server": "ninefold", "test": "read", "msize": 65536,
//!                "negotiated_msize": 65536, "rate": 812.5, "unit": "MB/s",
//!                "result": { "size": 65512, "iters": 1536, "median_us": 80.6, … },
//!                "round_rates": [790.2, 815.0, …] } ],
//!   "ratios": [ { "test": "read", "msize": 65536, "ours": 812.5, "theirs": 700.1,
//!                 "unit": "MB/s", "ratio": 1.16 } ] }
//! ```

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::ninep::{Params, Served};
use crate::report::{fmt_size, hostname, rfc3339_utc, Report, ReportError, SizeResult};

/// What was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// Walk / open / read 1 B / clunk cycles.
    Small,
    /// Full-size `Tread`s.
    Read,
    /// Full-size `Twrite`s.
    Write,
}

impl Test {
    /// The name used in tables and files.
    pub fn name(self) -> &'static str {
        match self {
            Test::Small => "small",
            Test::Read => "read",
            Test::Write => "write",
        }
    }

    /// The unit of [`Case::rate`].
    pub fn unit(self) -> &'static str {
        match self {
            Test::Small => "cycles/s",
            Test::Read | Test::Write => "MB/s",
        }
    }
}

/// One server, msize and test.
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    /// The server's name.
    pub server: String,
    /// The test.
    pub test: Test,
    /// The msize asked for.
    pub msize: u32,
    /// The msize the server agreed to.
    pub negotiated_msize: u32,
    /// Cycles/s or MB/s, from the median sample.
    pub rate: f64,
    /// [`Test::unit`].
    pub unit: &'static str,
    /// The samples' statistics (µs per cycle or per message; `size` is the bytes
    /// per message, 1 for small operations).
    pub result: SizeResult,
    /// The rate of each round alone, in the order run.
    pub round_rates: Vec<f64>,
}

/// Cycles/s (small operations) or MB/s (streams, `bytes` per message) from the median
/// of `samples` (µs); `None` if there are none.
pub fn rate(test: Test, bytes: usize, samples: &[f64]) -> Option<f64> {
    let median = crate::stats::Summary::from_samples(samples)?.median;
    Some(match test {
        Test::Small => 1e6 / median,
        Test::Read | Test::Write => bytes as f64 / median,
    })
}

impl Case {
    /// Summarises `samples` (µs); `None` if there are none.
    pub fn new(
        server: &str,
        msize: u32,
        negotiated_msize: u32,
        test: Test,
        bytes: usize,
        samples: &[f64],
    ) -> Option<Case> {
        let result = SizeResult::from_samples(bytes, samples)?;
        let rate = rate(test, bytes, samples)?;
        Some(Case {
            server: server.to_string(),
            test,
            msize,
            negotiated_msize,
            rate,
            unit: test.unit(),
            result,
            round_rates: Vec::new(),
        })
    }
}

/// Ours against theirs for one msize and test.
#[derive(Debug, Clone, Serialize)]
pub struct RatioRow {
    /// The test.
    pub test: Test,
    /// The msize asked for.
    pub msize: u32,
    /// Our rate.
    pub ours: f64,
    /// Their rate.
    pub theirs: f64,
    /// [`Test::unit`].
    pub unit: &'static str,
    /// The median over rounds of ours / theirs in the same round; absent when the two
    /// did not agree to the same msize.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// Why there is no ratio.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where a measured server was.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// Its name in the cases.
    pub name: String,
    /// Its address ([`Served::addr`]).
    pub addr: String,
    /// The attach name used there.
    pub aname: String,
}

impl ServerInfo {
    /// Where `served` is.
    pub fn of(served: &Served) -> ServerInfo {
        ServerInfo {
            name: served.name.clone(),
            addr: served.addr.clone(),
            aname: served.aname.clone(),
        }
    }
}

/// Everything one run of `nf bench 9p` found.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Always `"9p"`.
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
    /// The servers, in the order of `params.servers`.
    pub servers: Vec<ServerInfo>,
    /// Every case measured.
    pub cases: Vec<Case>,
    /// Ours / theirs, when two servers were measured.
    pub ratios: Vec<RatioRow>,
}

/// CSV columns of [`Comparison::to_csv`].
pub const CSV_HEADER: &str = "server,test,msize,negotiated_msize,bytes_per_message,iters,\
min_us,avg_us,median_us,max_us,stddev_us,rate,unit";

impl Comparison {
    /// Builds the comparison; ratios pair `servers[0]` (ours) with `servers[1]`.
    pub fn new(cases: Vec<Case>, servers: &[Served], p: &Params) -> Comparison {
        let mut params = serde_json::Map::new();
        params.insert("alternations".into(), p.alternations.into());
        params.insert("small_iters".into(), p.small_iters.into());
        params.insert("small_warmup".into(), p.small_warmup.into());
        params.insert("stream_bytes".into(), p.stream_bytes.into());
        params.insert("depth".into(), p.depth.into());
        params.insert("msizes".into(), p.msizes.clone().into());
        let servers_json: Vec<serde_json::Value> =
            servers.iter().map(|s| s.name.clone().into()).collect();
        params.insert("servers".into(), servers_json.into());
        let ratios = match servers {
            [ours, theirs, ..] => ratios(&cases, &ours.name, &theirs.name),
            _ => Vec::new(),
        };
        Comparison {
            bench: "9p",
            host: hostname(),
            timestamp: rfc3339_utc(std::time::SystemTime::now()),
            git: None,
            params,
            servers: servers.iter().map(ServerInfo::of).collect(),
            cases,
            ratios,
        }
    }

    /// The cases as an aligned table, then the ratios.
    pub fn to_table(&self) -> String {
        let mut out = format!("9p, host {}, {}\n", self.host, self.timestamp);
        for s in &self.servers {
            let _ = writeln!(out, "# {}: {}, attach name {:?}", s.name, s.addr, s.aname);
        }
        let _ = writeln!(
            out,
            "{:<10} {:<6} {:>9} {:>9} {:>7} {:>10} {:>10} {:>10}  unit",
            "server", "test", "msize", "agreed", "iters", "median µs", "avg µs", "rate"
        );
        for c in &self.cases {
            let _ = writeln!(
                out,
                "{:<10} {:<6} {:>9} {:>9} {:>7} {:>10.2} {:>10.2} {:>10.1}  {}",
                c.server,
                c.test.name(),
                fmt_size(c.msize as usize),
                fmt_size(c.negotiated_msize as usize),
                c.result.iters,
                c.result.median_us,
                c.result.avg_us,
                c.rate,
                c.unit,
            );
        }
        if !self.ratios.is_empty() {
            let _ = writeln!(
                out,
                "\n# ratios ours / theirs (above 1: ours is faster). ours, theirs: the rate of \
                 all rounds' samples pooled (median);\n# ratio: the median of the per-round \
                 ratios, which a load spike hitting both servers in one round does not \
                 move,\n# so it need not equal ours / theirs"
            );
            let _ = writeln!(
                out,
                "{:<6} {:>9} {:>12} {:>12} {:>9}  unit",
                "test", "msize", "ours", "theirs", "ratio"
            );
            for r in &self.ratios {
                let ratio = r
                    .ratio
                    .map_or_else(|| "-".to_string(), |x| format!("{x:.2}"));
                let _ = writeln!(
                    out,
                    "{:<6} {:>9} {:>12.1} {:>12.1} {:>9}  {}{}",
                    r.test.name(),
                    fmt_size(r.msize as usize),
                    r.ours,
                    r.theirs,
                    ratio,
                    r.unit,
                    r.note
                        .as_deref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                );
            }
        }
        out
    }

    /// The cases as CSV (`CSV_HEADER`, one row per case).
    pub fn to_csv(&self) -> String {
        let mut out = format!("{CSV_HEADER}\n");
        for c in &self.cases {
            let r = &c.result;
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                c.server,
                c.test.name(),
                c.msize,
                c.negotiated_msize,
                r.size,
                r.iters,
                r.min_us,
                r.avg_us,
                r.median_us,
                r.max_us,
                r.stddev_us,
                c.rate,
                c.unit
            );
        }
        out
    }

    /// Writes [`Comparison`] as pretty JSON to `path`.
    pub fn write_json(&self, path: &Path) -> Result<(), ReportError> {
        let mut text = serde_json::to_string_pretty(self).map_err(|source| ReportError::Json {
            path: path.into(),
            source,
        })?;
        text.push('\n');
        write_file(path, &text)
    }

    /// Writes [`Comparison::to_csv`] to `path`.
    pub fn write_csv(&self, path: &Path) -> Result<(), ReportError> {
        write_file(path, &self.to_csv())
    }

    /// One ping-pong-shaped report per server for `test` (rows by bytes per message;
    /// msizes the server did not agree to are left out), for
    /// [`crate::plot::plot_reports`].
    pub fn reports(&self, test: Test) -> Vec<Report> {
        let mut servers: Vec<&str> = self.cases.iter().map(|c| c.server.as_str()).collect();
        servers.dedup();
        servers
            .into_iter()
            .map(|s| {
                let rows = self
                    .cases
                    .iter()
                    .filter(|c| c.server == s && c.test == test)
                    .filter(|c| c.negotiated_msize == c.msize)
                    .map(|c| c.result.clone())
                    .collect();
                Report::new(&format!("9p-{}", test.name()), s, 1, rows)
            })
            .collect()
    }
}

pub(crate) fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|source| ReportError::Io {
        path: path.into(),
        source,
    })
}

/// The median of per-round ratios (the pooled rates' ratio when rounds are missing).
fn round_ratio(ours: &Case, theirs: &Case) -> f64 {
    let per_round: Vec<f64> = ours
        .round_rates
        .iter()
        .zip(&theirs.round_rates)
        .map(|(o, t)| o / t)
        .collect();
    crate::stats::Summary::from_samples(&per_round).map_or(ours.rate / theirs.rate, |s| s.median)
}

/// Ours / theirs per msize and test.
fn ratios(cases: &[Case], ours: &str, theirs: &str) -> Vec<RatioRow> {
    let find = |server: &str, test: Test, msize: u32| {
        cases
            .iter()
            .find(|c| c.server == server && c.test == test && c.msize == msize)
    };
    let mut rows = Vec::new();
    for c in cases.iter().filter(|c| c.server == ours) {
        let Some(t) = find(theirs, c.test, c.msize) else {
            continue;
        };
        let agreed = c.negotiated_msize == c.msize && t.negotiated_msize == t.msize;
        let note = (!agreed).then(|| {
            format!(
                "msize agreed: {} {}, {} {}",
                ours,
                fmt_size(c.negotiated_msize as usize),
                theirs,
                fmt_size(t.negotiated_msize as usize)
            )
        });
        rows.push(RatioRow {
            test: c.test,
            msize: c.msize,
            ours: c.rate,
            theirs: t.rate,
            unit: c.unit,
            ratio: agreed.then(|| round_ratio(c, t)),
            note,
        });
    }
    rows.sort_by_key(|r| (r.test, r.msize));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(server: &str, test: Test, msize: u32, agreed: u32, us: f64) -> Case {
        Case::new(server, msize, agreed, test, 1000, &[us, us, us]).unwrap()
    }

    #[test]
    fn the_ratio_is_the_median_of_round_ratios() {
        let mut ours = case("ninefold", Test::Read, 8192, 8192, 10.0);
        let mut theirs = case("diod", Test::Read, 8192, 8192, 10.0);
        // Round 2 hit a load spike for both: its ratio is still 2, like the others'.
        ours.round_rates = vec![100.0, 10.0, 100.0, 300.0];
        theirs.round_rates = vec![50.0, 5.0, 50.0, 50.0];
        assert!((round_ratio(&ours, &theirs) - 2.0).abs() < 1e-9);
    }

    #[test]
    fn ratios_pair_servers_and_skip_disagreeing_msizes() {
        let cases = vec![
            case("ninefold", Test::Read, 8192, 8192, 10.0),
            case("diod", Test::Read, 8192, 8192, 20.0),
            case("ninefold", Test::Small, 8192, 8192, 50.0),
            case("diod", Test::Small, 8192, 8192, 40.0),
            case("ninefold", Test::Read, 1 << 20, 1 << 20, 100.0),
            case("diod", Test::Read, 1 << 20, 262_144, 100.0),
        ];
        let rows = ratios(&cases, "ninefold", "diod");
        assert_eq!(rows.len(), 3);
        let small = rows.iter().find(|r| r.test == Test::Small).unwrap();
        // 50 µs per cycle vs 40 µs: 20000 vs 25000 cycles/s.
        assert!((small.ratio.unwrap() - 0.8).abs() < 1e-9);
        let read = rows
            .iter()
            .find(|r| r.test == Test::Read && r.msize == 8192)
            .unwrap();
        // 1000 B per message in 10 µs = 100 MB/s, against 50 MB/s.
        assert!((read.ours - 100.0).abs() < 1e-9 && (read.ratio.unwrap() - 2.0).abs() < 1e-9);
        let big = rows.iter().find(|r| r.msize == 1 << 20).unwrap();
        assert_eq!(big.ratio, None);
        assert!(big.note.as_deref().unwrap().contains("256 KiB"), "{big:?}");
    }
}
