//! Builds the PMIx shim (`src/pmix/shim/nf_pmix_shim.c`) into its own shared object,
//! `$OUT_DIR/libnf_pmix_shim.so`, linked against libpmix.
//!
//! The crate never links libpmix itself: the shim is `dlopen`ed at run time, only by a
//! rank that an Open MPI / PMIx launcher started, so everything else builds and runs
//! on machines without PMIx.
//! 1. `pkg-config pmix` (Debian's `libpmix-dev`) gives the include and library paths;
//!    without it nothing is built and `NF_PMIX_UNAVAILABLE` carries the reason.
//! 2. The shim is compiled (`nf_buildkit::compile_shim`) with an rpath to libpmix's
//!    directory; its path reaches the crate as `NF_PMIX_SHIM_BUILT`. A compile
//!    failure is a warning plus `NF_PMIX_UNAVAILABLE`.

use std::env;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

const SHIM: &str = "src/pmix/shim/nf_pmix_shim.c";

fn main() {
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["CC", "CFLAGS", "PKG_CONFIG_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build(&out) {
        Ok(so) => println!("cargo:rustc-env=NF_PMIX_SHIM_BUILT={}", so.display()),
        Err(why) => {
            println!("cargo:warning=PMIx bootstrap disabled: {why}");
            println!("cargo:rustc-env=NF_PMIX_UNAVAILABLE={why}");
        }
    }
}

/// Steps 1 and 2 above; returns the shared object's path, or why there is none.
fn build(out: &Path) -> Result<PathBuf, String> {
    let pmix = pkg_config::Config::new()
        .cargo_metadata(false)
        .env_metadata(false)
        .probe("pmix")
        .map_err(|e| {
            format!("built without libpmix-dev (pkg-config pmix: {e}); install it (scripts/setup.sh) and rebuild")
                .replace('\n', " ")
        })?;
    let mut extra: Vec<OsString> = Vec::new();
    for dir in &pmix.include_paths {
        extra.push(format!("-I{}", dir.display()).into());
    }
    for dir in &pmix.link_paths {
        extra.push(format!("-L{}", dir.display()).into());
        extra.push(format!("-Wl,-rpath,{}", dir.display()).into());
    }
    extra.push("-lpmix".into());
    nf_buildkit::compile_shim(
        SHIM,
        &out.join("libnf_pmix_shim.so"),
        &extra,
        "nf_pmix_shim",
    )
}
