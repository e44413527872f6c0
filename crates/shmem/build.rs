//! Builds the C side of libshmem (`csrc/`: the typed families the OpenSHMEM API
//! spells out once per type, generated from the type tables of `include/shmem.h`) and
//! links it whole into the library.
//!
//! 1. Compile `csrc/*.c` with the system C compiler (`$CC`, else `cc`; no MPI: the
//!    job is joined through `nf_core::World`) into a static archive, linked with
//!    `+whole-archive` so every `shmem_*` function lands in the library although no
//!    Rust code calls it.
//! 2. Export the C names through `exports.map`, next to the version script rustc
//!    writes for the Rust names.
//! 3. Give the library the soname `libshmem.so`, the name `-lshmem` finds.

use std::env;
use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    println!("cargo:rerun-if-changed=csrc");
    println!("cargo:rerun-if-changed=include");
    println!("cargo:rerun-if-changed=exports.map");

    let mut sources: Vec<PathBuf> = std::fs::read_dir(dir.join("csrc")) // 1
        .expect("read csrc/")
        .map(|e| e.expect("csrc entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    sources.sort();
    cc::Build::new()
        .files(&sources)
        .include(dir.join("include"))
        .include(dir.join("csrc"))
        .flag("-std=gnu11")
        .flag("-fvisibility=default")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .cargo_metadata(false)
        .compile("nfshmem_c");
    let out = env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rustc-link-search=native={out}");
    println!("cargo:rustc-link-lib=static:+whole-archive=nfshmem_c");

    println!(
        // 2
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        dir.join("exports.map").display()
    );
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libshmem.so"); // 3
}
