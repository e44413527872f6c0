//! ninefold's core runtime: ranks, active messages, progress, collectives.
//!
//! Glossary:
//! - **rank**: one process of a job, numbered 0 ..< size.
//! - **world**: this rank's handle on the job ([`World`]).
//! - **active message (AM)**: a message naming a handler that runs on the receiver
//!   with the message's small header and payload ([`Am`]).
//! - **progress**: polling the transports and running handlers; nothing arrives
//!   unless someone polls ([`World::poll`], [`World::wait_until`], collectives).
//! - **eager / rendezvous**: small payloads are copied through shared frames;
//!   large ones are read by the receiver straight out of the sender's buffer.
//! - **collective**: an operation every rank calls in the same order (barrier,
//!   broadcast, allreduce).
//!
//! ```no_run
//! let world = nf_core::World::init()?;
//! world.register(1, |w, am| println!("rank {} got {} B from {}", w.rank(), am.payload.len(), am.src))?;
//! world.barrier()?;
//! world.send((world.rank() + 1) % world.size(), 1, &[], b"hello")?;
//! world.finalize()?;
//! # Ok::<(), nf_core::CoreError>(())
//! ```
//!
//! Tests: unit tests sit beside the code (`cargo test -p nf-core`); the tests that run
//! real jobs are in `tests/jobs/` (world, hosts, bootstrap, calibrate), built and run
//! as tests of `nf-checks` (`cargo test -p nf-checks`), because the ranks they start
//! are `nf-core-check`, a program of that package that links this crate and
//! `nf-launch` above it.

pub mod am;
pub mod bootstrap;
mod buf;
pub mod calibrate;
pub mod collectives;
pub mod config;
pub mod error;
mod lanes;
mod liveness;
pub mod log;
mod net;
mod netconf;
pub mod netroute;
mod order;
pub mod peers;
mod progress;
mod proto;
mod protocol;
pub mod settings;
pub mod tune;
pub mod wait;
mod wireup;
pub mod world;

pub use am::{Am, HandlerId, Reserved, RESERVED_BASE};
pub use calibrate::RndvSource;
pub use collectives::{ReduceOp, Reducible};
pub use config::{Config, WaitMode, SETTINGS};
pub use error::CoreError;
pub use protocol::MAX_AM_HEADER;
pub use world::{RndvStats, StripeStats, World};
