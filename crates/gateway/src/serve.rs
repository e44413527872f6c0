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

use nf_ninep_server::{Listener, Server, ServerConfig, ServerError};
use nf_node::tls::{server_config, TlsError, TlsFiles, TlsListener};

use crate::config::{member_addr, GatewayConfig};
use crate::member::{Dial, Member, Members};
use crate::tree::GatewayTree;
use crate::view::View;

/// Where the gateway listens and how it reaches members.
#[derive(Clone, Debug, Default)]
pub struct GatewayOptions {
    /// The unix socket to listen on.
    pub unix: Option<PathBuf>,
    /// Tcp addresses to listen on.
    pub tcp: Vec<SocketAddr>,
    /// The gateway's certificate, key and the CA of users, nodes and gateways.
    pub tls: Option<TlsFiles>,
    /// Limits for clients' connections.
    pub limits: ServerConfig,
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// Tcp on a non-loopback address without TLS.
    #[error("refusing to listen on {addr} without authentication: configure TLS (--tls-cert, --tls-key, --tls-client-ca) or listen on loopback")]
    RemoteWithoutAuth {
        /// The address.
        addr: SocketAddr,
    },
    /// Nothing to listen on.
    #[error("nothing to listen on: give --unix PATH or --tcp ADDR:PORT")]
    NoListener,
    /// The config is wrong.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A listener could not start.
    #[error(transparent)]
    Listen(#[from] ServerError),
    /// TLS could not be set up.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A TLS listener could not bind.
    #[error("listening on {addr} (TLS): {source}")]
    BindTls {
        /// The address.
        addr: SocketAddr,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A running gateway.
pub struct Gateway {
    server: Server<GatewayTree>,
    listeners: Vec<Listener>,
    tls_listeners: Vec<TlsListener>,
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
        if opts.tls.is_none() {
            if let Some(addr) = opts.tcp.iter().find(|a| !a.ip().is_loopback()) {
                return Err(GatewayError::RemoteWithoutAuth { addr: *addr });
            }
        }
        let tls = opts.tls.as_ref().map(server_config).transpose()?;
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
        let mut listeners = Vec::new();
        if let Some(path) = &opts.unix {
            listeners.push(server.listen_unix(path)?);
        }
        let mut tls_listeners = Vec::new();
        for addr in &opts.tcp {
            match &tls {
                Some(tls) => tls_listeners.push(
                    TlsListener::start(server.clone(), *addr, Arc::clone(tls)).map_err(
                        |source| GatewayError::BindTls {
                            addr: *addr,
                            source,
                        },
                    )?,
                ),
                None => listeners.push(server.listen_tcp(*addr)?),
            }
        }
        Ok(Gateway {
            server,
            listeners,
            tls_listeners,
        })
    }

    /// Where it listens, as `nf` takes addresses.
    pub fn addrs(&self) -> Vec<String> {
        let plain = self.listeners.iter().map(|l| l.addr().to_string());
        let tls = self
            .tls_listeners
            .iter()
            .map(|l| format!("tls:{}", l.addr()));
        plain.chain(tls).collect()
    }

    /// The tree (members, for tests and status).
    pub fn tree(&self) -> &Arc<GatewayTree> {
        self.server.fs()
    }

    /// Stops (the steps in the module docs); true if every client let go of its fids
    /// within `timeout`.
    pub fn shutdown(self, timeout: Duration) -> bool {
        for l in self.listeners {
            l.stop();
        }
        for l in self.tls_listeners {
            l.stop();
        }
        self.server.fs().stop();
        self.server.shutdown(timeout)
    }
}
