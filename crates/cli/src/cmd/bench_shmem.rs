//! `nf bench shmem`: OpenSHMEM put, get, fetch-add, put-with-signal, put bandwidth,
//! barrier, broadcast and reduce through ninefold's libshmem, measured by a C program
//! written against the standard `shmem.h` (`crates/shmem/bench/shmem_bench.c`, whose
//! header comment says how it measures).
//!
//! How the program is found (so the command works from a `cargo build` checkout and
//! from an install alike):
//! 1. Its source and the `shmem.h` it is compiled against are built into `nf`
//!    (`include_str!`), so no source tree is needed at run time and the header is the
//!    one of this `nf`.
//! 2. It is compiled at run time into a fresh temporary folder with the system C
//!    compiler (`$CC`, else `cc`; OpenSHMEM programs need one anyway), linked against
//!    `libshmem.so` from `--lib DIR`, else beside this `nf` (`target/<profile>/`, where
//!    `cargo build` puts it), else in `../lib` from it (`PREFIX/bin/nf` and
//!    `PREFIX/lib/libshmem.so`, as `scripts/install.sh` lays them out). A library
//!    cannot link its own benchmark in its `build.rs` (it does not exist yet then),
//!    and compiling takes well under a second.
//! 3. `--program` runs a program built elsewhere (e.g. with `nfshcc`) instead.
//! 4. The program runs under `nf run -n N` (bounded by `--timeout`); `--parse FILE`
//!    reads the output of a run made by another launcher instead (Open MPI's `oshrun`
//!    for OSHMEM in `bench/compare-shmem.sh`), so both sides' reports come out of
//!    the same code. That `nf run` gets SIGTERM if this process dies (even by
//!    SIGKILL), and stops its ranks: a killed benchmark leaves no job behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};
use clap::Args;
use nf_bench::shmem::{self, OPS};

/// The benchmark program's source.
const SOURCE: &str = include_str!("../../../shmem/bench/shmem_bench.c");
/// The header it is compiled against: libshmem's.
const HEADER: &str = include_str!("../../../shmem/include/shmem.h");

/// Arguments of `nf bench shmem`.
#[derive(Args)]
pub struct ShmemArgs {
    /// PEs to run (put, get and the atomics go from PE 0 to PE 1; the collectives
    /// span every PE).
    #[arg(short = 'n', long = "np", default_value_t = 2)]
    pub pes: usize,
    /// Operations, comma-separated: put, get, fetch-add, put-signal, put-bw,
    /// barrier, broadcast, reduce [default: all]; with --parse, those reported.
    #[arg(long, value_delimiter = ',', value_parser = op_name)]
    pub ops: Option<Vec<String>>,
    /// Sizes in bytes, comma-separated (default: 8 B up by powers of 2, to 4 MiB for
    /// put / get / put-bw, 1 MiB for the others; fetch-add is 8 B, barrier 0 B).
    #[arg(long, value_delimiter = ',', value_parser = super::bench::size_bytes)]
    pub sizes: Option<Vec<usize>>,
    /// Timed operations per size up to 64 KiB (fewer above, at least 20).
    #[arg(long, default_value_t = 10_000)]
    pub iters: usize,
    /// Untimed operations before each size.
    #[arg(long, default_value_t = 1_000)]
    pub warmup: usize,
    /// Batches each size's operations are timed in (one sample each).
    #[arg(long, default_value_t = 10)]
    pub batches: usize,
    /// Start more PEs than `nf run` starts per CPU without it (`nf run --oversubscribe`).
    #[arg(long, conflicts_with = "parse")]
    pub oversubscribe: bool,
    /// Seconds the whole run may take before `nf run` stops it.
    #[arg(long, default_value_t = 900.0)]
    pub timeout: f64,
    /// The folder of the `libshmem.so` to measure [default: beside nf, else ../lib].
    #[arg(long, value_name = "DIR", conflicts_with = "program")]
    pub lib: Option<PathBuf>,
    /// Run this already built benchmark program instead of compiling one.
    #[arg(long, value_name = "PATH")]
    pub program: Option<PathBuf>,
    /// Make the reports from this saved output of the program (run by another
    /// launcher) instead of running it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["program", "lib"])]
    pub parse: Option<PathBuf>,
    /// The implementation's name in the reports [default: libshmem, or with --parse
    /// the library's vendor string].
    #[arg(long)]
    pub transport: Option<String>,
    /// Label for the reports' `params.label` (e.g. what the run compares).
    #[arg(long)]
    pub label: Option<String>,
    /// Where the reports go.
    #[command(flatten)]
    pub out: super::bench::Outputs,
}

fn op_name(s: &str) -> Result<String, String> {
    OPS.contains(&s)
        .then(|| s.to_owned())
        .ok_or_else(|| format!("not an operation; one of {}", OPS.join(", ")))
}

