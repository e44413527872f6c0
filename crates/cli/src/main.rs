//! `nf`: the ninefold command line — thin commands over the libraries.
//!
//! Rank-side commands (`demo`, `bench pingpong`) started outside a launcher start
//! themselves under the local launcher, so `nf demo` alone runs a whole job.

mod cmd;

use clap::{Parser, Subcommand};

/// What `nf --help` adds below the commands.
const AFTER_HELP: &str = "\
Exit status (every command):
  0  success
  1  a runtime or I/O error (a missing program, a lost connection, a rank that
     aborted the job)
  2  a usage error: bad arguments or NF_* settings, found before anything runs
     (a job's settings are checked once, by the nf that launches it)
  3  the 9P server answered with an error (no such file, permission denied, …)
  4  a timeout: nf run --timeout fired, or a server did not answer in time
  A job that ran and failed (nf run, a rank command started by hand, nf exec) exits
  with the failing rank's or program's own status, 128+N if signal N killed it;
  nf itself stopped by SIGINT or SIGTERM exits with 130 or 143.

Logging: NF_LOG (else RUST_LOG) takes tracing directives: warn (default), info, debug,
or target=level pairs such as nf_core=debug. `nf config` lists every setting.";

/// Exit status of a usage error (also what clap exits with).
const EXIT_USAGE: i32 = 2;
/// Exit status of an error the 9P server answered with.
const EXIT_REMOTE: i32 = 3;
/// Exit status of a timeout.
const EXIT_TIMEOUT: i32 = 4;
/// Exit status of any other failure.
const EXIT_FAILURE: i32 = 1;

/// The exit status `err` calls for (see [`AFTER_HELP`]), from the first cause in its
/// chain that says.
fn exit_code(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if cause.is::<cmd::Usage>()
            || cause.is::<nf_bench::params::ParamError>()
            || cause.is::<nf_link::addr::AddrError>()
            || cause
                .downcast_ref::<nf_launch::LaunchError>()
                .is_some_and(nf_launch::LaunchError::is_usage)
            || is_bad_setting(cause)
        {
            return EXIT_USAGE;
        }
        // A connection or copy error shows its client error transparently: look inside.
        let client = cause
            .downcast_ref::<nf_ninep_client::ClientError>()
            .or(
                match cause.downcast_ref::<nf_ninep_client::connect::ConnectError>() {
                    Some(nf_ninep_client::connect::ConnectError::Client(c)) => Some(c),
                    _ => None,
                },
            )
            .or(match cause.downcast_ref::<nf_ninep_client::CopyError>() {
                Some(nf_ninep_client::CopyError::Remote(c)) => Some(c),
                _ => None,
            });
        if let Some(c) = client {
            if c.errno().is_some() {
                return EXIT_REMOTE;
            }
            if matches!(c, nf_ninep_client::ClientError::TimedOut { .. }) {
                return EXIT_TIMEOUT;
            }
            // A connect that timed out shows its OS error in its message, not as a
            // cause of its own (so it is said once): look at it here.
            if matches!(c, nf_ninep_client::ClientError::Connect { error, .. }
                if error.kind() == std::io::ErrorKind::TimedOut)
            {
                return EXIT_TIMEOUT;
            }
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return EXIT_TIMEOUT;
            }
        }
    }
    EXIT_FAILURE
}

