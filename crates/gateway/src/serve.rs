//! The gateway daemon behind `nf gateway`.
//!
//! Start-up steps:
//!
//! 1. Check the listening plan as `nf serve` does: tcp on an address that is not
//!    loopback needs TLS, and then every tcp listener speaks TLS with client
//!    certificates. The same certificate (OU `ninefold gateway`) is the gateway's
//!    identity towards members.
//! 2. Make the members of the config and start a monitor thread for each (they
//!    connect in the background: a member that is down does not stop the gateway).
//! 3. Listen on the unix socket and the tcp addresses.
//!
//! Shutdown ([`Gateway::shutdown`]): stop accepting, close every member connection
//! (requests in flight there answer `EHOSTDOWN`), then close clients' connections.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nf_link::tls::TlsFiles;
use nf_ninep_server::{Server, ServerConfig};
use nf_node::listen::{check_plan, Listeners};
use nf_node::ServeError;

use crate::config::{member_addr, GatewayConfig};
use crate::member::{Dial, Member, Members};
use crate::tree::GatewayTree;
use crate::view::View;

/// Where the gateway listens and how it reaches members.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// The unix socket to listen on.
    pub unix: Option<PathBuf>,
    /// Tcp addresses to listen on.
    pub tcp: Vec<SocketAddr>,
    /// The gateway's certificate, key and the CA of users, nodes and gateways.
    pub tls: Option<TlsFiles>,
    /// Limits for clients' connections.
    pub limits: ServerConfig,
    /// Connections to each member ([`crate::member::Dial::lanes`]).
    pub member_lanes: usize,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            unix: None,
            tcp: Vec::new(),
            tls: None,
            limits: ServerConfig::default(),
            member_lanes: crate::member::DEFAULT_LANES,
        }
    }
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// Nothing to listen on.
    #[error("nothing to listen on: give --unix PATH or --tcp ADDR:PORT")]
    NoListener,
    /// The config is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// Listening failed, or the plan was refused (tcp beyond loopback without TLS).
    #[error(transparent)]
    Listen(#[from] ServeError),
}

/// A running gateway.
pub struct Gateway {
    server: Server<GatewayTree>,
    listeners: Listeners,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("listeners", &self.listeners)
            .finish()
    }
}

impl Gateway {
    /// Starts the gateway (the steps in the module docs).
    pub fn start(config: &GatewayConfig, opts: &GatewayOptions) -> Result<Gateway, GatewayError> {
        config.check()?;
        if opts.unix.is_none() && opts.tcp.is_empty() {
            return Err(GatewayError::NoListener);
        }
        check_plan(&opts.tcp, opts.tls.as_ref())?;
        let members = Arc::new(Members::default());
        for m in &config.members {
            let addr = member_addr(&m.addr).map_err(|e| {
                crate::config::ConfigError::Invalid(format!("member {:?}: {e}", m.name))
            })?;
            members.add(&m.name, |index| {
                Member::new(
                    index,
                    &m.name,
                    addr,
                    m.labels.clone(),
                    m.allow.clone(),
                    false,
                )
            });
        }
        let views = config
            .views
            .iter()
            .enumerate()
            .map(|(k, v)| {
                View::new(u16::try_from(k + 1).unwrap_or(u16::MAX), v)
                    .map(Arc::new)
                    .map_err(|e| {
                        crate::config::ConfigError::Invalid(format!("view {:?}: {e}", v.name))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let dial = Arc::new(Dial {
            tls: opts.tls.clone(),
            msize: opts.limits.max_msize,
            probe_user: config.probe_user.clone(),
            lanes: opts.member_lanes.max(1),
        });
        let tree = GatewayTree::new(
            Arc::clone(&members),
            views,
            config.trust_gateways.clone(),
            dial,
        );
        for m in members.all() {
            tree.watch(&m);
        }
        let server = Server::with_config(tree, opts.limits.clone());
        let listeners =
            Listeners::start(&server, opts.unix.as_deref(), &opts.tcp, opts.tls.as_ref())?;
        Ok(Gateway { server, listeners })
    }

    /// Where it listens, as `nf` takes addresses.
    pub fn addrs(&self) -> Vec<String> {
        self.listeners.addrs().collect()
    }

    /// The tree (members, for tests and status).
    pub fn tree(&self) -> &Arc<GatewayTree> {
        self.server.fs()
    }

    /// Stops (the steps in the module docs); true if every client let go of its fids
    /// within `timeout`.
    pub fn shutdown(self, timeout: Duration) -> bool {
        self.listeners.stop();
        self.server.fs().stop();
        self.server.shutdown(timeout)
    }
}
