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
//! 4. The profiling interface: every `shmem_` function `shmem.h` declares is also
//!    `pshmem_`, at the same address (the linker's `--defsym`; a C alias attribute
//!    cannot name a function defined in Rust), so a tool defining `shmem_put` reaches
//!    the library through `pshmem_put`. `include/pshmem.h` declares them.

use std::path::PathBuf;

fn main() {
    // 1, 2, 3
    nf_buildkit::link_c_side(None, "nfshmem_c", "libshmem.so");
    // 4
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let include = dir.join("include");
    let text = nf_buildkit::expand_header(&include.join("shmem.h"), &include, None)
        .unwrap_or_else(|e| panic!("libshmem's profiling names: {e}"));
    for (name, _) in nf_buildkit::function_declarations(&text, |n| n.starts_with("shmem_")) {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--defsym=p{name}={name}");
    }
}
