//! `nf bench 9p`: ninefold's node daemon (`nf serve`) against Debian's diod, same
//! directory, same client, same run (the method is in `nf_bench::ninep`). Either side
//! may instead be a server already running at any nf address (`--ours-addr`,
//! `--theirs-addr`), e.g. a gateway against the node behind it, over TLS.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use nf_bench::ninep::load::{run_load, LoadParams};
use nf_bench::ninep::{self, servers, Params, Served, Test};
use nf_bench::params::{check_writable, ParamError};
use nf_bench::plot::{plot_reports, PlotText};
use nf_link::addr::parse_addr;
use nf_link::tls::TlsFiles;
use nf_ninep_client::connect::{connect, ConnectOptions};

use super::progress::{Mode, Progress};

/// Arguments of `nf bench 9p`.
#[derive(Args)]
pub struct NinepArgs {
    /// msizes to ask for, in bytes, comma-separated (default 8 KiB … 1 MiB, powers of two).
    #[arg(long, value_delimiter = ',')]
    pub msizes: Option<Vec<u32>>,
    /// Rounds per msize; the servers' order flips every round (many short rounds
    /// share a loaded machine's ups and downs fairly).
    #[arg(long, default_value_t = 6)]
    pub alternations: usize,
    /// Timed walk / open / read 1 B / clunk cycles per server, msize and round.
    #[arg(long, default_value_t = 1000)]
    pub small_iters: usize,
    /// Untimed cycles before them.
    #[arg(long, default_value_t = 100)]
    pub small_warmup: usize,
    /// MiB each streaming read and write moves per round (at least 64 messages' worth).
    #[arg(long, default_value_t = 16)]
    pub stream_mib: u64,
    /// Reads in flight in the streaming read (1: one after another, each sample its
    /// round trip; more: each sample the time from one reply to the next).
    #[arg(long, default_value_t = 1,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=64))]
    pub depth: usize,
    /// Export directory (default: a fresh one under $TMPDIR, removed afterwards).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The diod binary.
    #[arg(long, default_value = "diod")]
    pub diod: String,
    /// Measure ninefold alone (no comparison).
    #[arg(long)]
    pub no_diod: bool,
    /// Measure a ninefold server already serving --dir on this unix socket instead of
    /// starting `nf serve -f --unix SOCK --export DIR` (a child process, as diod is).
    #[arg(long, requires = "dir", conflicts_with = "ours_addr")]
    pub ours_socket: Option<PathBuf>,
    /// Measure a ninefold server (or gateway) already serving --dir at this address
    /// instead: any nf address (unix:PATH, tcp:HOST:PORT, tls:HOST:PORT with --cert,
    /// --key, --ca).
    #[arg(long, requires = "dir", value_name = "ADDR")]
    pub ours_addr: Option<String>,
    /// Attach name that reaches --dir on --ours-socket or --ours-addr (`nf serve` shows
    /// it as /fs; a gateway as /n/MEMBER/fs).
    #[arg(long, default_value = servers::NF_SERVE_EXPORT)]
    pub ours_aname: String,
    /// Compare with the server already serving --dir at this address (any nf address,
    /// as --ours-addr) instead of starting diod.
    #[arg(
        long,
        requires = "dir",
        conflicts_with = "no_diod",
        value_name = "ADDR"
    )]
    pub theirs_addr: Option<String>,
    /// Attach name that reaches --dir on --theirs-addr.
    #[arg(long, default_value = servers::NF_SERVE_EXPORT)]
    pub theirs_aname: String,
    /// The two sides' names in reports: OURS,THEIRS [default: ninefold,diod].
    #[arg(long, value_delimiter = ',', value_name = "OURS,THEIRS")]
    pub names: Option<Vec<String>>,
    /// User to attach as [default: the account of this process's uid; over TLS the
    /// certificate's name].
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Client certificate (PEM) for tls: addresses; its common name is the user.
    #[arg(long, value_name = "PEM", requires_all = ["key", "ca"])]
    pub cert: Option<PathBuf>,
    /// The private key of --cert (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub key: Option<PathBuf>,
    /// CA certificate that signs the servers' certificates (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    pub ca: Option<PathBuf>,
    /// Write the comparison as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write every case as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Plot streaming read and write into PREFIX-read.png and PREFIX-write.png.
    #[arg(long, value_name = "PREFIX", conflicts_with = "clients")]
    pub plot: Option<PathBuf>,
    /// Measure many clients at once instead, for each count in this list (e.g.
    /// 1,4,16,64): each client its own connection at the largest msize, all reading a
    /// 64 KiB file whole (walk, open, read, clunk) over and over for --seconds;
    /// requests/s and p50 / p99 latency per count, --alternations rounds.
    #[arg(long, value_delimiter = ',', value_name = "N,…")]
    pub clients: Option<Vec<usize>>,
    /// Seconds each side sends requests per client count and round (with --clients).
    #[arg(long, default_value_t = 5.0, requires = "clients")]
    pub seconds: f64,
    /// No progress on stderr (otherwise a bar on a terminal, a line per run elsewhere).
    #[arg(short, long)]
    pub quiet: bool,
}

