//! `nf bench rma`: one-sided put / get / accumulate between ranks 0 and 1.

use anyhow::Context;
use clap::Args;
use nf_bench::report::{Report, SizeResult};
use nf_bench::rma::{self, Layout, Measured, Op, Params};
use nf_core::World;
use nf_rma::{Rma, WorldWireup};

use super::progress::{Mode, Progress};

/// Arguments of `nf bench rma`.
#[derive(Args)]
pub struct RmaArgs {
    /// Operations, comma-separated: put (sender-timed), put-fence, get, acc (with fence).
    #[arg(long, value_delimiter = ',', default_value = "put,put-fence,get,acc")]
    pub ops: Vec<Op>,
    /// Layouts, comma-separated: contig, strided (2-D).
    #[arg(long, value_delimiter = ',', default_value = "contig,strided")]
    pub layouts: Vec<Layout>,
    /// Sizes in bytes, multiples of 8, comma-separated (default: 8 B … 4 MiB).
    #[arg(long, value_delimiter = ',', value_parser = super::bench::size_bytes)]
    pub sizes: Option<Vec<usize>>,
    /// Timed operations for sizes up to 64 KiB (fewer above, at least 20).
    #[arg(long, default_value_t = 2_000)]
    pub iters: usize,
    /// Untimed operations before each size.
    #[arg(long, default_value_t = 200)]
    pub warmup: usize,
    /// Label for the reports' `params.label` (e.g. what the run compares).
    #[arg(long)]
    pub label: Option<String>,
    /// Where the reports go.
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

/// How proc 0 reaches proc 1's memory, as reports name it.
pub fn route_name(rma: &Rma<'_>) -> &'static str {
    rma::route_name(rma.route(1))
}

/// Runs the benchmark (starting 2 ranks when run by hand).
pub fn run(a: RmaArgs) -> anyhow::Result<i32> {
    let params = Params {
        sizes: a.sizes.clone().unwrap_or_else(rma::default_sizes),
        iters: a.iters,
        warmup: a.warmup,
        ops: a.ops.clone(),
        layouts: a.layouts.clone(),
    };
    params.check()?;
    a.out.check()?;
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(2);
    }
    let world = World::init().context("joining the job")?;
    let wire = WorldWireup::new(&world).context("rma wire-up")?;
    let rma = Rma::new(&wire).context("joining the job's global memory")?;
    let path = route_name(&rma);
    let steps = params.ops.len() * params.layouts.len() * params.sizes.len();
    // Off a terminal, a line per case (operation × layout), after its sweep of sizes.
    let per_case = params.sizes.len() as u64;
    let mut progress = (rma.rank() == 0).then(|| {
        Progress::new("rma", steps as u64, Mode::detect(a.out.quiet)).lines_every(per_case)
    });
    let measured = rma::run(&rma, &params, |op, layout, size| {
        if let Some(p) = &mut progress {
            p.step(&format!("{} {} {size} B", op.name(), layout.name()));
        }
    })
    .context("measuring")?;
    if let Some(p) = progress {
        p.finish();
    }
    if let Some(m) = measured {
        let reports: Vec<Report> = m
            .iter()
            .map(|m| report_of(m, path, rma.size(), &params, a.label.as_deref()))
            .collect();
        for r in &reports {
            println!("== {} ({})", r.bench, r.transport);
            print!("{}", r.to_table());
        }
        a.out.write_cases("rma", &reports, &rma::PLOT_TEXT)?;
    }
    rma.finalize().context("leaving the job's global memory")?;
    world.finalize()?;
    Ok(0)
}

/// One (op, layout)'s samples as a report named `rma-<op>-<layout>`.
fn report_of(m: &Measured, path: &str, ranks: usize, p: &Params, label: Option<&str>) -> Report {
    let results = m
        .sizes
        .iter()
        .filter_map(|s| SizeResult::from_samples(s.size, &s.half_rtt_us))
        .collect();
    let bench = format!("rma-{}-{}", m.op.name(), m.layout.name());
    let mut r = Report::new(&bench, path, ranks, results);
    r.params.insert("iters".into(), p.iters.into());
    r.params.insert("warmup".into(), p.warmup.into());
    r.params.insert("op".into(), m.op.name().into());
    r.params.insert("layout".into(), m.layout.name().into());
    r.params
        .insert("command".into(), super::bench::command_line().into());
    if let Some(l) = label {
        r.params.insert("label".into(), l.into());
    }
    r
}
