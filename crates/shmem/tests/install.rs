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

/// Whether `name` is an OpenSHMEM name (the library's own helpers start with `nf_`).
fn public(name: &str) -> bool {
    ["shmem_", "shmemx_", "_my_pe", "_num_pes", "start_pes", "sh"]
        .iter()
        .any(|p| name.starts_with(p))
}

/// The functions `shmem.h` declares, as (name, declaration), in the header's order.
fn declared() -> Vec<(String, String)> {
    let include = crate_dir().join("include");
    let cc = common::cc_name();
    let text = nf_buildkit::expand_header(&include.join("shmem.h"), &include, Some(&cc)).unwrap();
    nf_buildkit::function_declarations(&text, public)
}

/// Every function `shmem.h` declares is defined and exported by `libshmem.so`, so a
/// program that compiles also links, and every `shmem_` one under its profiling name
/// `pshmem_` too, at the same address; the library exports no public name the header
/// does not declare (its own helpers start with `nf_`).
#[test]
fn every_function_the_header_declares_is_in_the_library() {
    let declared: std::collections::BTreeSet<String> =
        declared().into_iter().map(|(name, _)| name).collect();
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
    let listing = String::from_utf8_lossy(&nm.stdout);
    let defined: std::collections::BTreeMap<&str, &str> = listing
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w.len() == 3).then(|| (w[2], w[0]))
        })
        .collect();
    let missing: Vec<_> = declared
        .iter()
        .filter(|n| !defined.contains_key(n.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "declared but not in libshmem.so: {missing:?}"
    );
    let unprofiled: Vec<_> = declared
        .iter()
        .filter(|n| n.starts_with("shmem_"))
        .filter(|n| defined.get(format!("p{n}").as_str()) != defined.get(n.as_str()))
        .collect();
    assert!(
        unprofiled.is_empty(),
        "no pshmem_ name at the same address: {unprofiled:?}"
    );
    // A pshmem_ name counts as its shmem_ function.
    let extra: Vec<_> = defined
        .keys()
        .map(|n| {
            n.strip_prefix('p')
                .filter(|r| r.starts_with("shmem_"))
                .unwrap_or(n)
        })
        .filter(|n| public(n) && !declared.contains(*n))
        .collect();
    assert!(extra.is_empty(), "exported but not declared: {extra:?}");
}

/// `include/pshmem.h` as it must read: every `shmem_` declaration of `shmem.h` under
/// its `pshmem_` name.
fn pshmem_h() -> String {
    let mut h = [
        "/* pshmem.h: the OpenSHMEM profiling interface's name-shifted entry points, one",
        " * per function of shmem.h (section 10 of the specification). Generated from",
        " * shmem.h by crates/shmem/tests/install.rs (NF_REGENERATE=1 cargo test -p",
        " * nf-shmem --test install); do not edit. */",
        "#ifndef NF_PSHMEM_H",
        "#define NF_PSHMEM_H",
        "",
        "#include <shmem.h>",
        "",
        "#ifdef __cplusplus",
        "extern \"C\" {",
        "#endif",
        "",
        "",
    ]
    .join("\n");
    for (name, decl) in declared()
        .into_iter()
        .filter(|(n, _)| n.starts_with("shmem_"))
    {
        h.push_str(&decl.replacen(&format!("{name}("), &format!("p{name}("), 1));
        h.push_str(";\n");
    }
    h.push_str("\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* NF_PSHMEM_H */\n");
    h
}

/// The committed `pshmem.h` is what `shmem.h` implies (regenerated with
/// `NF_REGENERATE=1`), and a program calling through it and a tool's `shmem_` wrapper
/// builds and runs.
#[test]
fn pshmem_h_matches_shmem_h_and_a_profiling_wrapper_works() {
    let path = crate_dir().join("include/pshmem.h");
    let want = pshmem_h();
    if std::env::var_os("NF_REGENERATE").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "include/pshmem.h is stale: NF_REGENERATE=1 cargo test -p nf-shmem --test install"
    );
    let prog = common::compile("t_profile");
    let run = nf_run(2, &prog, &[], &[]);
    assert_all_passed("t_profile -n 2", "t_profile", &run);
}
