//! Builds the libfabric shim of the `ofi` transport (`src/ofi/shim/nf_ofi_shim.c`) into
//! its own shared object, `$OUT_DIR/libnf_ofi_shim.so`, linked against `-lfabric`.
//!
//! The crate itself never links libfabric: the shim is `dlopen`ed at run time, so the
//! crate builds (and its other transports work) on machines without libfabric.
//! 1. The headers (`<rdma/fabric.h>`, from Debian's `libfabric-dev`) are probed; when
//!    they are missing nothing is built and `NF_OFI_UNAVAILABLE` carries the reason.
//! 2. Otherwise the shim is compiled with the target's C compiler (the `cc` crate picks
//!    it); its path is passed to the crate as `NF_OFI_SHIM_BUILT`. A compile failure is a
//!    warning plus `NF_OFI_UNAVAILABLE`, not a failed build.

use std::env;
use std::path::{Path, PathBuf};

const SHIM: &str = "src/ofi/shim/nf_ofi_shim.c";

fn main() {
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-changed=build.rs");
    for var in ["CC", "CFLAGS", "CPATH", "C_INCLUDE_PATH", "LIBRARY_PATH"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    match build(&out) {
        Ok(so) => println!("cargo:rustc-env=NF_OFI_SHIM_BUILT={}", so.display()),
        Err(why) => {
            println!("cargo:warning=ofi transport disabled: {why}");
            println!("cargo:rustc-env=NF_OFI_UNAVAILABLE={why}");
        }
    }
}

/// Steps 1 and 2 above; returns the shared object's path, or why there is none.
fn build(out: &Path) -> Result<PathBuf, String> {
    if !nf_buildkit::has_header("rdma/fabric.h", out)? {
        return Err(
            "built without libfabric-dev (no <rdma/fabric.h>); install it \
             (scripts/setup.sh) and rebuild"
                .into(),
        );
    }
    let so = out.join("libnf_ofi_shim.so");
    nf_buildkit::compile_shim(SHIM, &so, &["-lfabric".into()], "nf_ofi_shim")
}
