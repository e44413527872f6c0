//! Benchmark reports: one JSON shape shared with the C MPI ping-pong
//! (`bench/mpi/pingpong.c`) and the comparison script (`bench/compare_report.py`),
//! plus CSV and an aligned text table.
//!
//! ```json
//! { "bench": "pingpong", "transport": "shm", "ranks": 2, "host": "node1",
//!   "timestamp": "2025-01-01T12:00:00Z", "git": "abc1234", "poll_empty_ns": 12.3,
//!   "params": { "iters": 1000, "warmup": 100 },
//!   "results": [ { "size": 8, "iters": 1000, "min_us": 0.2, "avg_us": 0.25,
//!                  "median_us": 0.24, "max_us": 3.1, "stddev_us": 0.1, "mb_per_s": 33.3 } ] }
//! ```
//! `git` and `poll_empty_ns` are left out when unknown. Every benchmark writes this one
//! shape: a run of several cases (`nf bench rma`'s operations × layouts) is one report
//! whose rows name their case (`"case": "rma-put-contig"`, see [`Report::merged`]).
//!
//! The statistic is the median throughout: `mb_per_s` is `size / median_us`, so the
//! rate and the time beside it describe the same sample; min, max and stddev show the
//! spread. Tables are plain numbers with units in the column names and `#` comment
//! lines, as the OSU benchmarks print them.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// Free-form benchmark parameters (`"params"` in the JSON).
pub type Params = serde_json::Map<String, serde_json::Value>;

/// Reading or writing a report failed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The file could not be created, written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The report could not be encoded or decoded as JSON.
    #[error("{}: JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: serde_json::Error,
    },
}

/// Results of one message size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    /// Message size in bytes.
    pub size: usize,
    /// Timed iterations (samples).
    pub iters: usize,
    /// Smallest half round trip, µs.
    pub min_us: f64,
    /// Mean half round trip, µs.
    pub avg_us: f64,
    /// Median half round trip, µs.
    pub median_us: f64,
    /// Largest half round trip, µs.
    pub max_us: f64,
    /// Sample standard deviation of the half round trip, µs.
    pub stddev_us: f64,
    /// `size / median_us`: bytes per µs, i.e. MB/s with MB = 10^6 B.
    pub mb_per_s: f64,
    /// Which case of a several-case report this row belongs to (see [`Report::merged`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case: Option<String>,
}

impl SizeResult {
    /// Builds the result of `size` from its summary (half round trips in µs).
    pub fn from_summary(size: usize, s: &Summary) -> SizeResult {
        SizeResult {
            size,
            iters: s.n,
            min_us: s.min,
            avg_us: s.avg,
            median_us: s.median,
            max_us: s.max,
            stddev_us: s.stddev,
            mb_per_s: mb_per_s(size, s.median),
            case: None,
        }
    }

    /// Builds the result of `size` from half-round-trip samples in µs; `None` if empty.
    pub fn from_samples(size: usize, half_rtt_us: &[f64]) -> Option<SizeResult> {
        Summary::from_samples(half_rtt_us).map(|s| SizeResult::from_summary(size, &s))
    }
}

/// Data rate in MB/s (MB = 10^6 B) of `size` bytes moved in `us` microseconds.
pub fn mb_per_s(size: usize, us: f64) -> f64 {
    if us > 0.0 {
        size as f64 / us
    } else {
        0.0
    }
}

/// One benchmark run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Benchmark name, e.g. `"pingpong"`.
    pub bench: String,
    /// What carried the messages, e.g. `"shm"` or `"openmpi-ob1-vader"`.
    pub transport: String,
    /// Ranks in the job.
    pub ranks: usize,
    /// Host the measuring rank ran on.
    pub host: String,
    /// When the report was made, RFC 3339 in UTC (`2025-01-01T12:00:00Z`).
    pub timestamp: String,
    /// Source revision, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<String>,
    /// Cost of one empty poll in ns, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_empty_ns: Option<f64>,
    /// How the measuring rank waited (`busy-poll` or `yield`), when known: a rank
    /// confined with fewer CPUs than ranks yields, and its times say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<String>,
    /// Benchmark parameters.
    #[serde(default)]
    pub params: Params,
    /// One entry per message size, in the order measured.
    pub results: Vec<SizeResult>,
}

/// CSV columns, in order.
pub const CSV_HEADER: &str =
    "bench,transport,size,iters,min_us,avg_us,median_us,max_us,stddev_us,mb_per_s";

