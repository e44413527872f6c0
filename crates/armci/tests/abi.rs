//! libarmci as something to link against: every global ARMCI-MPI defines is
//! exported, the profiling interface lets a wrapper library intercept a call, and
//! `scripts/install.sh` gives an install a program builds against with pkg-config.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{
    assert_all_passed, compile, crate_dir, expected_tests, lib_dir, mpirun, mpirun_own_paths,
    run_bounded, symbols, Impl,
};

/// Debian's ARMCI-MPI (the Open MPI build).
const ARMCI_MPI: &str = "/usr/lib/x86_64-linux-gnu/libarmci-openmpi.a";

/// A run takes seconds; this only stops a hang.
const LIMIT: Duration = Duration::from_secs(240);

/// The name families of ARMCI's ABI (ARMCI-MPI's internals, `ARMCII_*`, `gmr_*`, are
/// not part of it).
const PREFIXES: &[&str] = &[
    "ARMCI_",
    "ARMCIX_",
    "PARMCI_",
    "armci_msg",
    "parmci_msg",
    "armci_domain",
];

fn libarmci() -> String {
    let lib = lib_dir().join("libarmci.so");
    lib.to_str().expect("utf-8 path").to_owned()
}

/// Every global ARMCI-MPI defines under ARMCI's names, functions and data alike, is
/// defined by libarmci.so.
#[test]
fn libarmci_exports_every_symbol_armci_mpi_defines() {
    let reference: Vec<String> = symbols(&["-g", "--defined-only"], ARMCI_MPI, true)
        .into_iter()
        .filter(|s| PREFIXES.iter().any(|p| s.starts_with(p)))
        .collect();
    assert!(
        reference.len() > 180,
        "only {} ARMCI symbols in {ARMCI_MPI}; install libarmci-mpi-dev (scripts/setup.sh)",
        reference.len()
    );
    let ours = symbols(&["-D", "--defined-only"], &libarmci(), true);
    let missing: Vec<&String> = reference.iter().filter(|s| !ours.contains(*s)).collect();
    assert!(
        missing.is_empty(),
        "libarmci.so lacks {} of ARMCI-MPI's symbols: {missing:?}",
        missing.len()
    );
}

/// `ARMCI_X` and `PARMCI_X` (and `armci_msg_x`, `parmci_msg_x`) are one function:
/// the alias sits at the implementation's address, so a wrapper's call to
/// `PARMCI_X` reaches the real thing.
#[test]
fn armci_names_alias_the_parmci_implementations() {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(libarmci())
        .output()
        .expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    let addr = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().nth(2) == Some(name))
            .and_then(|l| l.split_whitespace().next())
            .map(str::to_owned)
    };
    let parmci: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("PARMCI_") || s.starts_with("parmci_msg_"))
        .collect();
    assert!(
        parmci.len() >= 61,
        "only {} profiling symbols",
        parmci.len()
    );
    for p in parmci {
        let a = &p[1..]; // PARMCI_X -> ARMCI_X, parmci_msg_x -> armci_msg_x
        assert_eq!(addr(a), addr(p), "{a} is not an alias of {p}");
    }
}

/// A wrapper library defining `ARMCI_Put`, linked before libarmci, counts every put
/// and forwards it to `PARMCI_Put`; the data arrives.
#[test]
fn a_profiling_wrapper_intercepts_armci_put() {
    let imp = Impl::from_env();
    let wrap_src = crate_dir().join("tests/c/wrap_put.c");
    let source = crate_dir().join("tests/c/t_profile.c");
    let prog = match imp {
        Impl::Ninefold => {
            let wrapper = shared_wrapper(&wrap_src);
            let rpath = format!("-Wl,-rpath,{}", wrapper.parent().unwrap().display());
            let wrapper = wrapper.to_str().expect("utf-8 path").to_owned();
            compile(
                imp,
                "t_profile",
                std::slice::from_ref(&source),
                &[&wrapper, &rpath],
            )
        }
        // ARMCI-MPI is a static archive: the wrapper object comes first instead.
        Impl::ArmciMpi => compile(imp, "t_profile", &[source.clone(), wrap_src], &[]),
    };
    let names = expected_tests(&source, imp);
    for np in [2, 4] {
        let out = mpirun(np, &prog, &[], LIMIT);
        assert_all_passed(&format!("t_profile -np {np} ({imp:?})"), &out, &names);
    }
}

/// `wrap_put.c` as a shared library linked against libarmci.
fn shared_wrapper(src: &Path) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("armci-wrap");
    std::fs::create_dir_all(&dir).expect("create the wrapper folder");
    let out = dir.join("libwrapput.so");
    let mut cmd = Command::new("mpicc");
    cmd.args(["-shared", "-fPIC", "-O2", "-Wall"])
        .arg("-I")
        .arg(crate_dir().join("include"))
        .arg(src)
        .arg("-o")
        .arg(&out)
        .arg(lib_dir().join("libarmci.so"));
    let res = run_bounded(cmd, Duration::from_secs(120));
    assert_eq!(res.code, Some(0), "building the wrapper:\n{}", res.both());
    out
}

/// install.sh into a fresh prefix, then a program built only from what pkg-config
/// says about `armci` runs on 2 processes, finding the installed library by soname.
#[test]
fn install_sh_then_pkg_config_builds_a_program() {
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("armci-install");
    let _ = std::fs::remove_dir_all(&prefix);
    let script = crate_dir().join("../../scripts/install.sh");
    let mut cmd = Command::new("bash");
    cmd.arg(&script).arg("--lib").arg(libarmci()).arg(&prefix);
    let res = run_bounded(cmd, Duration::from_secs(60));
    assert_eq!(res.code, Some(0), "install.sh:\n{}", res.both());
    for f in [
        "lib/libarmci.so.0",
        "lib/libarmci.so",
        "lib/pkgconfig/armci.pc",
        "include/armci.h",
        "include/armcix.h",
        "include/message.h",
    ] {
        assert!(prefix.join(f).exists(), "install.sh did not install {f}");
    }

    let pc_dir = prefix.join("lib/pkgconfig");
    let pkg = Command::new("pkg-config")
        .args(["--cflags", "--libs", "armci"])
        .env("PKG_CONFIG_PATH", &pc_dir)
        .output()
        .expect("pkg-config (apt-get install pkg-config)");
    assert!(pkg.status.success(), "pkg-config armci failed");
    let flags = String::from_utf8_lossy(&pkg.stdout).into_owned();
    let prog = prefix.join("t_pkgconfig");
    let mut cc = Command::new("mpicc");
    cc.arg(crate_dir().join("tests/c/t_pkgconfig.c"))
        .arg("-o")
        .arg(&prog)
        .args(flags.split_whitespace());
    let res = run_bounded(cc, Duration::from_secs(120));
    assert_eq!(res.code, Some(0), "mpicc with `{flags}`:\n{}", res.both());

    let ldd = Command::new("ldd")
        .arg(&prog)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .expect("ldd");
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    let installed = prefix.join("lib/libarmci.so.0");
    assert!(
        ldd.contains(&format!("libarmci.so.0 => {}", installed.display())),
        "the program does not load {}:\n{ldd}",
        installed.display()
    );
    let out = mpirun_own_paths(2, &prog, LIMIT);
    assert!(
        out.code == Some(0) && out.stdout.contains("installed libarmci works"),
        "{}",
        out.both()
    );
}
