//! The ninefold gateway: one 9P2000.L namespace in front of many nodes and clusters
//! (a constellation of clusters mounted on a single head node, and a trusted gateway
//! that redirects users to the cluster that fits).
//!
//! The gateway is itself a 9P server ([`GatewayTree`] on `nf-ninep-server`). It holds
//! one long, multiplexed connection to each member (a node's `nf serve`, or another
//! gateway) and passes every user's requests through it in that user's name, so what
//! a user reaches through the gateway is what the member lets them reach directly.
//!
//! # Glossary
//!
//! - **member**: a node or another gateway, configured or registered (`nf serve
//!   --join`), under `/n/NAME`.
//! - **scope**: the whole gateway or a **view** (`/views/NAME`), a subset of members
//!   chosen by name pattern, architecture and labels; every scope has the same shape.
//! - **delegated attach**: the gateway attaching at a member *for* a user, with its own
//!   certificate (OU `ninefold gateway`); members accept it only from gateways they
//!   trust (`nf serve --trust-gateway NAME`).
//!
//! | module | job |
//! |---|---|
//! | [`config`] | the config file: members, views, access lists, trusted gateways |
//! | [`access`] | who attaches to the gateway, and for whom it acts |
//! | [`member`] | members' connections: connect, probe, lose, reconnect |
//! | [`proxy`] | fids below a member: requests passed through |
//! | [`qid`] | qids kept unique across members and nested gateways |
//! | [`tree`] | the gateway's own tree (`local`), the walk across it (`walk`), the 9P methods |
//! | [`view`] | scopes: which members a view holds, who may use it |
//! | [`status`] | `/status` and `/status.json` |
//! | [`xcpu`] | `/xcpu/clone`: placing a session on the member that fits |
//! | [`serve`] | the daemon: listeners, members' monitors, shutdown |

#![forbid(unsafe_code)]

pub mod access;
pub mod config;
pub mod member;
pub mod proxy;
pub mod qid;
pub mod serve;
pub mod status;
pub mod tree;
pub mod view;
pub mod xcpu;

pub use config::GatewayConfig;
pub use serve::{Gateway, GatewayError, GatewayOptions};
pub use tree::GatewayTree;
