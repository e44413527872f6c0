//! `nf bench shmem`'s reports from the output of the OpenSHMEM benchmark program
//! (`crates/shmem/bench/shmem_bench.c`, which builds against any `shmem.h`: ninefold's
//! libshmem or Open MPI's OSHMEM).
//!
//! The program prints, on PE 0 only:
//!
//! | line | meaning |
//! |---|---|
//! | `# shmem_bench pes N spec 1.5 vendor NAME` | the job; first line |
//! | `R OP SIZE ITERS S1 S2 …` | one size of operation OP: ITERS timed operations in batches, `Si` the µs per operation of batch i |
//! | `# skip OP: WHY` | an operation this implementation cannot run |
//! | `# done` | every operation measured; last line before `shmem_finalize` |
//!
//! Rules:
//! 1. A run is complete when `# done` was printed, whatever happened after it (Open
//!    MPI's OSHMEM dies in `shmem_finalize`: its figures are whole and are kept).
//! 2. Each operation becomes one report `shmem-<op>` whose rows summarise the batch
//!    samples ([`SizeResult::from_samples`]: the median batch, min, max, spread); the
//!    barrier, which moves no data, is size 0.
//! 3. Other lines (a launcher's or a library's messages) are ignored; a malformed `R`
//!    line is an error naming it.

use crate::report::{Report, SizeResult};

/// The operations of the program, in the order it runs them by default.
pub const OPS: [&str; 8] = [
    "put",
    "get",
    "fetch-add",
    "put-signal",
    "put-bw",
    "barrier",
    "broadcast",
    "reduce",
];

/// The words on `nf bench shmem`'s plot.
pub const PLOT_TEXT: crate::plot::PlotText = crate::plot::PlotText {
    title: "shmem",
    time_caption: "time per operation (median batch)",
    time_axis: "time per operation (µs)",
    rate_caption: "bandwidth (size / median time per operation)",
    x_axis: "transfer size",
};

/// The program's output did not parse.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// An `R` line is not `R OP SIZE ITERS S1 …` with numbers.
    #[error("line {line} of the benchmark's output is not `R OP SIZE ITERS SAMPLES…`: {text:?}")]
    BadRow {
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// The header line never came: the program did not start.
    #[error(
        "the benchmark printed no `# shmem_bench` header line: it did not start (see its \
         messages above)"
    )]
    NoHeader,
}

/// One operation's sizes, as the program measured them.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The operation (`put`, `fetch-add`, …).
    pub op: String,
    /// `(size, timed operations, µs per operation of each batch)`, in program order.
    pub sizes: Vec<(usize, usize, Vec<f64>)>,
}

/// Everything one run printed.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// PEs in the job.
    pub pes: usize,
    /// The OpenSHMEM version the library reports (`1.5`).
    pub spec: String,
    /// The library's vendor string.
    pub vendor: String,
    /// The operations measured, in the order printed.
    pub ops: Vec<Measured>,
    /// `# skip` lines: operations the implementation could not run, and why.
    pub skipped: Vec<String>,
    /// Whether `# done` came (rule 1).
    pub complete: bool,
}

/// Parses the program's output (rules 1 and 3).
pub fn parse(text: &str) -> Result<Run, ParseError> {
    let mut run: Option<Run> = None;
    for (i, line) in text.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["#", "shmem_bench", "pes", n, "spec", spec, "vendor", vendor @ ..] => {
                run = Some(Run {
                    pes: n.parse().unwrap_or(0),
                    spec: (*spec).to_owned(),
                    vendor: vendor.join(" "),
                    ops: Vec::new(),
                    skipped: Vec::new(),
                    complete: false,
                });
            }
            ["#", "done"] => {
                if let Some(r) = &mut run {
                    r.complete = true;
                }
            }
            ["#", "skip", ..] => {
                if let Some(r) = &mut run {
                    r.skipped
                        .push(line.trim_start_matches("# skip ").to_owned());
                }
            }
            ["R", op, size, iters, samples @ ..] => {
                let bad = || ParseError::BadRow {
                    line: i + 1,
                    text: line.to_owned(),
                };
                let r = run.as_mut().ok_or(ParseError::NoHeader)?;
                let size = size.parse().map_err(|_| bad())?;
                let iters = iters.parse().map_err(|_| bad())?;
                let samples = samples
                    .iter()
                    .map(|s| s.parse::<f64>().ok().filter(|v| v.is_finite()))
                    .collect::<Option<Vec<f64>>>()
                    .filter(|s| !s.is_empty())
                    .ok_or_else(bad)?;
                match r.ops.iter_mut().find(|m| m.op == *op) {
                    Some(m) => m.sizes.push((size, iters, samples)),
                    None => r.ops.push(Measured {
                        op: (*op).to_owned(),
                        sizes: vec![(size, iters, samples)],
                    }),
                }
            }
            _ => {}
        }
    }
    run.ok_or(ParseError::NoHeader)
}

impl Run {
    /// One report per operation (rule 2), `transport` naming the implementation.
    pub fn reports(&self, transport: &str) -> Vec<Report> {
        self.ops
            .iter()
            .map(|m| {
                let results = m
                    .sizes
                    .iter()
                    .filter_map(|(size, iters, s)| {
                        SizeResult::from_samples(*size, s).map(|mut r| {
                            r.iters = *iters;
                            r
                        })
                    })
                    .collect();
                let mut r = Report::new(&format!("shmem-{}", m.op), transport, self.pes, results);
                r.params.insert("op".into(), m.op.clone().into());
                r.params.insert("spec".into(), self.spec.clone().into());
                r.params.insert("vendor".into(), self.vendor.clone().into());
                r.params.insert("complete".into(), self.complete.into());
                r
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "\
noise from a launcher
# shmem_bench pes 2 spec 1.4 vendor Open MPI
R put 8 20 0.10 0.30 0.20
R put 16 20 0.5 0.5
# skip put-signal: needs OpenSHMEM 1.5 (this header is 1.4)
R barrier 0 10 1.0 2.0 3.0
# done
[host:1234] *** Process received signal ***
";

    #[test]
    fn rows_become_one_report_per_operation_with_the_median_batch() {
        let run = parse(OUT).unwrap();
        assert_eq!((run.pes, run.spec.as_str()), (2, "1.4"));
        assert_eq!(run.vendor, "Open MPI");
        assert!(run.complete, "# done came before the crash's lines");
        assert_eq!(run.skipped.len(), 1);
        let reports = run.reports("oshmem");
        let names: Vec<&str> = reports.iter().map(|r| r.bench.as_str()).collect();
        assert_eq!(names, ["shmem-put", "shmem-barrier"]);
        let put8 = &reports[0].results[0];
        assert_eq!((put8.size, put8.iters), (8, 20));
        assert!((put8.median_us - 0.20).abs() < 1e-9);
        assert!((put8.min_us - 0.10).abs() < 1e-9);
        assert_eq!(reports[1].results[0].size, 0);
        assert_eq!(reports[0].params["complete"], true);
    }

    #[test]
    fn a_run_cut_short_is_incomplete_and_a_bad_row_is_named() {
        let cut = OUT.split("# done").next().unwrap();
        assert!(!parse(cut).unwrap().complete);
        let err = parse("# shmem_bench pes 2 spec 1.5 vendor x\nR put 8 x 1.0\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(matches!(
            parse("R put 8 1 1.0\n"),
            Err(ParseError::NoHeader)
        ));
        assert!(matches!(parse(""), Err(ParseError::NoHeader)));
    }
}
