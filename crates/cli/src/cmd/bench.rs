//! `nf bench …`: benchmarks whose reports are JSON / CSV / PNG.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use nf_bench::params::{check_writable, ParamError};
use nf_bench::pingpong::{self, Measured, Params};
use nf_bench::report::{Report, SizeResult};
use nf_core::World;

use super::progress::{Mode, Progress};

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Half round trip and bandwidth between ranks 0 and 1 (runs 2 ranks if started by hand).
    Pingpong(PingpongArgs),
    /// Plot ping-pong reports (JSON, ours or the MPI ping-pong's) on one figure.
    Plot(PlotArgs),
    /// One-sided put / get / accumulate between ranks 0 and 1 (runs 2 ranks if
    /// started by hand), contiguous and 2-D strided.
    Rma(super::bench_rma::RmaArgs),
    /// OpenSHMEM through libshmem: put / get / fetch-add / put-with-signal latency,
    /// put bandwidth, barrier, broadcast and reduce (a C program on the standard
    /// shmem.h, compiled here and run under nf run -n 2; --parse reads another
    /// implementation's run of it).
    Shmem(super::bench_shmem::ShmemArgs),
    /// HPCC's b_eff: ping-pong over every pair of ranks (min / avg / max, a heat
    /// map), natural- and random-ring latency and bandwidth (runs 4 ranks by hand).
    Rings(super::bench_rings::RingsArgs),
    /// The LogGP parameters (L, o_s, o_r, g, G) of the route from rank 0 to rank 1,
    /// the fit's residuals, and the model's ping-pong over the measured one.
    Loggp(super::bench_loggp::LoggpArgs),
    /// Variability over time: repeats a benchmark every interval for a duration,
    /// keeps every sample, reports median / p99 / p99.9 / max / CV per repetition and
    /// overall, and tests whether the run differs from an earlier one.
    Watch(super::bench_watch::WatchArgs),
    /// The application probe: a distributed matrix multiply over global memory,
    /// GFLOP/s and parallel efficiency from 1 rank up; blocks read by one-sided gets,
    /// through the node's /mem files, or both (runs 2 ranks by hand).
    App(super::bench_app::AppArgs),
    /// One self-contained HTML page (tables, the PNGs embedded, machine facts, the
    /// command line of each report) from every JSON and PNG in a directory.
    Report(ReportArgs),
    /// 9P file service: walk/open/read 1 B/clunk rate and streaming read / write at
    /// msize 8 KiB … 1 MiB, `nf serve` against diod in the same run.
    #[command(name = "9p")]
    Ninep(Box<super::bench_9p::NinepArgs>),
}

