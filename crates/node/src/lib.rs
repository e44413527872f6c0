//! The node service: the 9P2000.L file tree every ninefold node exports, and the daemon
//! behind `nf serve` (every component of the cluster is reached through files).
//!
//! # Glossary
//!
//! - **node tree**: the tree one node serves (`/status`, `/log`, `/pipe`, `/fs`, `/ro`,
//!   `/mem`, `/xcpu`; see [`tree`]), composed from ninep's ready-made trees by a
//!   [`nf_ninep_trees::MountTable`].
//! - **#U, #R, #p, #l, #r**: the names CellFS (9P on the Cell BE) gave host files
//!   (read-write and read-only with private writes), pipes, the log, and memory
//!   regions.
//! - **local / remote connection**: a unix socket, loopback tcp or the shared-memory
//!   channel is local; tcp on any other address is remote and needs authentication.
//!
//! | module | job |
//! |---|---|
//! | [`tree`] | building the node tree from a [`NodeConfig`] |
//! | [`status`] | `/status` snapshots |
//! | [`log`] | `/log`: the server's lines, users' lines tagged and rate-limited |
//! | [`pipe`] | `/pipe/NAME`: bounded, blocking named pipes with owners and budgets |
//! | [`mem`] | `/mem/JOB/RANK/SEGMENT`: rma segments of running procs, read and written with cross-memory attach |
//! | [`access`] | the attach check: who the kernel or a certificate says the peer is → the account whose rights its requests run with |
//! | `refusals` | refused attaches counted, one summary line per 10 s instead of a line each |
//! | [`xcpu`] | `/xcpu`: jobs as files (sessions, uploads, output, exit) |
//! | [`serve`] | the daemon: listeners, limits, shutdown |
//! | [`listen`] | unix, tcp / TLS and shared-memory listeners, and the refusal of unsafe plans |
//! | [`join`] | registering with a gateway (`nf serve --join`) |
//! | [`state`] | the server's state directory (`/run/ninefold`, `--state-dir`): never a guessable path in `/tmp` |
//!
//! The byte transports (tcp, unix, TLS, shared memory), addresses and socket modes are
//! `nf-link`'s; connecting to an address is `nf_ninep_client::connect`.

#![forbid(unsafe_code)]

pub mod access;
pub mod join;
pub mod listen;
pub mod log;
pub mod mem;
pub mod pipe;
mod refusals;
pub mod serve;
pub mod state;
pub mod status;
pub mod tree;
pub mod xcpu;

pub use serve::{Daemon, ServeConfig, ServeError};
pub use tree::{build, NodeConfig, NodeTree};