/// A private working directory, removed on drop.
struct Workdir(PathBuf);

impl Drop for Workdir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl NinepArgs {
    /// How --ours-addr and --theirs-addr are reached: the user and the certificate
    /// (the msize is set per connection).
    fn connect_options(&self) -> ConnectOptions {
        let tls = match (&self.cert, &self.key, &self.ca) {
            (Some(cert), Some(key), Some(ca)) => Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                ca: ca.clone(),
            }),
            _ => None,
        };
        ConnectOptions {
            user: self.attach_user(),
            tls,
            ..ConnectOptions::default()
        }
    }

    /// The user to attach as: --user, else whoever the certificate names (empty),
    /// else this process's account.
    fn attach_user(&self) -> String {
        match (&self.user, &self.cert) {
            (Some(u), _) => u.clone(),
            (None, Some(_)) => String::new(),
            (None, None) => nf_ninep_client::connect::default_user(),
        }
    }

    /// The name of side `i` (0 ours, 1 theirs) in reports.
    fn name(&self, i: usize) -> &str {
        match &self.names {
            Some(names) => &names[i],
            None => ["ninefold", "diod"][i],
        }
    }

    /// --clients and --seconds are sensible.
    fn check_load(&self) -> Result<(), ParamError> {
        if let Some(bad) = self.clients.iter().flatten().find(|&&n| n == 0 || n > 1024) {
            return Err(ParamError::new(
                "clients",
                bad,
                "every client count must be 1 … 1024",
            ));
        }
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 3600.0) {
            return Err(ParamError::new(
                "seconds",
                self.seconds,
                "a duration above 0, at most 3600",
            ));
        }
        Ok(())
    }

    /// --names gives two different names.
    fn check_names(&self) -> Result<(), ParamError> {
        match self.names.as_deref() {
            None => Ok(()),
            Some([ours, theirs]) if ours != theirs && !ours.is_empty() && !theirs.is_empty() => {
                Ok(())
            }
            Some(names) => Err(ParamError::new(
                "names",
                names.join(","),
                "give the two sides two different names, OURS,THEIRS",
            )),
        }
    }
}

/// A server already serving the export at `addr` (any nf address), named `name`.
fn at_address(
    name: &str,
    addr: &str,
    aname: &str,
    opts: &ConnectOptions,
) -> anyhow::Result<Served> {
    let addr = parse_addr(addr)?;
    let opts = opts.clone();
    let shown = addr.to_string();
    let reach: servers::Connect = Box::new(move |msize| {
        let opts = ConnectOptions {
            msize,
            ..opts.clone()
        };
        Ok(connect(&addr, &opts)?)
    });
    Ok(servers::external_with(name, &shown, aname, reach))
}