impl Report {
    /// A report made now on this host, with no git revision, no poll cost and no params.
    pub fn new(bench: &str, transport: &str, ranks: usize, results: Vec<SizeResult>) -> Report {
        Report {
            bench: bench.to_string(),
            transport: transport.to_string(),
            ranks,
            host: hostname(),
            timestamp: rfc3339_utc(SystemTime::now()),
            git: None,
            poll_empty_ns: None,
            waiting: None,
            params: Params::new(),
            results,
        }
    }

    /// One report of several single-case ones (same transport and ranks): named
    /// `bench`, params and poll cost of the first, every row tagged with its report's
    /// `bench` as its `case`. `None` when `reports` is empty.
    pub fn merged(bench: &str, reports: &[Report]) -> Option<Report> {
        let first = reports.first()?;
        let mut out = first.clone();
        out.bench = bench.to_string();
        out.results = reports
            .iter()
            .flat_map(|r| {
                r.results.iter().map(|row| SizeResult {
                    case: Some(r.bench.clone()),
                    ..row.clone()
                })
            })
            .collect();
        Some(out)
    }

    /// The report as pretty-printed JSON.
    pub fn to_json(&self) -> String {
        // A Report holds only strings, numbers and JSON values: encoding cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// Writes the report as pretty-printed JSON to `path`.
    pub fn write_json(&self, path: impl AsRef<Path>) -> Result<(), ReportError> {
        let path = path.as_ref();
        let mut text = serde_json::to_string_pretty(self).map_err(|source| ReportError::Json {
            path: path.into(),
            source,
        })?;
        text.push('\n');
        std::fs::write(path, text).map_err(|source| ReportError::Io {
            path: path.into(),
            source,
        })
    }

    /// Reads a report written by [`Report::write_json`] (or the C MPI ping-pong).
    pub fn read_json(path: impl AsRef<Path>) -> Result<Report, ReportError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io {
            path: path.into(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ReportError::Json {
            path: path.into(),
            source,
        })
    }

    /// The report as CSV: a [`CSV_HEADER`] line, then one row per size.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(CSV_HEADER);
        out.push('\n');
        let (bench, transport) = (csv_field(&self.bench), csv_field(&self.transport));
        for r in &self.results {
            let _ = writeln!(
                out,
                "{bench},{transport},{},{},{},{},{},{},{},{}",
                r.size, r.iters, r.min_us, r.avg_us, r.median_us, r.max_us, r.stddev_us, r.mb_per_s
            );
        }
        out
    }

    /// Writes the report as CSV (see [`Report::to_csv`]) to `path`.
    pub fn write_csv(&self, path: impl AsRef<Path>) -> Result<(), ReportError> {
        let path = path.as_ref();
        let io = |source| ReportError::Io {
            path: path.into(),
            source,
        };
        let mut f = std::fs::File::create(path).map_err(io)?;
        f.write_all(self.to_csv().as_bytes()).map_err(io)
    }

    /// A table for people and scripts alike: `#` lines say what was run and what each
    /// column is, then one row of plain numbers per size (units in the column names).
    pub fn to_table(&self) -> String {
        let mut out = format!(
            "# {} over {}, {} ranks, host {}, {}{}\n",
            self.bench,
            self.transport,
            self.ranks,
            self.host,
            self.timestamp,
            self.git
                .as_deref()
                .map(|g| format!(", git {g}"))
                .unwrap_or_default()
        );
        if let Some(w) = &self.waiting {
            let _ = writeln!(out, "# ranks waiting by: {w}");
        }
        out.push_str(TABLE_LEGEND);
        let _ = writeln!(
            out,
            "#{:>11} {:>8} {:>11} {:>11} {:>11} {:>11} {:>11}",
            "size_B", "iters", "median_us", "min_us", "max_us", "stddev_us", "mb_per_s"
        );
        for r in &self.results {
            let _ = writeln!(
                out,
                "{:>12} {:>8} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>11.2}",
                r.size, r.iters, r.median_us, r.min_us, r.max_us, r.stddev_us, r.mb_per_s
            );
        }
        out
    }
}

/// The `#` lines under a table's heading that say what its columns are.
pub const TABLE_LEGEND: &str = "\
# time = µs per sample (ping-pong: half round trip; rma: one operation; 9p: one message)
# median_us min_us max_us stddev_us: of the time over `iters` samples; \
mb_per_s = size_B / median_us (MB = 10^6 B)
";

