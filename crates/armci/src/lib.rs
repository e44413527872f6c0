//! libarmci: ARMCI for C programs, and for Debian's prebuilt Global Arrays, over
//! ninefold's rma layer (`nf-rma`).
//!
//! Glossary:
//! - **ARMCI**: the one-sided interface Global Arrays is written on;
//!   this library is ABI-compatible with ARMCI-MPI 0.3 as Debian builds it.
//! - **C side** (`csrc/`, built by `build.rs` with `mpicc`): everything that touches
//!   MPI types — init, groups (real MPI communicators), topology, `armci_msg_*`,
//!   `armci_tcgmsg_*`, aborting. MPI types differ between MPI libraries, so no Rust
//!   code names them.
//! - **Rust side** (this crate): the one-sided calls. Each `ARMCI_*` function here
//!   checks its C arguments in ARMCI's words ([`args`]), builds an `nf_rma::Xfer`
//!   and runs it ([`issue`]); the rma layer moves the bytes (load / store within a
//!   node, a service thread across nodes, so targets need not call the library).
//! - **PARMCI**: the profiling names. Every exported `PARMCI_X` here is the
//!   implementation of `ARMCI_X`, which the linker makes an alias of it (`build.rs`),
//!   so a profiling library can define `ARMCI_X` and call `PARMCI_X`.
//! - **wire-up**: the rma layer's collectives, here MPI calls on a group's
//!   communicator made by the C side ([`wireup`]).
//! - **state**: the process's `Rma` and handle table, between `ARMCI_Init` and
//!   `ARMCI_Finalize` ([`state`]).
//! - **node collectives**: barriers, all-reduces and broadcasts of the world through
//!   the node's shared memory, MPI only among the nodes' leaders ([`coll`], the
//!   operators in [`reduce`]; `csrc/coll.c` chooses the path).
//! - **group collectives**: the same for a group holding part of a node, through
//!   the rma layer's team collectives (`nf_rma::NodeTeam`: slots and step numbers
//!   of the group's own; also [`coll`]).
//!
//! Every failure of an ARMCI call is fatal, as in ARMCI: the message names the call
//! and the argument, and the job is aborted with a non-zero code ([`ffi::fatal`]).
//! The public headers are in `include/` (one per capability, `armci.h` gathers them).

pub mod args;
pub mod coll;
pub mod contig;
pub mod ffi;
pub mod issue;
pub mod memory;
pub mod nonblocking;
pub mod reduce;
pub mod state;
pub mod strided;
pub mod sync;
pub mod vector;
pub mod wireup;
