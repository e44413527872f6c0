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
