//! Shared by the C-level tests: building the programs of `tests/c` against this
//! crate's `libshmem.so` and `include/shmem.h` with the system C compiler, and running
//! them under `nf run` (this host, or two namespace hosts) or Open MPI's `mpirun`,
//! always bounded by a deadline.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use nf_testkit::output_within;
use nf_testkit::Netns;

/// One job at a time: the machine may have two cores, and jobs of several PEs each
/// run side by side only slowly.
static JOBS: Mutex<()> = Mutex::new(());

/// This crate's folder.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder holding the freshly built `libshmem.so`.
pub fn lib_dir() -> PathBuf {
    nf_testkit::cdylib_dir("libshmem.so", "nf-shmem")
}

/// The `nf` launcher of this build profile (`target/<profile>/nf`), built first if a
/// `cargo test -p nf-shmem` alone has not built it.
pub fn nf() -> PathBuf {
    static NF: OnceLock<PathBuf> = OnceLock::new();
    NF.get_or_init(|| {
        let profile_dir = lib_dir().parent().expect("target/<profile>").to_path_buf();
        let nf = profile_dir.join("nf");
        if !nf.exists() {
            let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
                Some("debug") => "dev".to_owned(),
                Some(p) => p.to_owned(),
                None => "dev".to_owned(),
            };
            let status = Command::new(env!("CARGO"))
                .args([
                    "build",
                    "-p",
                    "nf-cli",
                    "--bin",
                    "nf",
                    "--profile",
                    &profile,
                ])
                .current_dir(crate_dir())
                .status()
                .expect("run cargo build -p nf-cli");
            assert!(status.success(), "cargo build -p nf-cli failed");
        }
        nf
    })
    .clone()
}

/// Compiles `tests/c/<name>.c` against libshmem; returns the program.
pub fn compile(name: &str) -> PathBuf {
    compile_as(name, name, &[])
}

/// [`compile`] under the C standard `std` (`c11`: no GNU extensions).
pub fn compile_std(name: &str, std: &str) -> PathBuf {
    compile_as(name, name, &[&format!("-std={std}")])
}

/// Compiles `tests/c/<name>.c` against libshmem with extra compiler `flags` (after
/// the defaults, so a later `-std=` wins) into a program called `prog_name`.
pub fn compile_as(name: &str, prog_name: &str, flags: &[&str]) -> PathBuf {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shmem-c");
    std::fs::create_dir_all(&out_dir).expect("create the C build folder");
    // Built under a name of its own, then renamed: tests that build the same program
    // at once must never run one another's half-written file.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let part = out_dir.join(format!(
        "{prog_name}.part{}",
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    let out = cc(name, flags, &part);
    assert!(
        out.status.success(),
        "{} {name}.c failed:\n{}",
        cc_name(),
        String::from_utf8_lossy(&out.stderr)
    );
    let prog = out_dir.join(prog_name);
    std::fs::rename(&part, &prog).expect("rename the program into place");
    prog
}

/// The C compiler: `$CC`, else `cc`.
pub fn cc_name() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Runs the C compiler on `tests/c/<name>.c` against libshmem with extra `flags`,
/// writing `out`; what it said and how it ended.
fn cc(name: &str, flags: &[&str], out: &Path) -> Output {
    let lib = lib_dir();
    output_within(
        Command::new(cc_name())
            .args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-O1"])
            .arg("-I")
            .arg(crate_dir().join("include"))
            .args(flags)
            .arg(crate_dir().join("tests/c").join(format!("{name}.c")))
            .arg("-o")
            .arg(out)
            .arg(format!("-L{}", lib.display()))
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            // DT_RPATH, which wins over LD_LIBRARY_PATH: cargo points that at
            // target/<profile>, whose libshmem.so `cargo test` does not update.
            .arg("-Wl,--disable-new-dtags")
            .arg("-lshmem"),
        Duration::from_secs(120),
    )
}

