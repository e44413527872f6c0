//! `nf bench loggp`: the LogGP parameters of the route between ranks 0 and 1, the fit's
//! residuals, and the model's ping-pong drawn over the measured one (`nf_bench::loggp`).

use anyhow::Context;
use clap::Args;
use nf_bench::loggp::{self, Params};
use nf_bench::params::{check_iters, ParamError};
use nf_bench::report::{Report, SizeResult};
use nf_core::World;

/// Arguments of `nf bench loggp`.
#[derive(Args)]
pub struct LoggpArgs {
    /// Message sizes in bytes, comma-separated, at least two.
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = super::bench::size_bytes,
        default_value = "8,64,512,4096,32768,262144,1048576"
    )]
    pub sizes: Vec<usize>,
    /// Repetitions per size and measurement.
    #[arg(long, default_value_t = 200)]
    pub iters: usize,
    /// Messages per stream for the gap g(m).
    #[arg(long, default_value_t = 50)]
    pub stream: usize,
    /// Where the report goes (`--plot`: measured and model ping-pong).
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

/// Runs the measurement (starting 2 ranks when run by hand).
pub fn run(a: LoggpArgs) -> anyhow::Result<i32> {
    let mut sizes = a.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.len() < 2 {
        let given = a.sizes.iter().map(usize::to_string).collect::<Vec<_>>();
        let why = "give at least two different sizes (G is a slope)";
        return Err(ParamError::new("sizes", given.join(","), why).into());
    }
    check_iters(a.iters)?;
    if a.stream == 0 {
        return Err(ParamError::new("stream", 0, "at least 1 message per stream").into());
    }
    a.out.check()?;
    if !super::run::under_launcher()? {
        return super::run::relaunch_self(2);
    }
    let world = World::init().context("joining the job")?;
    let params = Params {
        sizes,
        iters: a.iters,
        stream: a.stream,
    };
    let result = loggp::run(&world, &params)?;
    if let Some((model, points)) = result {
        let transport = world.route(1).map_or("none", |r| r.name());
        println!("# loggp: rank 0 -> rank 1 over {transport}");
        println!(
            "L_us {:.4}\no_s_us {:.4}\no_r_us {:.4}\ng_us {:.4}\nG_us_per_byte {:.3e}\nG_mb_per_s {:.1}\ngap_fit_rms_us {:.4}",
            model.l_us,
            model.o_s_us,
            model.o_r_us,
            model.g_us,
            model.big_g_us_per_byte,
            model.mb_per_s(),
            model.gap_fit_rms_us
        );
        println!("#     size_B        T_us      o_s_us      o_r_us        g_us   T_model_us  residual_us");
        for p in &points {
            println!(
                "{:>12} {:>11.3} {:>11.3} {:>11.3} {:>11.3} {:>12.3} {:>12.3}",
                p.size, p.t_us, p.o_s_us, p.o_r_us, p.g_us, p.t_model_us, p.residual_us
            );
        }
        if let Some(path) = &a.out.json {
            let v = serde_json::json!({
                "bench": "loggp",
                "command": super::bench::command_line(),
                "transport": transport,
                "params": params,
                "model": model,
                "points": points,
            });
            std::fs::write(path, serde_json::to_string_pretty(&v)? + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
        }
        if let Some(path) = &a.out.csv {
            let mut s = String::from("size_B,t_us,o_s_us,o_r_us,g_us,t_model_us,residual_us\n");
            for p in &points {
                s += &format!(
                    "{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4}\n",
                    p.size, p.t_us, p.o_s_us, p.o_r_us, p.g_us, p.t_model_us, p.residual_us
                );
            }
            std::fs::write(path, s).with_context(|| format!("writing {}", path.display()))?;
        }
        if let Some(path) = &a.out.plot {
            let curve = |f: fn(&loggp::Point) -> f64| {
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
    }
    world.finalize()?;
    Ok(0)
}
