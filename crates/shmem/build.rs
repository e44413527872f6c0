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

fn main() {
    // 1, 2, 3
    nf_buildkit::link_c_side(None, "nfshmem_c", "libshmem.so");
}