/// Compiles `tests/c/<name>.c` with extra `flags` into a throw-away program: `Ok`
/// when it built, else `Err` with what the compiler said.
pub fn try_compile(name: &str, flags: &[&str]) -> Result<(), String> {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = cc(name, flags, &dir.path().join(name));
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// What a job printed and how it ended.
pub struct Run {
    /// stdout then stderr, as text.
    pub text: String,
    /// The launcher's exit status.
    pub ok: bool,
}

fn finish(out: Output) -> Run {
    Run {
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
        ok: out.status.success(),
    }
}

/// Generous: a job takes seconds; this only stops a hang.
pub const LIMIT: Duration = Duration::from_secs(180);

/// `nf run -n N PROG ARGS` on this host, with `env` set for the PEs.
pub fn nf_run(n: usize, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    nf_run_as(Command::new(nf()), n, prog, args, env)
}

/// [`nf_run`] with the launcher and every PE held to one CPU (`taskset`): more PEs
/// than CPUs, however many the machine has.
pub fn nf_run_on_one_cpu(n: usize, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list in /proc/self/status");
    // The first CPU this process may use: "0-3,8" -> "0".
    let first = allowed.trim().split([',', '-']).next().expect("a CPU");
    let mut cmd = Command::new("taskset");
    cmd.args(["-c", first]).arg(nf());
    nf_run_as(cmd, n, prog, args, env)
}

/// `CMD run -n N PROG ARGS`, CMD being `nf` or a command that runs it.
fn nf_run_as(mut cmd: Command, n: usize, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    cmd.args(["run", "--timeout", "150", "-n", &n.to_string()])
        .arg(prog)
        .args(args);
    cmd.envs(env.iter().copied());
    finish(output_within(&mut cmd, LIMIT))
}

/// `mpirun -np N PROG ARGS` (Open MPI; the PEs join through PMIx).
pub fn mpirun(n: usize, prog: &Path, args: &[&str]) -> Run {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "none",
    ])
    .args(["-np", &n.to_string()])
    .arg(prog)
    .args(args);
    finish(output_within(&mut cmd, LIMIT))
}

/// `nf run` across the two hosts of `net`, `per_host` PEs each, started inside host
/// 0; ranks reach host 1 with `ip netns exec`.
pub fn nf_run_hosts(net: &Netns, per_host: usize, prog: &Path, env: &[(&str, &str)]) -> Run {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let hosts = format!("{}:{per_host},{}:{per_host}", net.host(0), net.host(1));
    let mut cmd = net.exec(0, nf());
    cmd.args(["run", "--timeout", "150", "--hosts", &hosts])
        .args(["--remote", "ip netns exec {host}"])
        .arg("--pmi-bind")
        .arg(net.addr(0).to_string())
        .arg(prog);
    cmd.envs(env.iter().copied());
    finish(output_within(&mut cmd, LIMIT))
}

/// The names of the tests a program reports (`PASS("name")` in its source).
pub fn expected_tests(name: &str) -> Vec<String> {
    let src = std::fs::read_to_string(crate_dir().join("tests/c").join(format!("{name}.c")))
        .expect("read the C source");
    src.split("PASS(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next().map(str::to_owned))
        .collect()
}

/// Checks the job succeeded and PE 0 reported every test of `name` once.
pub fn assert_all_passed(what: &str, name: &str, run: &Run) {
    assert!(run.ok, "{what}: the job failed:\n{}", run.text);
    for t in expected_tests(name) {
        let n = run.text.lines().filter(|l| *l == format!("ok {t}")).count();
        assert_eq!(n, 1, "{what}: test {t} reported {n} times:\n{}", run.text);
    }
}

/// A private segment directory for one job (`NF_SHM_DIR`), checked empty afterwards.
pub struct ShmDir(tempfile::TempDir);

impl ShmDir {
    /// A fresh directory on the tmpfs.
    pub fn new() -> ShmDir {
        ShmDir(tempfile::tempdir_in("/dev/shm").expect("a tmpfs at /dev/shm"))
    }

    /// The `NF_SHM_DIR` setting for the job.
    pub fn env(&self) -> (&'static str, &str) {
        ("NF_SHM_DIR", self.0.path().to_str().expect("a UTF-8 path"))
    }

    /// Checks that the job left no file behind.
    pub fn assert_empty(&self, what: &str) {
        let left: Vec<_> = std::fs::read_dir(self.0.path())
            .expect("read the segment directory")
            .filter_map(|e| e.ok().map(|e| e.file_name()))
            .collect();
        assert!(left.is_empty(), "{what}: files left behind: {left:?}");
    }
}
