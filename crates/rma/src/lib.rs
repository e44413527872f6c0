//! ninefold's rma layer: global memory that every proc reads and writes one-sidedly,
//! with ARMCI's semantics.
//!
//! Glossary:
//! - **proc**: one process of the job, named by its world rank, 0 ..< size.
//! - **team**: a set of procs that run collectives together: the world, or a group
//!   ([`Team`]). Team rank `i` is world rank `team.members()[i]`. A [`NodeTeam`]
//!   runs a team's barrier, all-reduce and broadcast on each node's shared memory.
//! - **wire-up**: what the layer needs from the launcher: rank, allgather, barrier,
//!   host identity ([`Wireup`]; [`WorldWireup`] for `nf run`, MPI in the C ABI).
//! - **segment**: one proc's part of a collective allocation: a shared-memory file
//!   mapped by the proc, and by every proc of its domain.
//! - **remote address**: an address in the *target* proc's address space, as the
//!   collective allocation returned it (ARMCI's convention). Each proc keeps a segment
//!   table per proc to translate it to its own mapping, or to check it before sending.
//! - **domain** (node): procs that share memory; they access each other's segments
//!   with load / store / memcpy ([`Domains`]).
//! - **service thread**: a thread per proc that applies other domains' requests to
//!   this proc's memory, so the target never has to call the library for an
//!   operation on its memory to complete (asynchronous progress).
//! - **control segment**: a small shared segment per proc holding the locks that make
//!   accumulates and rmw atomic, and the proc's mutexes; both the direct path and the
//!   service thread use the same words.
//! - **local / remote completion**: a put is locally complete when its source may be
//!   reused, remotely complete when it is applied at the target.
//! - **fence**: waiting for remote completion of everything issued to a proc.
//! - **handle**: names a non-blocking transfer until it is waited for ([`Handle`]).
//!
//! ```no_run
//! let world = nf_core::World::init()?;
//! let rma = nf_rma::Rma::new(nf_rma::WorldWireup::new(&world)?)?;
//! let a = nf_rma::GlobalArray::<f64>::new(&rma, 1000)?;
//! let right = (rma.rank() + 1) % rma.size();
//! a.put(right, 0, &[1.0, 2.0])?;
//! rma.barrier()?;
//! let mut got = [0.0; 2];
//! a.get(rma.rank(), 0, &mut got)?;
//! a.free()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Tests: unit tests and the loom models sit beside the code (`cargo test -p nf-rma`);
//! the tests that run real jobs are `tests/jobs/rma.rs`, built and run as a test of
//! `nf-checks` (`cargo test -p nf-checks --test rma`), whose ranks are `nf-rma-check`,
//! a program of that package that links this crate and `nf-launch`.

mod api;
mod apply;
pub mod array;
pub mod config;
mod direct;
pub mod domain;
pub mod error;
pub mod handle;
mod memory;
mod native;
mod origin;
mod rma;
mod service;
mod shape;
mod shm;
mod stream;
mod table;
pub mod wireup;
pub mod world;
pub mod xfer;

pub use api::coll::Across;
pub use api::team::NodeTeam;
pub use array::{Accumulate, GlobalArray, RmwInt};
pub use config::{OfiMode, RmaConfig, SETTINGS};
pub use domain::{Domains, Route};
pub use error::RmaError;
pub use handle::Handle;
pub use rma::Rma;
pub use shm::room::Limit;
pub use wireup::{Team, Wireup, WireupError};
pub use world::{WorldTeam, WorldWireup};
pub use xfer::{IoVec, Kind, RmwOp, Scale, Shape, Xfer, MAX_STRIDE_LEVELS};
