//! libshmem: OpenSHMEM 1.5 for C programs over ninefold's rma layer (`nf-rma`).
//!
//! Glossary:
//! - **PE**: processing element, one process of the job; PE numbers are world ranks.
//! - **symmetric heap**: memory every PE has at the same offsets. At `shmem_init`
//!   each PE joins one collective allocation of `SHMEM_SYMMETRIC_SIZE` bytes
//!   ([`size`]) through `Rma::malloc`; `shmem_malloc` and friends carve it with a
//!   deterministic allocator ([`heap`]), so the same calls in the same order give the
//!   same offset on every PE.
//! - **symmetric static data**: the executable's global and static variables (data
//!   and bss), made an rma segment in place at `shmem_init` ([`statics`]).
//! - **symmetric address**: an address in the caller's own part of the heap or of
//!   the static data. For PE `p` it becomes `base[p] + (addr - base[me])`, the
//!   address in `p`'s space the rma layer expects ([`state::State::remote`]).
//! - **C side** (`csrc/`, built by `build.rs` with the system C compiler, no MPI):
//!   the typed families (`shmem_int_put`, `shmem_long_atomic_fetch_add`,
//!   `shmem_uint64_wait_until_any`, …), each one macro over a type table of
//!   `include/shmem.h`, ending in a few untyped Rust functions ([`xfer`], [`amo`],
//!   [`sync`]).
//!
//! Design rules:
//! 1. The job is joined with `nf_core::World::init` (`nf run`, PMIx under `mpirun` /
//!    `oshrun`, PMI-2 under hydra / `srun`), and the rma layer over it
//!    (`nf_rma::WorldWireup`); no MPI.
//! 2. Same host: put, get and atomics go straight to the peer's heap mapping,
//!    found once at `shmem_init` with `Rma::local_ptr` (memcpy, and one hardware
//!    atomic, `RmwOp::apply`); the C side does it inline for the heap, from a table
//!    [`state`] publishes (`csrc/internal.h`), and hands everything else here;
//!    `shmem_ptr` returns a pointer into the mapping. Other hosts: the rma routes
//!    (ofi native RMA, the service thread), whose
//!    service thread applies requests without the target's help, so a PE blocked in
//!    `shmem_wait_until` never stalls others' atomics on its memory.
//! 3. Every atomic is one rma read-modify-write on a 4- or 8-byte integer
//!    (`nf_rma::RmwOp`), whatever the C type: the same hardware atomics on both paths.
//! 4. Blocking puts return once the source may be reused; `shmem_quiet` and
//!    `shmem_fence` make them remotely complete (`Rma::all_fence`, or in C a fence
//!    alone while no call has reached the Rust side since the last); `_nbi` calls
//!    complete before they return, which the specification allows.
//! 5. Heap calls are collective: their arguments are allgathered first (any
//!    difference is an error naming the PEs and the values), and they end in a
//!    barrier, so no PE writes into a block another PE is still zeroing or copying.
//! 6. Errors (a PE that does not exist, an address neither in the symmetric heap nor
//!    in the static data, an allocation larger than what is left, a collective with
//!    inconsistent arguments, executables of different static data sizes in one
//!    job, a call before `shmem_init`) print `libshmem: PE <me>: <call>: <what>` on stderr
//!    and end the process with status 1; the launcher then stops the job naming that
//!    PE ([`error::fatal`]). OpenSHMEM has no error returns to recover with.
//! 7. The state is one process-wide pointer. Granted `SHMEM_THREAD_SINGLE` or
//!    `_FUNNELED` (`shmem_init`), only the thread that called `shmem_init` may use it
//!    (the C fast path checks the same thread); granted `_SERIALIZED` or `_MULTIPLE`
//!    (`shmem_init_thread` grants what it is asked), any thread may, and the Rust
//!    side's calls take turns ([`serial`]: `Rma` is single-threaded).
//! 8. Static data is an ordinary rma segment (`Rma::adopt` maps it in place), so
//!    every path reaches it as it reaches the heap; translation looks at the heap
//!    first, so heap addresses cost what they did before static data existed.
//!
//! Teams (`csrc/team.c`: splits, a bounded table, a members-only barrier on
//! symmetric words reserved at start-up, [`team`]) and collectives on any team
//! (`csrc/coll.c`, which the 1.4 active-set forms of `csrc/activeset.c` share) are
//! in C over the library's gets, puts and atomics; contexts share the default's
//! path (`csrc/ctx.c`). The other deprecated 1.4 names (`start_pes`, `shmalloc`,
//! `shmem_long_finc`, …) are in `csrc/compat.c`.

pub mod amo;
pub mod error;
pub mod heap;
pub mod memory;
pub mod serial;
pub mod setup;
pub mod size;
pub mod state;
pub mod statics;
pub mod sync;
pub mod team;
pub mod xfer;