/// A size with binary units when exact: `8 B`, `4 KiB`, `8 MiB`, `2000000 B`.
pub fn fmt_size(size: usize) -> String {
    const UNITS: [(usize, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (scale, unit) in UNITS {
        if size >= scale && size / scale * scale == size {
            return format!("{} {unit}", size / scale);
        }
    }
    format!("{size} B")
}

/// Quotes a CSV field when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// This machine's host name (`/proc/sys/kernel/hostname`, then `$HOSTNAME`), or `"unknown"`.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}

/// `t` as RFC 3339 in UTC with whole seconds, e.g. `2025-01-01T12:00:00Z`.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn sample() -> Report {
        let results = vec![
            SizeResult::from_samples(8, &[0.2, 0.3, 0.25]).unwrap(),
            SizeResult::from_samples(4096, &[1.0, 2.0, 3.0, 4.0]).unwrap(),
            SizeResult::from_samples(2_000_000, &[200.0]).unwrap(),
        ];
        let mut r = Report::new("pingpong", "shm", 2, results);
        r.host = "node1".into();
        r.timestamp = "2025-01-01T12:00:00Z".into();
        r.params.insert("iters".into(), 1000usize.into());
        r.params.insert("warmup".into(), 100usize.into());
        r
    }

    #[test]
    fn size_result_rate() {
        let r = SizeResult::from_samples(8, &[0.2, 0.3, 0.25]).unwrap();
        assert_eq!(r.iters, 3);
        assert!((r.avg_us - 0.25).abs() < 1e-12);
        assert!((r.median_us - 0.25).abs() < 1e-12);
        // 8 B in 0.25 µs (the median) = 32 MB/s.
        assert!((r.mb_per_s - 32.0).abs() < 1e-9);
        assert_eq!(SizeResult::from_samples(8, &[]), None);
    }

    #[test]
    fn json_shape() {
        let mut r = sample();
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        // No git / poll_empty_ns when unknown.
        for k in [
            "bench",
            "transport",
            "ranks",
            "host",
            "timestamp",
            "params",
            "results",
        ] {
            assert!(keys.contains(&k), "missing {k}");
        }
        assert!(!keys.contains(&"git") && !keys.contains(&"poll_empty_ns"));
        assert_eq!(v["params"]["iters"], 1000);
        let row = v["results"][0].as_object().unwrap();
        let cols: Vec<&str> = row.keys().map(String::as_str).collect();
        for k in [
            "size",
            "iters",
            "min_us",
            "avg_us",
            "median_us",
            "max_us",
            "stddev_us",
            "mb_per_s",
        ] {
            assert!(cols.contains(&k), "missing {k}");
        }
        r.git = Some("abc1234".into());
        r.poll_empty_ns = Some(12.5);
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert_eq!(v["git"], "abc1234");
        assert_eq!(v["poll_empty_ns"], 12.5);
    }

    #[test]
    fn json_round_trip_through_file() {
        let mut r = sample();
        r.git = Some("abc".into());
        let dir = std::env::temp_dir().join(format!("nf-bench-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("r.json");
        r.write_json(&p).unwrap();
        assert_eq!(Report::read_json(&p).unwrap(), r);
        let csv = dir.join("r.csv");
        r.write_csv(&csv).unwrap();
        assert_eq!(std::fs::read_to_string(&csv).unwrap(), r.to_csv());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn errors_name_the_path() {
        let e = sample().write_json("/nonexistent-dir/x.json").unwrap_err();
        assert!(e.to_string().contains("/nonexistent-dir/x.json"), "{e}");
        let e = Report::read_json("/nonexistent-dir/y.json").unwrap_err();
        assert!(e.to_string().contains("/nonexistent-dir/y.json"), "{e}");
    }

    #[test]
    fn reads_the_c_pingpong_output() {
        // As written by bench/mpi/pingpong.c: no poll_empty_ns, extra string param.
        let text = r#"{
  "bench": "pingpong", "transport": "openmpi-ob1-vader", "ranks": 2, "host": "vm",
  "timestamp": "2026-01-01T00:00:00Z", "git": "abc-dirty",
  "params": { "iters": 1000, "warmup": 100, "mpi_library": "Open MPI v4.1.4" },
  "results": [
    { "size": 8, "iters": 1000, "min_us": 0.13, "avg_us": 0.1755255, "median_us": 0.17,
      "max_us": 0.4105, "stddev_us": 0.0294434461, "mb_per_s": 45.5774232 } ] }"#;
        let r: Report = serde_json::from_str(text).unwrap();
        assert_eq!(r.transport, "openmpi-ob1-vader");
        assert_eq!(r.git.as_deref(), Some("abc-dirty"));
        assert_eq!(r.poll_empty_ns, None);
        assert_eq!(r.params["mpi_library"], "Open MPI v4.1.4");
        assert_eq!(r.results[0].size, 8);
        assert_eq!(r.results[0].median_us, 0.17);
    }

    #[test]
    fn csv_rows() {
        let mut r = sample();
        r.transport = "a,b".into();
        let csv = r.to_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        assert_eq!(lines.len(), 4);
        assert!(
            lines[1].starts_with("pingpong,\"a,b\",8,3,0.2,"),
            "{}",
            lines[1]
        );
        assert!(
            lines[3].starts_with("pingpong,\"a,b\",2000000,1,200,200,200,200,0,10000"),
            "{}",
            lines[3]
        );
    }

    #[test]
    fn table() {
        let t = sample().to_table();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 7, "{t}");
        assert!(lines[0].starts_with("# pingpong over shm, 2 ranks, host node1"));
        assert!(lines[1..4].iter().all(|l| l.starts_with('#')), "{t}");
        let rows: Vec<Vec<f64>> = lines[4..]
            .iter()
            .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
            .collect();
        // 8 B: samples 0.2, 0.25, 0.3: median 0.25, 8 / 0.25 = 32 MB/s.
        assert_eq!(rows[0], [8.0, 3.0, 0.25, 0.2, 0.3, 0.05, 32.0]);
        // 4 KiB: samples 1, 2, 3, 4: median 2.5, 4096 / 2.5 = 1638.4 MB/s (the mean
        // would be 2.5 too; the 16 KiB case below tells them apart).
        assert_eq!(rows[1][..3], [4096.0, 4.0, 2.5]);
        assert_eq!(rows[1][6], 1638.4);
        assert_eq!(rows[2][0], 2_000_000.0);
        // Columns line up under the header.
        let w = lines[3].chars().count();
        assert!(lines[4..].iter().all(|l| l.chars().count() == w), "{t}");
    }

    #[test]
    fn bandwidth_is_size_over_the_median_not_the_mean() {
        // 16 KiB with one slow sample: median 2.75 µs, mean 25.75 µs.
        let r = SizeResult::from_samples(16_384, &[2.0, 2.5, 3.0, 95.5]).unwrap();
        assert_eq!(r.median_us, 2.75);
        assert_eq!(r.avg_us, 25.75);
        assert!(
            (r.mb_per_s - 16_384.0 / 2.75).abs() < 1e-9,
            "{}",
            r.mb_per_s
        );
    }

    #[test]
    fn merged_reports_are_one_object_with_cased_rows() {
        let (mut a, mut b) = (sample(), sample());
        a.bench = "rma-put-contig".into();
        b.bench = "rma-get-contig".into();
        let m = Report::merged("rma", &[a, b]).unwrap();
        assert_eq!(m.bench, "rma");
        assert_eq!(m.results.len(), 6);
        assert_eq!(m.results[0].case.as_deref(), Some("rma-put-contig"));
        assert_eq!(m.results[5].case.as_deref(), Some("rma-get-contig"));
        let v: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
        assert!(v.is_object() && v["results"][3]["case"] == "rma-get-contig");
        assert!(Report::merged("rma", &[]).is_none());
    }

    #[test]
    fn sizes() {
        assert_eq!(fmt_size(8), "8 B");
        assert_eq!(fmt_size(1000), "1000 B");
        assert_eq!(fmt_size(4096), "4 KiB");
        assert_eq!(fmt_size(3 << 10), "3 KiB");
        assert_eq!(fmt_size(8 << 20), "8 MiB");
        assert_eq!(fmt_size(1 << 30), "1 GiB");
        assert_eq!(fmt_size(2_000_000), "2000000 B");
    }

    #[test]
    fn timestamps() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29T23:59:59Z (leap day).
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(951_868_799)),
            "2000-02-29T23:59:59Z"
        );
        // 2024-12-31T12:34:56Z.
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(1_735_648_496)),
            "2024-12-31T12:34:56Z"
        );
    }
}