/// Arguments of `nf bench report`.
#[derive(Args)]
pub struct ReportArgs {
    /// The directory of reports (JSON) and figures (PNG).
    pub dir: PathBuf,
    /// The page to write [default: DIR/report.html].
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn report(a: ReportArgs) -> anyhow::Result<i32> {
    let out = a.out.unwrap_or_else(|| a.dir.join("report.html"));
    let html = nf_bench::html::page(&a.dir, &nf_bench::html::machine_facts())?;
    std::fs::write(&out, html).with_context(|| format!("writing {}", out.display()))?;
    println!("wrote {}", out.display());
    Ok(0)
}

/// Arguments of `nf bench plot`.
#[derive(Args)]
pub struct PlotArgs {
    /// Output PNG.
    #[arg(long)]
    pub out: PathBuf,
    /// Reports to plot; each is labelled by its `params.label`, else its transport.
    #[arg(required = true)]
    pub reports: Vec<PathBuf>,
}

/// Arguments of `nf bench pingpong`.
#[derive(Args)]
pub struct PingpongArgs {
    /// Message sizes in bytes, comma-separated (default: 8 B … 8 MiB and 2000000).
    #[arg(long, value_delimiter = ',', value_parser = size_bytes)]
    pub sizes: Option<Vec<usize>>,
    /// Timed round trips for sizes up to 64 KiB (fewer above, at least 20).
    #[arg(long, default_value_t = 10_000)]
    pub iters: usize,
    /// Untimed round trips before each size.
    #[arg(long, default_value_t = 1_000)]
    pub warmup: usize,
    /// Where the report goes.
    #[command(flatten)]
    pub out: Outputs,
}

/// One value of a benchmark's `--sizes` list: a message size in bytes, at least 1
/// (every benchmark's list is parsed by this, so each refuses the same values).
pub fn size_bytes(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("a message size is at least 1 byte".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("not a size in bytes (comma-separated whole numbers, e.g. 8,4096)".into()),
    }
}

/// Where a benchmark writes its reports (besides the table on stdout).
#[derive(Args)]
pub struct Outputs {
    /// Write the report as JSON here (one object; a run of several cases tags each
    /// row with its `case`).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the report as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Plot latency and bandwidth against size into this PNG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// No progress on stderr (otherwise a bar on a terminal, a line per step elsewhere).
    #[arg(short, long)]
    pub quiet: bool,
}

impl Outputs {
    /// Writes `report` to `--json` (with the command line that made it, `command`;
    /// `pretty`: indented) and `csv()` to `--csv`, where given.
    pub fn write<T: serde::Serialize>(
        &self,
        report: &T,
        pretty: bool,
        csv: impl FnOnce() -> String,
    ) -> anyhow::Result<()> {
        if let Some(p) = &self.json {
            let mut v = serde_json::to_value(report).context("encoding the report")?;
            v["command"] = command_line().into();
            let text = if pretty {
                serde_json::to_string_pretty(&v)?
            } else {
                serde_json::to_string(&v)?
            };
            std::fs::write(p, text + "\n").with_context(|| format!("writing {}", p.display()))?;
        }
        if let Some(p) = &self.csv {
            std::fs::write(p, csv()).with_context(|| format!("writing {}", p.display()))?;
        }
        Ok(())
    }

    /// Writes the reports of a run of several cases (one per operation, …): one JSON
    /// object (a single case as it is, several merged as `name` with each row naming
    /// its case), one CSV (one header), and one plot of every case.
    pub fn write_cases(
        &self,
        name: &str,
        reports: &[Report],
        text: &nf_bench::plot::PlotText,
    ) -> anyhow::Result<()> {
        if let Some(p) = &self.json {
            let report = match reports {
                [one] => one.clone(),
                many => Report::merged(name, many).context("no cases measured")?,
            };
            report.write_json(p)?;
        }
        if let Some(p) = &self.csv {
            let mut text = String::new();
            for (i, r) in reports.iter().enumerate() {
                let csv = r.to_csv();
                let body = if i == 0 {
                    &csv[..]
                } else {
                    csv.split_once('\n').map_or("", |x| x.1)
                };
                text.push_str(body);
            }
            std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
        }
        if let Some(p) = &self.plot {
            let labels: Vec<String> = reports.iter().map(|r| r.bench.clone()).collect();
            let pairs: Vec<(&str, &Report)> =
                labels.iter().map(String::as_str).zip(reports).collect();
            nf_bench::plot::plot_reports(&pairs, p, text)?;
        }
        Ok(())
    }