/// Whether `cause` is a setting (`NF_*`) the runtime refuses: what a rank reports when
/// no `nf` launcher checked its settings first (under mpirun or srun).
fn is_bad_setting(cause: &(dyn std::error::Error + 'static)) -> bool {
    use nf_core::CoreError;
    let core = |e: &CoreError| matches!(e, CoreError::Config { .. } | CoreError::ConfigWhy { .. });
    match (
        cause.downcast_ref::<CoreError>(),
        cause.downcast_ref::<nf_rma::RmaError>(),
    ) {
        (Some(e), _) | (_, Some(nf_rma::RmaError::Core(e))) => core(e),
        (_, Some(e)) => matches!(e, nf_rma::RmaError::Config { .. }),
        (None, None) => false,
    }
}

/// ninefold: one runtime for every transport of a cluster.
#[derive(Parser)]
#[command(name = "nf", version, about, after_long_help = AFTER_HELP)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start N ranks of a program on this host.
    ///
    /// Each rank gets NF_RANK, NF_SIZE and the launcher's PMI address; a program joins
    /// with nf_core::World::init(). With --hosts, ranks start on other hosts through
    /// each host's nf serve (/xcpu, with --cert/--key/--ca), or through --remote (e.g.
    /// 'ssh {host}'). If a rank fails, the others are stopped and nf run
    /// exits with that rank's status, naming it and the cause. Programs that link an
    /// MPI library are refused (use mpirun / mpiexec; --allow-mpi forces them).
    ///
    /// Example: nf run -n 4 --tag-output -- ./my_prog arg
    Run(cmd::run::RunArgs),
    /// Run this host's ranks of a job nf run started down the /xcpu tree (nf run starts it).
    #[command(name = "host-ranks", hide = true)]
    HostRanks(cmd::run::HostRanksArgs),
    /// Demo job: ranks exchange active messages, run collectives, then ping-pong.
    ///
    /// Run by hand it starts its own N-rank job; under nf run, mpirun, hydra or srun it
    /// is a rank of that job.
    Demo(cmd::demo::DemoArgs),
    /// Benchmarks.
    ///
    /// Every benchmark prints a table (plain numbers, units in column names, # lines
    /// saying what each column is; the statistic is the median) and can write JSON
    /// (one object per run), CSV and PNG. Run by hand, rank benchmarks start 2 ranks;
    /// under a launcher they join its job. Arguments and output paths are checked
    /// before anything starts.
    #[command(subcommand)]
    Bench(cmd::bench::BenchCommand),
    /// Measure this host's protocol thresholds and sizes and cache them.
    ///
    /// Runs 2-rank ping-pong jobs with each value of NF_SHM_FRAME_SIZE,
    /// NF_SHM_FAST_LIMIT, NF_TCP_HOT_US and NF_OFI_PACKET (the fastest wins unless the
    /// default is within 5%), and times frames against single copy for
    /// NF_RNDV_THRESHOLD; writes the choices to the tune cache (NF_TUNE_FILE), which
    /// those settings then default to. --check runs the defaults against the cache.
    Tune(cmd::tune::TuneArgs),
    /// Run a program on many nodes through their /xcpu (jobs as files).
    ///
    /// Uploads PROG (when it names a local file) and --file's into a session on every
    /// node's nf serve, starts it as your user there, forwards stdin (to rank 0 by
    /// default), prints output tagged by node, turns Ctrl-C into kill, and exits with
    /// the first non-zero status, naming the node.
    ///
    /// Example: nf exec --cert me.pem --key me.key --ca ca.pem tls:n1:5640,tls:n2:5640 -- ./prog
    Exec(cmd::exec::ExecArgs),
    /// Serve this node's file tree over 9P2000.L (status, log, pipes, exports, rma
    /// memory, jobs).
    // Boxed: its many flags would make every `Command` as large.
    Serve(Box<cmd::serve::ServeArgs>),
    /// Serve many nodes and clusters as one 9P tree: /n/NODE/…, /views/NAME/…,
    /// /status, and /xcpu/clone placing jobs on the node that fits.
    ///
    /// Members and views come from a TOML config (--config); nodes may also register
    /// themselves (nf serve --join). Users authenticate as to nf serve; the gateway
    /// attaches at each node in the user's name with its own certificate (nf cert
    /// gateway NAME), which nodes must trust (nf serve --trust-gateway NAME).
    Gateway(cmd::gateway::GatewayArgs),
    /// Print every setting (NF_* variable), its value here and where it came from.
    ///
    /// Sources: env (set in this environment), tune cache (written by nf tune),
    /// default. --markdown prints the table of meanings and defaults in the README.
    Config(cmd::config::ConfigArgs),
    /// Make TLS certificates for remote 9P: a CA, a node's, a user's (CN = user).
    ///
    /// nf cert ca, then nf cert node HOST for each server and nf cert user NAME for
    /// each user; all X.509 v3, as rustls requires. Existing files are never replaced.
    Cert(cmd::cert::CertArgs),
    /// List directories on a 9P server (ADDR:/path, or :/path for the local one).
    ///
    /// ADDR is unix:PATH, shm:PATH, tcp:HOST:PORT or tls:HOST:PORT (with --cert,
    /// --key, --ca); :/path is the local server ($NF_ADDR, else nf serve's socket).
    Ls(cmd::files::LsArgs),
    /// Show a file's attributes.
    ///
    /// Type, mode, size, owner, links, mtime (local time; --epoch for seconds since
    /// 1970) and qid, one per line.
    Stat(cmd::files::StatArgs),
    /// Print files (streams and pipes print as data comes).
    Cat(cmd::files::PathsArgs),
    /// Write text (or standard input) to a file, creating it if missing.
    Write(cmd::files::WriteArgs),
    /// Copy a file between this host and a server, either way.
    ///
    /// As cp(1): a destination that is a directory (local or remote) or ends in /
    /// receives the file under its own name.
    ///
    /// Example: nf cp :/ro/input.dat .
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
    if matches!(cli.command, Command::Serve(_) | Command::Gateway(_)) {
        // A daemon passes nothing it inherited on to what it starts for users.
        if let Err(e) = nf_sys::fds::close_inherited_on_exec(3) {
            eprintln!("nf: error: marking inherited descriptors close-on-exec: {e}");
            std::process::exit(EXIT_FAILURE);
        }
        cmd::serve::init_tracing();
    } else {
        nf_core::log::init("nf", "warn");
    }
    let result = match cli.command {
        Command::Run(a) => cmd::run::main(a),
        Command::HostRanks(a) => cmd::run::host_ranks(a),
        Command::Demo(a) => cmd::demo::main(a),
        Command::Bench(b) => cmd::bench::main(b),
        Command::Tune(a) => cmd::tune::main(a),
        Command::Serve(a) => cmd::serve::main(*a),
        Command::Gateway(a) => cmd::gateway::main(a),
        Command::Exec(a) => cmd::exec::main(a),
        Command::Cert(a) => cmd::cert::main(a),
        Command::Config(a) => cmd::config::main(a),
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
            let code = exit_code(&e);
            // Under mpirun every rank checks the same arguments: rank 0 alone says
            // what is wrong with them, so the user reads it once.
            let echo = code == EXIT_USAGE && cmd::run::rank_under_launcher().unwrap_or(0) != 0;
            if !echo {
                eprintln!("nf: error: {e:#}");
            }
            std::process::exit(code);
        }
    }
}
