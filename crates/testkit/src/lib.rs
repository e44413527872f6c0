//! Test fixtures for ninefold.
//!
//! - [`Netns`]: K Linux network namespaces that stand for the K hosts of a multi-host
//!   job, joined by a bridge, removed again when the fixture is dropped (also when the
//!   test panics). Needs root and `ip` (iproute2).
//! - [`output_within`]: run a command to completion, or fail the test after a deadline.
//! - [`exited_within`]: wait for a process that is not a child (a detached server) to
//!   exit, with a deadline.
//! - [`wait_for`], [`eventually`]: wait for something a test can observe (a readiness
//!   signal), with a deadline that only catches a hang.
//! - [`cdylib_dir`]: where a crate's freshly built C library is, for its C tests.
//! - [`leftovers_are_gone`]: a job's scratch folder is empty once it is over.
//! - [`users`]: unprivileged accounts besides root, and acting as one on one thread.
//! - `ninep` (features `ninep-codec`, `ninep`): sample 9P messages, a frame mutator, a
//!   tree served on a fresh socket and a raw-frame connection to it.
//!
//! Leftovers of a test process that was killed outright (Drop never ran) are removed by
//! `tests/netns/cleanup.sh` at the repository root.

mod bounded;
mod cdylib;
mod leftovers;
mod netns;
#[cfg(feature = "ninep-codec")]
pub mod ninep;
mod ready;
pub mod users;

pub use bounded::{exited_within, finish_within, output_within};
pub use cdylib::cdylib_dir;
pub use leftovers::leftovers_are_gone;
pub use netns::{listed, Netns, NetnsError, MAX_HOSTS, NAME_PREFIX};
pub use ready::{eventually, wait_for};
