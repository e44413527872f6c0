//! `nf bench 9p`: ninefold's node daemon (`nf serve`) against Debian's diod, same
//! directory, same client, same run (the method is in `nf_bench::ninep`).

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;
use nf_bench::ninep::{self, servers, Params, Served, Test};
use nf_bench::params::{check_writable, ParamError};
use nf_bench::plot::{plot_reports, PlotText};

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
    #[arg(long, requires = "dir")]
    pub ours_socket: Option<PathBuf>,
    /// Attach name that reaches --dir on --ours-socket (`nf serve` shows it as /fs).
    #[arg(long, default_value = servers::NF_SERVE_EXPORT)]
    pub ours_aname: String,
    /// Write the comparison as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write every case as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Plot streaming read and write into PREFIX-read.png and PREFIX-write.png.
    #[arg(long, value_name = "PREFIX")]
    pub plot: Option<PathBuf>,
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

/// Runs `nf bench 9p`.
pub fn main(a: NinepArgs) -> anyhow::Result<i32> {
    let params = Params {
        msizes: a.msizes.clone().unwrap_or_else(ninep::default_msizes),
        small_iters: a.small_iters.max(1),
        small_warmup: a.small_warmup,
        stream_bytes: a.stream_mib.max(1) << 20,
        alternations: a.alternations.max(1),
        user: nf_node::connect::default_user(),
    };
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

    let mut served: Vec<Served> = Vec::new();
    served.push(match &a.ours_socket {
        Some(sock) => servers::external("ninefold", sock, &a.ours_aname),
        None => {
            let nf = std::env::current_exe().context("finding this nf binary")?;
            let sock = work.0.join("ninefold.sock");
            servers::nf_serve(&nf, &export, &sock, &work.0.join("ninefold.log"))?
        }
    });
    if !a.no_diod {
        let log = work.0.join("diod.log");
        served.push(servers::diod(
            &a.diod,
            &export,
            &work.0.join("diod.sock"),
            &log,
        )?);
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