    /// That every report path given can be written, before anything is measured.
    pub fn check(&self) -> Result<(), ParamError> {
        for (arg, path) in [
            ("json", &self.json),
            ("csv", &self.csv),
            ("plot", &self.plot),
        ] {
            if let Some(p) = path {
                check_writable(arg, p)?;
            }
        }
        Ok(())
    }
}

/// Dispatches a bench subcommand.
pub fn main(cmd: BenchCommand) -> anyhow::Result<i32> {
    match cmd {
        BenchCommand::Pingpong(a) => run_pingpong(a),
        BenchCommand::Plot(a) => plot(a),
        BenchCommand::Rma(a) => super::bench_rma::run(a),
        BenchCommand::Shmem(a) => super::bench_shmem::run(a),
        BenchCommand::Rings(a) => super::bench_rings::run(a),
        BenchCommand::Loggp(a) => super::bench_loggp::run(a),
        BenchCommand::Watch(a) => super::bench_watch::run(a),
        BenchCommand::App(a) => super::bench_app::run(a),
        BenchCommand::Report(a) => report(a),
        BenchCommand::Ninep(a) => super::bench_9p::main(*a),
    }
}

fn plot(a: PlotArgs) -> anyhow::Result<i32> {
    let reports = a
        .reports
        .iter()
        .map(Report::read_json)
        .collect::<Result<Vec<_>, _>>()?;
    let labels: Vec<String> = reports
        .iter()
        .map(|r| {
            r.params
                .get("label")
                .and_then(|l| l.as_str())
                .unwrap_or(&r.transport)
                .to_owned()
        })
        .collect();
    let pairs: Vec<(&str, &Report)> = labels.iter().map(String::as_str).zip(&reports).collect();
    nf_bench::plot::plot_pingpong(&pairs, &a.out)?;
    println!("wrote {}", a.out.display());
    Ok(0)
}

fn run_pingpong(a: PingpongArgs) -> anyhow::Result<i32> {
    let params = Params {
        sizes: a.sizes.clone().unwrap_or_else(pingpong::default_sizes),
        iters: a.iters,
        warmup: a.warmup,
    };
    params.check()?;
    a.out.check()?;
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(2);
    }
    let world = World::init().context("joining the job")?;
    let mut progress = (world.rank() == 0).then(|| {
        Progress::new(
            "pingpong",
            params.sizes.len() as u64,
            Mode::detect(a.out.quiet),
        )
    });
    let measured = pingpong::run(&world, &params, |size| {
        if let Some(p) = &mut progress {
            p.step(&format!("{size} B"));
        }
    })?;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(m) = measured {
        let report = report_of(&m, &world, &params);
        print!("{}", report.to_table());
        println!("# empty_poll_ns {:.1}", m.poll_empty_ns);
        if let Some(p) = &a.out.json {
            report.write_json(p)?;
        }
        if let Some(p) = &a.out.csv {
            report.write_csv(p)?;
        }
        if let Some(p) = &a.out.plot {
            let label = format!("ninefold {}", report.transport);
            nf_bench::plot::plot_pingpong(&[(label.as_str(), &report)], p)?;
        }
    }
    world.finalize()?;
    Ok(0)
}

/// The transport rank 0 uses to reach rank 1 (what the ping-pong measured).
fn transport_to_rank_1(world: &World) -> &'static str {
    world.route(1).map_or("none", |r| r.name())
}

/// How `world`'s ranks wait for messages, as reports name it.
pub fn waiting(world: &World) -> &'static str {
    if world.busy_polls() {
        "busy-poll"
    } else {
        "yield"
    }
}

/// Turns rank 0's samples into a report.
pub fn report_of(m: &Measured, world: &World, p: &Params) -> Report {
    let results = m
        .sizes
        .iter()
        .filter_map(|s| SizeResult::from_samples(s.size, &s.half_rtt_us))
        .collect();
    let mut report = Report::new(
        "pingpong",
        transport_to_rank_1(world),
        world.size(),
        results,
    );
    report.poll_empty_ns = Some(m.poll_empty_ns);
    report.waiting = Some(waiting(world).into());
    report.params.insert("iters".into(), p.iters.into());
    report.params.insert("warmup".into(), p.warmup.into());
    report
        .params
        .insert("command".into(), command_line().into());
    report
}

/// This process's command line as a user would type it (`nf bench …`, quoted for a
/// shell), for the reports' `command`: `nf bench report` shows how to reproduce them.
pub fn command_line() -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    format!("nf {}", shell_words::join(&args))
}
