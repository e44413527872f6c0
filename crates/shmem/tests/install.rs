//! `scripts/install.sh` gives an install that programs build against with the
//! `nfshcc` wrapper or with `pkg-config ninefold-shmem`, and that runs without the
//! build tree's library paths.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{assert_all_passed, crate_dir, lib_dir, nf_run};
use nf_testkit::output_within;

#[test]
fn install_sh_then_nfshcc_and_pkg_config_build_programs_that_run() {
    let prefix = Path::new(env!("CARGO_TARGET_TMPDIR")).join("shmem-install");
    let _ = std::fs::remove_dir_all(&prefix);
    let out = output_within(
        Command::new("bash")
            .arg(crate_dir().join("../../scripts/install.sh"))
            .arg("--shmem-lib")
            .arg(lib_dir().join("libshmem.so"))
            .arg(&prefix),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "install.sh: {out:?}");
    for f in [
        "lib/libshmem.so",
        "include/ninefold-shmem/shmem.h",
        "lib/pkgconfig/ninefold-shmem.pc",
        "bin/nfshcc",
    ] {
        assert!(prefix.join(f).exists(), "install.sh did not install {f}");
    }
    // Only what was asked for: no libarmci.
    assert!(!prefix.join("lib/libarmci.so").exists());

    let src = crate_dir().join("tests/c/t_sync.c");
    let wrapped = prefix.join("t_sync_nfshcc");
    let out = output_within(
        Command::new(prefix.join("bin/nfshcc"))
            .args(["-std=gnu11", "-O1"])
            .arg(&src)
            .arg("-o")
            .arg(&wrapped),
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "nfshcc: {out:?}");

    let pkg = Command::new("pkg-config")
        .args(["--cflags", "--libs", "ninefold-shmem"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .expect("pkg-config (apt-get install pkg-config)");
    assert!(pkg.status.success(), "pkg-config ninefold-shmem failed");
    let flags = String::from_utf8_lossy(&pkg.stdout).into_owned();
    let by_pc = prefix.join("t_sync_pc");
    let out = output_within(
        Command::new("cc")
            .args(["-std=gnu11", "-O1"])
            .arg(&src)
            .arg("-o")
            .arg(&by_pc)
            .args(flags.split_whitespace()),
        Duration::from_secs(120),
    );
    assert!(out.status.success(), "cc with `{flags}`: {out:?}");

    let installed = prefix.join("lib/libshmem.so");
    for prog in [&wrapped, &by_pc] {
        let ldd = Command::new("ldd")
            .arg(prog)
            .env_remove("LD_LIBRARY_PATH")
            .output()
            .expect("ldd");
        let ldd = String::from_utf8_lossy(&ldd.stdout);
        assert!(
            ldd.contains(&format!("libshmem.so => {}", installed.display())),
            "{} does not load {}:\n{ldd}",
            prog.display(),
            installed.display()
        );
        let run = nf_run(2, prog, &[], &[("LD_LIBRARY_PATH", "")]);
        assert_all_passed(&format!("{} -n 2", prog.display()), "t_sync", &run);
    }
}

/// Every function `shmem.h` declares is defined and exported by `libshmem.so`, so a
/// program that compiles also links; and the library exports no public name the header
/// does not declare (its own helpers start with `nf_`).
#[test]
fn every_function_the_header_declares_is_in_the_library() {
    let dir = tempfile::tempdir().unwrap();
    let expanded = dir.path().join("shmem.i");
    let pre = output_within(
        Command::new(common::cc_name())
            .args(["-std=gnu11", "-E", "-P", "-I"])
            .arg(crate_dir().join("include"))
            .arg(crate_dir().join("include/shmem.h"))
            .arg("-o")
            .arg(&expanded),
        Duration::from_secs(60),
    );
    assert!(pre.status.success(), "cc -E shmem.h: {pre:?}");
    let text = std::fs::read_to_string(&expanded).unwrap();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let public = |name: &str| {
        ["shmem_", "shmemx_", "_my_pe", "_num_pes", "start_pes", "sh"]
            .iter()
            .any(|p| name.starts_with(p))
    };
    // A name followed by `(` after preprocessing: a declared function.
    let mut declared = std::collections::BTreeSet::new();
    for (i, _) in text.match_indices('(') {
        let before = text[..i].trim_end();
        let start = before.rfind(|c: char| !ident(c)).map_or(0, |s| s + 1);
        let name = &before[start..];
        if public(name) {
            declared.insert(name.to_owned());
        }
    }
    assert!(
        declared.len() > 1000,
        "only {} declared names",
        declared.len()
    );
    // `output()` reads while nm writes (its listing outgrows a pipe); nm ends by itself.
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libshmem.so"))
        .output()
        .expect("nm");
    assert!(nm.status.success(), "nm: {nm:?}");
    let defined: std::collections::BTreeSet<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
        .collect();
    let missing: Vec<_> = declared.difference(&defined).collect();
    assert!(
        missing.is_empty(),
        "declared but not in libshmem.so: {missing:?}"
    );
    let extra: Vec<_> = defined
        .iter()
        .filter(|n| public(n) && !declared.contains(*n))
        .collect();
    assert!(extra.is_empty(), "exported but not declared: {extra:?}");
}
