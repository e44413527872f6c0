//! Shared memory of the rma layer: segment files ([`map`]), ranges of the process
//! turned into segments in place ([`adopt`]), and the control segment
//! layout with its locks ([`control`], [`lock`]), whose atomics come from `sync.rs`:
//! std's, or loom's when `loom_tests.rs` model-checks the locks.
//!
//! Naming and lifecycle (the same rules as the transport's receive segments, and the
//! same helpers: `nf_transport::shm::segment`):
//! 1. A proc creates its file `nf-<job>-<host>-rma<rank>-<n>` in `NF_SHM_DIR`
//!    (`n`: the proc's allocation counter; `ctl` for the control segment), sized and
//!    zero-filled by the kernel, mode 0600.
//! 2. Its name travels in a collective (allgather); the other procs of its domain open
//!    and map it; a barrier follows.
//! 3. The owner unlinks the name. From here on a SIGKILLed job leaves nothing: the
//!    memory lives exactly as long as some process maps it.
//! 0. Before any of it, every proc measures the room on its host ([`room`]) for what
//!    the host's procs ask for together; if it is short, nobody creates anything.
//! 4. A job killed between 1 and 3 leaves files; `nf run` removes `nf-<job>-*` when the
//!    job ends, and the next job's first proc of each domain reclaims files older than
//!    a minute (`reclaim_stale`).

pub(crate) mod adopt;
pub(crate) mod aligned;
pub(crate) mod control;
pub(crate) mod lock;
#[cfg(all(test, loom))]
mod loom_tests;
pub(crate) mod map;
pub(crate) mod room;
pub(crate) mod sync;
