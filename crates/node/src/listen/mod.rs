//! Where a 9P server listens: a unix socket and tcp addresses, plain on loopback or
//! TLS with client certificates, and the shared-memory channel socket. Shared by
//! `nf serve` ([`crate::Daemon`]) and the gateway, so both refuse the same unsafe plans
//! the same way. The byte transports themselves, and the rules for socket directories
//! and modes, are `nf-link`'s ([`nf_link::sockdir`]); what is here serves a
//! [`Server`], which sits above that crate.
//!
//! | module | job |
//! |---|---|
//! | this one | [`Listeners`]: the unix and tcp / TLS listeners of one server, [`check_plan`] |
//! | `tls` | [`TlsListener`]: the TLS accept loop, handshakes on their own threads |
//! | `shm` | [`ShmListener`]: the shared-memory channel socket |

mod shm;
mod tls;

pub use shm::ShmListener;
pub use tls::TlsListener;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use nf_link::sockdir::{open_to_every_user, socket_dir};
use nf_link::tls::{server_config, TlsFiles};
use nf_ninep_server::{Filesystem, ListenAddr, Listener, Server};
use nf_sys::activation::{take_unix, Passed};

use crate::serve::ServeError;

/// Refuses tcp on an address that is not loopback without TLS: it is reachable from
/// other hosts, and without certificates nobody there can be told apart.
pub fn check_plan(tcp: &[SocketAddr], tls: Option<&TlsFiles>) -> Result<(), ServeError> {
    if tls.is_none() {
        if let Some(addr) = tcp.iter().find(|a| !a.ip().is_loopback()) {
            return Err(ServeError::RemoteWithoutAuth { addr: *addr });
        }
    }
    Ok(())
}

/// A server's unix and tcp listeners.
#[derive(Debug, Default)]
pub struct Listeners {
    plain: Vec<Listener>,
    tls: Vec<TlsListener>,
}

impl Listeners {
    /// Listens on `unix` (its directory made or checked, [`nf_link::sockdir`] rules 1–3) and on every `tcp`
    /// address: TLS when `tls` is given, else plain (loopback only, [`check_plan`]).
    pub fn start<F: Filesystem>(
        server: &Server<F>,
        unix: Option<&Path>,
        tcp: &[SocketAddr],
        tls: Option<&TlsFiles>,
    ) -> Result<Listeners, ServeError> {
        Self::start_with(server, unix, tcp, tls, &mut Vec::new())
    }

    /// [`Listeners::start`], taking the unix socket from `passed` when a service manager
    /// bound it already (socket activation: its directory and mode are the unit's).
    pub fn start_with<F: Filesystem>(
        server: &Server<F>,
        unix: Option<&Path>,
        tcp: &[SocketAddr],
        tls: Option<&TlsFiles>,
        passed: &mut Vec<Passed>,
    ) -> Result<Listeners, ServeError> {
        check_plan(tcp, tls)?;
        let tls = tls.map(server_config).transpose()?;
        let mut out = Listeners::default();
        if let Some((path, l)) = unix.and_then(|p| Some((p, take_unix(passed, p)?))) {
            tracing::info!(path = %path.display(), "unix socket passed by the service manager");
            out.plain.push(server.listen_unix_passed(l, path)?);
        } else if let Some(path) = unix {
            socket_dir(path).map_err(|(dir, source)| ServeError::SocketDir { dir, source })?;
            out.plain.push(server.listen_unix(path)?);
            open_to_every_user(path).map_err(|source| ServeError::SocketDir {
                dir: path.to_path_buf(),
                source,
            })?;
        }
        for addr in tcp {
            match &tls {
                Some(tls) => out.tls.push(
                    TlsListener::start(server.clone(), *addr, Arc::clone(tls)).map_err(
                        |source| ServeError::BindTls {
                            addr: *addr,
                            source,
                        },
                    )?,
                ),
                None => {
                    tracing::info!(%addr, "plain tcp on loopback: each peer is known by the uid that owns its socket (asked of the kernel), as on the unix socket");
                    out.plain.push(server.listen_tcp(*addr)?);
                }
            }
        }
        Ok(out)
    }

    /// Where they listen, as the `nf` commands take addresses (`unix:PATH`,
    /// `tcp:IP:PORT`, `tls:IP:PORT`; the real port when 0 was asked for).
    pub fn addrs(&self) -> impl Iterator<Item = String> + '_ {
        let plain = self.plain.iter().map(|l| l.addr().to_string());
        plain.chain(self.tls.iter().map(|l| format!("tls:{}", l.addr())))
    }

    /// The first tcp or TLS address.
    pub fn tcp_addr(&self) -> Option<SocketAddr> {
        let plain = self.plain.iter().find_map(|l| match l.addr() {
            ListenAddr::Tcp(a) => Some(*a),
            ListenAddr::Unix(_) => None,
        });
        plain.or_else(|| self.tls.first().map(TlsListener::addr))
    }

    /// The first TLS listener's port.
    pub fn tls_port(&self) -> Option<u16> {
        self.tls.first().map(|l| l.addr().port())
    }

    /// Stops accepting (the unix socket file is removed).
    pub fn stop(self) {
        for l in self.plain {
            l.stop();
        }
        for l in self.tls {
            l.stop();
        }
    }
}
