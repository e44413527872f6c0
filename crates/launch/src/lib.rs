//! The launcher behind `nf run -n N [--timeout S] [--tag-output] [--bind-to core|none] -- PROG ARGS…`
//! and, across hosts, `nf run --hosts h1:2,h2:2 [--remote TEMPLATE] [--pmi-bind IP] -- PROG ARGS…`.
//!
//! [`run`] starts `nprocs` copies of a program on this machine, [`run_on_hosts`] places
//! them on several hosts ([`hosts`]), starting those on other hosts through a
//! [`RemoteStart`] ([`remote`]: a command prefix such as `ssh {host}`, or `/xcpu`
//! sessions — one per host down the tree, each running the host's starter
//! [`host_ranks`], or one per rank); both serve the ranks' wire-up ([`nf_pmi`]) and
//! supervise them:
//!
//! - every rank gets the environment contract of [`nf_pmi::env`] (`NF_RANK`, `NF_SIZE`,
//!   `NF_LOCAL_RANK`, `NF_LOCAL_SIZE`, `NF_JOB_ID`, `NF_PMI_ADDR`; `NF_PMI_TIMEOUT` passes
//!   through from the caller's environment or [`LaunchSpec::env`]); in a multi-host job
//!   also `NF_HOST`, and `NF_PMI_ADDR=tcp:IP:PORT` with `NF_PMI_SECRET`;
//! - the job succeeds when every rank exits with 0; the first rank that exits non-zero or
//!   dies from a signal, a timeout, a SIGINT / SIGTERM to the launcher, or a rank's PMI
//!   abort stops every rank (SIGTERM, then SIGKILL after 2 s) — see [`Outcome`]; in a
//!   multi-host job a failure names the rank's host, and a host whose ranks all died
//!   together is reported as lost;
//! - afterwards the PMI socket is removed and an optional hook ([`run_with`]) gets the job
//!   id, so layers that leave files behind (shared-memory segments) can clean up.
//!
//! Launch errors ([`LaunchError`]: no ranks, program not found, hosts that do not add up…)
//! are reported before anything is started. Logs go through `tracing`; the only output of
//! its own is the tagged forwarding of rank output (`[rank] `, or `[rank@host] `).
//!
//! Tests: unit tests sit beside the code (`cargo test -p nf-launch`); the tests that
//! launch real ranks are `tests/jobs/launch.rs` and `tests/jobs/hosts.rs`, built and
//! run as tests of `nf-checks` (`cargo test -p nf-checks --test launch`), whose ranks
//! are the check programs of `crates/checks`.

pub mod capacity;
pub mod elf;
mod error;
pub mod host_ranks;
pub mod hosts;
mod job;
mod outcome;
pub mod output;
pub mod remote;
mod signals;
mod spawn;
mod spec;
mod supervise;
mod xcpu;
mod xcpu_tree;

pub use error::LaunchError;
pub use hosts::{HostSlots, Hosts, RemoteTemplate};
pub use job::{run, run_on_hosts, run_with};
pub use outcome::{signal_name, Cause, JobReport, Outcome};
pub use remote::{RemoteStart, Started, XcpuStart};
pub use spec::{resolve_program, Binding, LaunchSpec};
