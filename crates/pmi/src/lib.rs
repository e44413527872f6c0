//! PMI-style wire-up for ninefold jobs: every rank learns who it is from its environment
//! and exchanges small strings with the other ranks through the launcher.
//!
//! # Glossary
//!
//! - **rank**: one process of a job, numbered `0..size`.
//! - **launcher**: the process that starts the ranks (`nf run`) and serves this protocol
//!   with a [`Server`].
//! - **put / get**: store a string under a key in the job-wide key-value space / read one.
//! - **fence**: a job-wide barrier. Every put that any rank made before its fence is
//!   visible to every rank's gets after that fence. Fences are counted in *epochs*
//!   (1, 2, …) and may be repeated as often as needed.
//!
//! # Environment contract
//!
//! The launcher gives every rank the variables named in [`mod@env`]; [`Client::from_env`]
//! reads them. Without `NF_PMI_ADDR` a program runs as a singleton (rank 0 of 1) and
//! `Client::from_env` returns `Ok(None)`.
//!
//! # Wire protocol
//!
//! A rank talks to the launcher over the stream named by `NF_PMI_ADDR` ([`PmiAddr`]): a
//! unix socket for a job on one machine, TCP (`tcp:IP:PORT`) for a job across hosts.
//! The protocol is the same on both. Each message is one line of JSON terminated by `\n`; every request gets exactly one
//! response, in order. Requests carry an `"op"` field, responses a `"status"` field:
//!
//! | request | response |
//! |---|---|
//! | `{"op":"hello","rank":R,"size":N,"job_id":"J","secret":"S"}` (first, once; `secret` only when `NF_PMI_SECRET` is set) | `ok` |
//! | `{"op":"put","key":"K","value":"V"}` | `ok` |
//! | `{"op":"fence","epoch":E}` (E = 1, 2, …) | `ok` once all ranks reached fence E |
//! | `{"op":"get","key":"K"}` | `{"status":"value","value":"V"}` or `{"status":"not_found","key":"K"}` |
//! | `{"op":"abort","message":"M"}` | `ok`; the launcher then tears the job down |
//! | `{"op":"finalize"}` | `ok`; the server closes the connection |
//!
//! `ok` is `{"status":"ok"}`. Any request may instead get `{"status":"error","message":"…"}`
//! (malformed JSON, request before `hello`, a fence that can never complete because a rank
//! left, …). Limits, checked by both sides: keys are 1 to [`MAX_KEY_LEN`] bytes, values
//! and abort messages at most [`MAX_VALUE_LEN`] bytes, a line at most [`MAX_LINE_LEN`]
//! bytes. A line over the limit gets an error response and the connection is closed.
//! A put overwrites an earlier value under the same key (last writer wins).
//!
//! Over TCP the server is strict about strangers: the first line must be a hello with
//! the job's secret, at most [`MAX_HELLO_LEN`] bytes, within [`HELLO_TIMEOUT`]; anything
//! else is answered with one error line and closed (see [`Server`]).
//!
//! # Other launchers
//!
//! A program started by another launcher wires up through it instead: [`pmix`] for
//! PMIx (Open MPI's `mpirun`), [`pmi2`] for the PMI-2 wire protocol (Slurm's
//! `srun --mpi=pmi2`, MPICH's hydra). The core picks one from the environment.
//!
//! Every client call has a deadline (`NF_PMI_TIMEOUT`, default 60 s) and returns a
//! [`PmiError`] on timeout, a closed socket, or an error response; it never hangs.

mod addr;
pub mod bootstrap;
mod client;
mod conn;
pub mod env;
mod error;
pub mod pmi2;
pub mod pmix;
pub mod protocol;
pub mod secret;
mod server;
mod session;
mod sock;
mod store;

pub use addr::{PmiAddr, TCP_PREFIX};
pub use bootstrap::{Bootstrap, Singleton};
pub use client::Client;
pub use env::JobEnv;
pub use error::PmiError;
pub use protocol::{MAX_HELLO_LEN, MAX_KEY_LEN, MAX_LINE_LEN, MAX_VALUE_LEN};
pub use server::{Listen, Server, ServerEvent, HELLO_TIMEOUT};

use nf_sys::setting::Setting;

/// The `NF_*` settings users may set for this crate (the launcher sets the others of
/// [`env`](mod@env)'s contract); `nf config` lists every layer's.
pub const SETTINGS: &[Setting] = &[env::TIMEOUT_SETTING, pmix::SHIM_SETTING];