/// Runs `nf bench 9p`.
pub fn main(a: NinepArgs) -> anyhow::Result<i32> {
    let params = Params {
        msizes: a.msizes.clone().unwrap_or_else(ninep::default_msizes),
        small_iters: a.small_iters.max(1),
        small_warmup: a.small_warmup,
        stream_bytes: a.stream_mib.max(1) << 20,
        depth: a.depth,
        alternations: a.alternations.max(1),
        user: a.attach_user(),
    };
    a.check_names()?;
    a.check_load()?;
    if let Some(bad) = params.msizes.iter().find(|&&m| m < 4096) {
        return Err(
            ParamError::new("msizes", bad, "every msize must be at least 4096 bytes").into(),
        );
    }
    for (arg, path) in [("json", &a.json), ("csv", &a.csv)] {
        if let Some(p) = path {
            check_writable(arg, p)?;
        }
    }
    if let Some(prefix) = &a.plot {
        check_writable("plot", &suffixed(prefix, "read"))?;
    }
    let work = Workdir(std::env::temp_dir().join(format!("nf-bench-9p-{}", std::process::id())));
    std::fs::create_dir_all(&work.0).with_context(|| format!("creating {}", work.0.display()))?;
    let export = match &a.dir {
        Some(d) => d.clone(),
        None => work.0.join("export"),
    };
    std::fs::create_dir_all(&export)
        .with_context(|| format!("creating the export directory {}", export.display()))?;
    ninep::prepare_export(&export, params.stream_bytes)?;

    let opts = a.connect_options();
    let mut served: Vec<Served> = Vec::new();
    served.push(match (&a.ours_addr, &a.ours_socket) {
        (Some(addr), _) => at_address(a.name(0), addr, &a.ours_aname, &opts)?,
        (None, Some(sock)) => servers::external(a.name(0), sock, &a.ours_aname),
        (None, None) => {
            let nf = std::env::current_exe().context("finding this nf binary")?;
            let sock = work.0.join("ninefold.sock");
            let mut s = servers::nf_serve(&nf, &export, &sock, &work.0.join("ninefold.log"))?;
            s.name = a.name(0).to_string();
            s
        }
    });
    if let Some(addr) = &a.theirs_addr {
        served.push(at_address(a.name(1), addr, &a.theirs_aname, &opts)?);
    } else if !a.no_diod {
        let log = work.0.join("diod.log");
        let mut s = servers::diod(&a.diod, &export, &work.0.join("diod.sock"), &log)?;
        s.name = a.name(1).to_string();
        served.push(s);
    }

    if let Some(clients) = &a.clients {
        let load = LoadParams {
            clients: clients.clone(),
            duration: std::time::Duration::from_secs_f64(a.seconds),
            alternations: params.alternations,
            msize: params.msizes.iter().copied().max().unwrap_or(1 << 20),
            user: params.user.clone(),
        };
        return load_main(&a, &load, &served);
    }
    let cases = params.msizes.len() * params.alternations * served.len();
    let mut progress = Progress::new("9p", cases as u64, Mode::detect(a.quiet));
    let mut comparison = ninep::run(&served, &params, |server, msize| {
        progress.step(&format!("{server} at msize {msize}"));
    })?;
    progress.finish();
    comparison.git = git_revision();

    print!("{}", comparison.to_table());
    if let Some(p) = &a.json {
        comparison.write_json(p)?;
    }
    if let Some(p) = &a.csv {
        comparison.write_csv(p)?;
    }
    if let Some(prefix) = &a.plot {
        for (test, title) in [
            (Test::Read, "9P streaming read"),
            (Test::Write, "9P streaming write"),
        ] {
            let text = PlotText {
                title,
                time_caption: "time per message (median)",
                time_axis: "µs per message",
                rate_caption: "data rate (bytes per message / median time)",
                x_axis: "bytes per message (msize − 24)",
            };
            let reports = comparison.reports(test);
            let pairs: Vec<(&str, &nf_bench::report::Report)> =
                reports.iter().map(|r| (r.transport.as_str(), r)).collect();
            let path = suffixed(prefix, test.name());
            plot_reports(&pairs, &path, &text)?;
            println!("wrote {}", path.display());
        }
    }
    Ok(0)
}

/// The load test (`--clients`): runs it, prints the table, writes JSON and CSV.
fn load_main(a: &NinepArgs, load: &LoadParams, served: &[Served]) -> anyhow::Result<i32> {
    let cases = load.clients.len() * load.alternations * served.len();
    let mut progress = Progress::new("9p load", cases as u64, Mode::detect(a.quiet));
    let mut comparison = run_load(served, load, |server, clients| {
        progress.step(&format!("{server} with {clients} clients"));
    })?;
    progress.finish();
    comparison.git = git_revision();
    print!("{}", comparison.to_table());
    if let Some(p) = &a.json {
        comparison.write_json(p)?;
    }
    if let Some(p) = &a.csv {
        comparison.write_csv(p)?;
    }
    Ok(0)
}

/// `PREFIX-NAME.png`.
fn suffixed(prefix: &Path, name: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(format!("-{name}.png"));
    PathBuf::from(s)
}

/// `git describe --always --dirty` of the current directory, when it works.
fn git_revision() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()?;
    let rev = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !rev.is_empty()).then_some(rev)
}
