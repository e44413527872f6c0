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
    /// Serve this node's file tree over 9P2000.L (status, log, pipes, exports, rma memory).
    Serve(cmd::serve::ServeArgs),
    /// Make TLS certificates for remote 9P: a CA, a node's, a user's (CN = user).
    Cert(cmd::cert::CertArgs),
    /// List directories on a 9P server (ADDR:/path, or :/path for the local one).
    Ls(cmd::files::LsArgs),
    /// Show a file's attributes.
    Stat(cmd::files::PathsArgs),
    /// Print files (streams and pipes print as data comes).
    Cat(cmd::files::PathsArgs),
    /// Write text (or standard input) to a file, creating it if missing.
    Write(cmd::files::WriteArgs),
    /// Copy a file between this host and a server, either way.
    Cp(cmd::files::CpArgs),
    /// Print the last lines of a file; -f follows what is appended.
    Tail(cmd::files::TailArgs),
    /// Remove files or empty directories.
    Rm(cmd::files::PathsArgs),
    /// Make directories.
    Mkdir(cmd::files::PathsArgs),
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
        Command::Cert(a) => cmd::cert::main(a),
        Command::Ls(a) => cmd::files::ls(a),
        Command::Stat(a) => cmd::files::stat(a),
        Command::Cat(a) => cmd::files::cat(a),
        Command::Write(a) => cmd::files::write(a),
        Command::Cp(a) => cmd::files::cp(a),
        Command::Tail(a) => cmd::files::tail(a),
        Command::Rm(a) => cmd::files::rm(a),
        Command::Mkdir(a) => cmd::files::mkdir(a),
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("nf: error: {e:#}");
            std::process::exit(2);
        }
    }
}
