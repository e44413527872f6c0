//! Shared by the C-level tests: building C programs with `mpicc` against libarmci
//! (or ARMCI-MPI), and running them under Open MPI's `mpirun` on this host or across
//! network-namespace hosts, always bounded by a deadline.
//!
//! `NF_ARMCI_TEST_IMPL=armci-mpi` links every program against Debian's ARMCI-MPI
//! instead of ours: that is how the tests themselves are proven right.

#![allow(dead_code)] // each test binary uses its own part of this module

use std::collections::BTreeSet;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use nf_testkit::Netns;

/// Which ARMCI the C programs are linked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Impl {
    /// ninefold's libarmci (this crate's cdylib).
    Ninefold,
    /// Debian's ARMCI-MPI (`-larmci-openmpi`), the reference.
    ArmciMpi,
}

impl Impl {
    /// From `NF_ARMCI_TEST_IMPL` (`ninefold`, the default, or `armci-mpi`).
    pub fn from_env() -> Impl {
        match std::env::var("NF_ARMCI_TEST_IMPL").as_deref() {
            Ok("armci-mpi") => Impl::ArmciMpi,
            Ok("ninefold") | Err(_) => Impl::Ninefold,
            Ok(other) => panic!("NF_ARMCI_TEST_IMPL is '{other}'; use ninefold or armci-mpi"),
        }
    }

    fn dir_name(self) -> &'static str {
        match self {
            Impl::Ninefold => "ninefold",
            Impl::ArmciMpi => "armci-mpi",
        }
    }
}

/// This crate's folder.
pub fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder holding the freshly built `libarmci.so`.
pub fn lib_dir() -> PathBuf {
    nf_testkit::cdylib_dir("libarmci.so", "nf-armci")
}

/// Compiles C `sources` into program `name` for `imp`; `libs` come after the ARMCI
/// library on the link line (Global Arrays puts its own libraries before it, so
/// they are passed in `pre_libs`).
pub fn compile(imp: Impl, name: &str, sources: &[PathBuf], pre_libs: &[&str]) -> PathBuf {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("armci-c")
        .join(imp.dir_name());
    std::fs::create_dir_all(&out_dir).expect("create the C build folder");
    let out = out_dir.join(name);
    // Written under a name of its own, then renamed: tests that build the same program
    // at once must never run one another's half-written file.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, Ordering::Relaxed);
    let part = out_dir.join(format!("{name}.part{n}"));
    let mut cmd = Command::new("mpicc");
    cmd.args(["-std=gnu11", "-O2", "-g", "-Wall", "-Wno-unused-function"]);
    if imp == Impl::Ninefold {
        cmd.arg("-I").arg(crate_dir().join("include"));
    }
    cmd.arg("-I").arg(crate_dir().join("tests/c"));
    cmd.args(sources).arg("-o").arg(&part).args(pre_libs);
    match imp {
        Impl::Ninefold => {
            // By path, not -larmci: Debian's ARMCI-MPI also installs a libarmci.a, in
            // a folder that `ga-config --flibs` puts on the search path.
            let lib = lib_dir();
            cmd.arg(lib.join("libarmci.so"));
            cmd.arg(format!("-Wl,-rpath,{}", lib.display()));
            // DT_RPATH, which wins over LD_LIBRARY_PATH: cargo points that at
            // target/<profile>, whose libarmci.so (.0) `cargo test` does not update.
            cmd.arg("-Wl,--disable-new-dtags");
        }
        Impl::ArmciMpi => {
            cmd.arg("-larmci-openmpi");
        }
    }
    cmd.args(["-lm"]);
    let res = run_bounded(cmd, Duration::from_secs(120));
    assert!(
        res.code == Some(0),
        "compiling {name} failed:\n{}{}",
        res.stdout,
        res.stderr
    );
    std::fs::rename(&part, &out).expect("move the program into place");
    out
}

/// What a bounded run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// Exit code (None: killed by a signal, or by the deadline).
    pub code: Option<i32>,
    /// Whether the deadline killed it.
    pub timed_out: bool,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl RunOutput {
    /// Both streams, for failure messages.
    pub fn both(&self) -> String {
        format!("--- stdout\n{}--- stderr\n{}", self.stdout, self.stderr)
    }
}

/// Runs `cmd` in its own process group; past `limit` the whole group gets SIGTERM,
/// then SIGKILL 3 s later.
pub fn run_bounded(mut cmd: Command, limit: Duration) -> RunOutput {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let pgid = child.id() as i32;
    let mut out = child.stdout.take().expect("piped stdout");
    let mut err = child.stderr.take().expect("piped stderr");
    let out_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let err_reader = thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        String::from_utf8_lossy(&s).into_owned()
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the child") {
            break status;
        }
        if !timed_out && start.elapsed() > limit {
            timed_out = true;
            // SAFETY: kill has no memory preconditions; pgid is the group this test made.
            unsafe { libc::kill(-pgid, libc::SIGTERM) };
            thread::sleep(Duration::from_secs(3));
            // SAFETY: as above.
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        thread::sleep(Duration::from_millis(20));
    };
    RunOutput {
        code: status.code(),
        timed_out,
        stdout: out_reader.join().expect("stdout reader"),
        stderr: err_reader.join().expect("stderr reader"),
    }
}

/// One MPI job at a time in this test binary: the machine has few cores, and two
/// oversubscribed jobs spinning against each other only make both slow.
static JOBS: Mutex<()> = Mutex::new(());

/// The options every `mpirun` here gets.
fn mpirun_base() -> Command {
    let mut cmd = Command::new("mpirun");
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "none",
    ]);
    cmd
}