/// Runs the benchmark (or reads a saved run) and writes its reports.
pub fn run(a: ShmemArgs) -> anyhow::Result<i32> {
    a.out.check()?;
    if a.pes < 2 {
        bail!("-n {}: the benchmark needs at least 2 PEs", a.pes);
    }
    if a.iters == 0 || a.batches == 0 {
        bail!("--iters and --batches are at least 1");
    }
    let text = match &a.parse {
        Some(f) => {
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?
        }
        None => measure(&a)?,
    };
    let mut run = shmem::parse(&text)?;
    if let Some(ops) = &a.ops {
        // A saved run holds every operation it measured; report the ones asked for.
        run.ops.retain(|m| ops.contains(&m.op));
    }
    let transport = a.transport.clone().unwrap_or_else(|| match a.parse {
        Some(_) => run.vendor.replace(' ', "-"),
        None => "libshmem".into(),
    });
    let mut reports = run.reports(&transport);
    for r in &mut reports {
        r.params.insert("iters".into(), a.iters.into());
        r.params.insert("warmup".into(), a.warmup.into());
        r.params.insert("batches".into(), a.batches.into());
        r.params
            .insert("command".into(), super::bench::command_line().into());
        if let Some(l) = &a.label {
            r.params.insert("label".into(), l.clone().into());
        }
        println!("== {} ({}, {} PEs)", r.bench, r.transport, r.ranks);
        print!("{}", r.to_table());
    }
    for s in &run.skipped {
        println!("# skipped {s}");
    }
    if !reports.is_empty() {
        a.out.write_cases("shmem", &reports, &shmem::PLOT_TEXT)?;
    }
    if !run.complete {
        bail!(
            "the benchmark ended before it printed `# done`: the reports hold only the sizes \
             it finished"
        );
    }
    Ok(0)
}

/// Builds (or takes) the program, runs it under `nf run`, returns PE 0's output.
fn measure(a: &ShmemArgs) -> anyhow::Result<String> {
    let tmp = tempfile::Builder::new()
        .prefix("nf-bench-shmem-")
        .tempdir()
        .context("creating a temporary folder to build the benchmark in")?;
    let program = match &a.program {
        Some(p) => p.clone(),
        None => compile(tmp.path(), &lib_dir(a.lib.as_deref())?)?,
    };
    let nf = std::env::current_exe().context("finding this nf executable")?;
    let mut cmd = Command::new(nf);
    cmd.args(["run", "--timeout", &a.timeout.to_string()])
        .args(["-n", &a.pes.to_string()]);
    if a.oversubscribe {
        cmd.arg("--oversubscribe");
    }
    cmd.arg(&program)
        .args(["--iters", &a.iters.to_string()])
        .args(["--warmup", &a.warmup.to_string()])
        .args(["--batches", &a.batches.to_string()]);
    if let Some(ops) = &a.ops {
        cmd.args(["--ops", &ops.join(",")]);
    }
    if let Some(sizes) = &a.sizes {
        let list: Vec<String> = sizes.iter().map(usize::to_string).collect();
        cmd.args(["--sizes", &list.join(",")]);
    }
    // Killed outright, we take the job with us: `nf run` stops its ranks on SIGTERM.
    nf_sys::spawn::die_with_parent(&mut cmd, libc::SIGTERM);
    // The program's messages and the launcher's go straight to our stderr.
    let out = cmd
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {} under nf run", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        eprintln!(
            "nf bench shmem: the benchmark's job failed ({})",
            out.status
        );
    }
    Ok(text)
}

/// Where `libshmem.so` is (rule 2).
fn lib_dir(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(d) = given {
        if !d.join("libshmem.so").is_file() {
            bail!("--lib {}: no libshmem.so there", d.display());
        }
        return Ok(d.to_path_buf());
    }
    let exe = std::env::current_exe().context("finding this nf executable")?;
    let bin = exe.parent().context("nf's folder")?;
    let tried = [bin.to_path_buf(), bin.join("../lib")];
    for d in &tried {
        if d.join("libshmem.so").is_file() {
            return Ok(d.clone());
        }
    }
    bail!(
        "no libshmem.so in {} or {}: build it (cargo build -p nf-shmem, same profile as \
         nf), install it (scripts/install.sh), or name its folder with --lib",
        tried[0].display(),
        tried[1].display()
    )
}

/// Compiles the program into `dir` against the library in `lib` (rule 2).
fn compile(dir: &Path, lib: &Path) -> anyhow::Result<PathBuf> {
    let src = dir.join("shmem_bench.c");
    std::fs::write(dir.join("shmem.h"), HEADER).context("writing shmem.h")?;
    std::fs::write(&src, SOURCE).context("writing shmem_bench.c")?;
    let prog = dir.join("shmem_bench");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let lib = std::fs::canonicalize(lib).unwrap_or_else(|_| lib.to_path_buf());
    let out = Command::new(&cc)
        .args(["-std=gnu11", "-O2", "-Wall"])
        .arg("-I")
        .arg(dir)
        .arg(&src)
        .arg("-o")
        .arg(&prog)
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-lshmem")
        .output()
        .with_context(|| format!("running the C compiler {cc} (set CC to choose another)"))?;
    if !out.status.success() {
        bail!(
            "{cc} could not build the benchmark against {}:\n{}",
            lib.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(prog)
}
