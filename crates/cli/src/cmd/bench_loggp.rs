//! `nf bench loggp`: the LogGP parameters of the route between ranks 0 and 1 with
//! their intervals, the model's ping-pong drawn over the measured one, or a refusal
//! when the measurements do not support a fit (`nf_bench::loggp`).

use anyhow::Context;
use clap::Args;
use nf_bench::loggp::{self, Estimate, Model, Params, Point};
use nf_bench::report::{Report, SizeResult};
use nf_core::World;

/// Arguments of `nf bench loggp`.
#[derive(Args)]
pub struct LoggpArgs {
    /// Message sizes in bytes, comma-separated, at least three different ones. The
    /// default stays where a stream fits in shm's frames (128 of 16 KiB): beyond, g(m)
    /// times waits for credit, is no longer a line in m, and the fit is refused.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = super::bench::size_bytes,
        default_value = "8,64,512,4096,16384,65536"
    )]
    pub sizes: Vec<usize>,
    /// Timed round trips per size over all rounds (fewer above 64 KiB, at least 20,
    /// as `nf bench pingpong` counts them).
    #[arg(long, default_value_t = 10_000)]
    pub iters: usize,
    /// Untimed round trips before each size in each round (at most the size's
    /// timed round trips).
    #[arg(long, default_value_t = 1_000)]
    pub warmup: usize,
    /// Interleaved passes over the sizes; the intervals resample them.
    #[arg(long, default_value_t = 10)]
    pub rounds: usize,
    /// Messages per stream for the gap g(m), at least 2.
    #[arg(long, default_value_t = 16)]
    pub stream: usize,
    /// Where the report goes (`--plot`: measured and model ping-pong).
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

/// Runs the measurement (starting 2 ranks when run by hand).
pub fn run(a: LoggpArgs) -> anyhow::Result<i32> {
    // In any order; the same size twice is refused (Params::check).
    let mut sizes = a.sizes.clone();
    sizes.sort_unstable();
    let params = Params {
        sizes,
        iters: a.iters,
        warmup: a.warmup,
        rounds: a.rounds,
        stream: a.stream,
    };
    params.check()?;
    a.out.check()?;
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(2);
    }
    let world = World::init().context("joining the job")?;
    let measured = loggp::run(&world, &params)?;
    let transport = world.route(1).map_or("none", |r| r.name());
    // Every rank leaves the job before rank 0 reports a refusal.
    world.finalize()?;
    let Some(measured) = measured else {
        return Ok(0);
    };
    let (model, points) = loggp::fit(&measured).map_err(|why| {
        println!("# loggp: rank 0 -> rank 1 over {transport}; measured medians, no model");
        println!("#     size_B        T_us      o_s_us      o_r_us        g_us");
        for (s, r) in measured.iter().zip(loggp::fit::medians(&measured)) {
            println!(
                "{:>12} {:>11.3} {:>11.3} {:>11.3} {:>11.3}",
                s.size, r.t_us, r.o_s_us, r.o_r_us, r.g_us
            );
        }
        let load = std::fs::read_to_string("/proc/loadavg")
            .map(|l| l.split_whitespace().next().unwrap_or("?").to_owned())
            .unwrap_or_else(|_| "?".into());
        anyhow::anyhow!(
            "nf bench loggp: no LogGP parameters from this run: {why}. Rerun with more \
             --iters or --rounds on a quieter machine (load average now {load}, {} cores)",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        )
    })?;
    print_text(transport, &model, &points);
    a.out.write(
        &serde_json::json!({
            "bench": "loggp",
            "transport": transport,
            "params": params,
            "model": model,
            "points": points,
        }),
        true,
        || csv(&points),
    )?;
    if let Some(path) = &a.out.plot {
        let curve = |f: fn(&Point) -> f64| {
            points
                .iter()
                .filter_map(|p| SizeResult::from_samples(p.size, &[f(p)]))
                .collect::<Vec<_>>()
        };
        let measured = Report::new("loggp", transport, 2, curve(|p| p.t_us));
        let modelled = Report::new("loggp", transport, 2, curve(|p| p.t_model_us));
        nf_bench::plot::plot_pingpong(
            &[("measured", &measured), ("LogGP model", &modelled)],
            path,
        )?;
    }
    Ok(0)
}

/// The parameters with their intervals, then the points.
fn print_text(transport: &str, m: &Model, points: &[Point]) {
    println!(
        "# loggp: rank 0 -> rank 1 over {transport}; 95 % intervals from {} rounds",
        m.rounds
    );
    let line = |name: &str, e: &Estimate, prec: usize| {
        println!(
            "{name:<14} {:>10.prec$}  [{:.prec$}, {:.prec$}]",
            e.value, e.lo, e.hi
        )
    };
    line("L_us", &m.l_us, 4);
    line(&format!("o_s_us@{}B", m.m0), &m.o_s_us, 4);
    line(&format!("o_r_us@{}B", m.m0), &m.o_r_us, 4);
    line("g_us", &m.g_us, 4);
    let g = &m.big_g_us_per_byte;
    println!(
        "{:<14} {:>10.3e}  [{:.3e}, {:.3e}]",
        "G_us_per_byte", g.value, g.lo, g.hi
    );
    // 1/G falls as G rises: the interval's ends swap.
    println!(
        "{:<14} {:>10.1}  [{:.1}, {:.1}]",
        "G_mb_per_s",
        Model::mb_per_s(g.value),
        Model::mb_per_s(g.hi),
        Model::mb_per_s(g.lo)
    );
    println!("{:<14} {:>10.3}", "gap_fit_rel_rms", m.gap_fit_rel_rms);
    println!(
        "#     size_B        T_us      o_s_us      o_r_us        g_us   T_model_us  residual_us"
    );
    for p in points {
        println!(
            "{:>12} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>12.3} {:>12.3}",
            p.size, p.t_us, p.o_s_us, p.o_r_us, p.g_us, p.t_model_us, p.residual_us
        );
    }
}

/// The points as CSV.
fn csv(points: &[Point]) -> String {
    let mut s = String::from("size_B,t_us,o_s_us,o_r_us,g_us,t_model_us,residual_us\n");
    for p in points {
        s += &format!(
            "{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4}\n",
            p.size, p.t_us, p.o_s_us, p.o_r_us, p.g_us, p.t_model_us, p.residual_us
        );
    }
    s
}
