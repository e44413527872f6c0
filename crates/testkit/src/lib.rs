//! Test fixtures for ninefold.
//!
//! - [`Netns`]: K Linux network namespaces that stand for the K hosts of a multi-host
//!   job, joined by a bridge, removed again when the fixture is dropped (also when the
//!   test panics). Needs root and `ip` (iproute2).
//!
//! Leftovers of a test process that was killed outright (Drop never ran) are removed by
//! `tests/netns/cleanup.sh` at the repository root.

#![warn(missing_docs)]

mod netns;

pub use netns::{Netns, NetnsError, MAX_HOSTS, NAME_PREFIX};
