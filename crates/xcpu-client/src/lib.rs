//! The client side of a node's `/xcpu` (jobs as files): a session driven file by file
//! ([`session`]), the records of a session's `tree` stream ([`records`]) and the
//! variables that place a session in a tree spawn.
//!
//! `nf exec`, `nf run --hosts` and a node handing a session on to its children all
//! speak `/xcpu` through this crate; the server side is `nf_node::xcpu`. Keeping the
//! client here lets the clients depend on 9P and nothing of the daemon.

pub mod records;
pub mod session;

/// The variable of a session's `env` that places it in a tree: the session's rank
/// (`nf_node::xcpu::fanout`, rule 6).
pub const PLACE_RANK: &str = "NF_EXEC_RANK";
/// The variable of `env` naming the node, as the list given to `clone` does
/// (`nf_node::xcpu::fanout`, rule 6).
pub const PLACE_NODE: &str = "NF_EXEC_NODE";