/// `mpirun -np NP PROG ARGS` on this host, bounded by `limit`.
pub fn mpirun(np: usize, prog: &Path, args: &[&str], limit: Duration) -> RunOutput {
    mpirun_with(np, &[], prog, args, limit)
}

/// [`mpirun`] with more `mpirun` options before the program (`-x NAME=VALUE` to set
/// the ranks' environment, `--mca NAME VALUE`).
pub fn mpirun_with(
    np: usize,
    options: &[&str],
    prog: &Path,
    args: &[&str],
    limit: Duration,
) -> RunOutput {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let mut cmd = mpirun_base();
    cmd.args(options);
    cmd.arg("-np").arg(np.to_string()).arg(prog).args(args);
    run_bounded(cmd, limit)
}

/// [`mpirun`] without `LD_LIBRARY_PATH` (cargo points it at the build tree), so the
/// program finds its libraries as it would outside the tests.
pub fn mpirun_own_paths(np: usize, prog: &Path, limit: Duration) -> RunOutput {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let mut cmd = mpirun_base();
    cmd.env_remove("LD_LIBRARY_PATH");
    cmd.arg("-np").arg(np.to_string()).arg(prog);
    run_bounded(cmd, limit)
}

/// `mpirun` across the hosts of `net`, `per_host` processes each, started from inside
/// host 0 with the repository's remote-start agent (tests/netns/mpirun-agent.sh);
/// MPI's own traffic goes over tcp on the fixture's network (Open MPI's tcp btl and,
/// for ARMCI-MPI's windows, the pt2pt one-sided component).
pub fn mpirun_hosts(
    net: &Netns,
    per_host: usize,
    prog: &Path,
    args: &[&str],
    limit: Duration,
) -> RunOutput {
    mpirun_hosts_with(net, per_host, &[], prog, args, limit)
}

/// [`mpirun_hosts`] with more `mpirun` options before the program (as
/// [`mpirun_with`]).
pub fn mpirun_hosts_with(
    net: &Netns,
    per_host: usize,
    options: &[&str],
    prog: &Path,
    args: &[&str],
    limit: Duration,
) -> RunOutput {
    let _one = JOBS.lock().unwrap_or_else(|p| p.into_inner());
    let agent = crate_dir().join("../../tests/netns/mpirun-agent.sh");
    let subnet = match net.addr(0) {
        std::net::IpAddr::V4(a) => {
            let o = a.octets();
            format!("{}.{}.{}.0/24", o[0], o[1], o[2])
        }
        std::net::IpAddr::V6(a) => panic!("the fixture gave an IPv6 address {a}"),
    };
    let hosts: Vec<String> = (0..net.len())
        .map(|i| format!("{}:{per_host}", net.host(i)))
        .collect();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", net.host(0), "mpirun"]);
    cmd.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "--bind-to",
        "none",
    ]);
    cmd.arg("--mca").arg("plm_rsh_agent").arg(&agent);
    cmd.args(["--mca", "oob_tcp_if_include", &subnet]);
    cmd.args(["--mca", "btl_tcp_if_include", &subnet]);
    cmd.args(["--mca", "btl", "tcp,self"]);
    // ARMCI-MPI's windows need an osc component that works over the tcp btl.
    cmd.args(["--mca", "osc", "pt2pt"]);
    cmd.arg("--host").arg(hosts.join(","));
    cmd.args(options);
    cmd.arg("-np").arg((per_host * net.len()).to_string());
    cmd.arg(prog).args(args);
    run_bounded(cmd, limit)
}

/// Test names a C program runs: its `RUN(name)` lines, without those under
/// `#ifdef ARMCI_NINEFOLD` when the program is linked against ARMCI-MPI.
pub fn expected_tests(source: &Path, imp: Impl) -> Vec<String> {
    let text = std::fs::read_to_string(source).expect("read the C test source");
    let mut names = Vec::new();
    let mut ninefold_only = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("#ifdef ARMCI_NINEFOLD") {
            ninefold_only = true;
        } else if t.starts_with("#endif") {
            ninefold_only = false;
        } else if let Some(rest) = t.strip_prefix("RUN(") {
            if ninefold_only && imp == Impl::ArmciMpi {
                continue;
            }
            let name = rest.split(')').next().expect("RUN(name)");
            names.push(name.to_owned());
        }
    }
    assert!(
        !names.is_empty(),
        "{} has no RUN(...) lines",
        source.display()
    );
    names
}

/// Checks that a harness program succeeded and printed "ok NAME" for every test and
/// then "done".
pub fn assert_all_passed(what: &str, out: &RunOutput, names: &[String]) {
    assert!(
        !out.timed_out && out.code == Some(0),
        "{what}: exit {:?}{}\n{}",
        out.code,
        if out.timed_out { " (deadline)" } else { "" },
        out.both()
    );
    for name in names {
        assert!(
            out.stdout.lines().any(|l| l == format!("ok {name}")),
            "{what}: no 'ok {name}'\n{}",
            out.both()
        );
    }
    assert!(
        out.stdout.lines().any(|l| l == "done"),
        "{what}: did not finish\n{}",
        out.both()
    );
}

/// Symbols named by `nm` lines of a kind (`U`, or defined: `T`, `W`, `D`, `B`, `R`).
pub fn symbols(args: &[&str], path: &str, defined: bool) -> BTreeSet<String> {
    let out = Command::new("nm")
        .args(args)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("nm {path}: {e}"));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            match (defined, w.as_slice()) {
                (false, ["U", name]) => Some(name.to_string()),
                (true, [_, kind, name]) if "TWDBRV".contains(*kind) => Some(name.to_string()),
                _ => None,
            }
        })
        .collect()
}
