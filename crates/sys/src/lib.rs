//! Operating-system helpers that every layer of ninefold shares, each with one owner
//! here (as UCX keeps its OS wrappers in `ucs`), so two layers cannot disagree.
//!
//! | module | job |
//! |---|---|
//! | [`activation`] | listening sockets passed by a service manager (systemd) |
//! | [`accept`] | accept threads, and stopping them without connecting to them |
//! | [`act_as`] | acting as another user on one thread for a moment (connecting with a user's rights) |
//! | [`cgroup`] | jobs in cgroups (v2), so killing a job reaches every process it made |
//! | [`fds`] | descriptors a daemon inherited: close-on-exec at start |
//! | [`file`](mod@file) | reading the small files settings name, bounded and without blocking |
//! | [`host`] | who shares memory with whom: this process's host identity |
//! | [`hash`] | a hash that is equal in every process and every build (names, cookies) |
//! | [`setting`] | one `NF_*` setting as `nf config` lists it; each crate declares its own |
//! | [`shim`] | loading a C shim with `dlopen` and checking its interface version |
//! | [`spawn`] | starting a program as another user, in a session of its own with nothing inherited, with limits |

pub mod accept;
pub mod act_as;
pub mod activation;
pub mod cgroup;
pub mod cpus;
pub mod fds;
pub mod file;
pub mod hash;
pub mod host;
pub mod setting;
pub mod shim;
pub mod spawn;

pub use host::SETTINGS;
