//! `nf`: the ninefold command line — thin commands over the libraries.
//!
//! Rank-side commands (`demo`, `bench pingpong`) started outside a launcher start
//! themselves under the local launcher, so `nf demo` alone runs a whole job.

mod cmd;

use clap::{Parser, Subcommand};

/// ninefold: one runtime for every transport of a cluster.
#[derive(Parser)]
#[command(name = "nf", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start N ranks of a program on this host.
    Run(cmd::run::RunArgs),
    /// Demo job: ranks exchange active messages, run collectives, then ping-pong.
    Demo(cmd::demo::DemoArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// Measure this host's protocol thresholds and cache them.
    Tune(cmd::tune::TuneArgs),
    /// Serve this node's file tree over 9P2000.L (status, log, pipes, exports).
    Serve(cmd::serve::ServeArgs),
}

fn main() {
    let cli = Cli::parse();
    if matches!(cli.command, Command::Serve(_)) {
        cmd::serve::init_tracing();
    } else {
        tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_env("NF_LOG")
                    .unwrap_or_else(|_| "warn".into()),
            )
            .with_writer(std::io::stderr)
            .init();
    }
    let result = match cli.command {
        Command::Run(a) => cmd::run::main(a),
        Command::Demo(a) => cmd::demo::main(a),
        Command::Bench(b) => cmd::bench::main(b),
        Command::Tune(a) => cmd::tune::main(a),
        Command::Serve(a) => cmd::serve::main(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("nf: error: {e:#}");
            std::process::exit(2);
        }
    }
}
