//! The accept loop of 9P over TLS ([`nf_link::tls`]): each connection handed to a
//! thread of its own, its handshake run there, the peer served as its certificate names
//! it, and failed handshakes counted by kind.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;

use nf_link::tls::{TlsError, TlsTransport};
use nf_link::Transport;
use nf_ninep_server::{Filesystem, Server, Tally};
use nf_sys::accept::{thread_per_connection, Acceptor};

/// What peers caused a TLS listener to refuse, by kind.
#[derive(Default)]
struct Refusals {
    /// The peer hung up or the socket failed during the handshake (port probes).
    dropped: Tally,
    /// The peer's certificate was refused or names nobody.
    certificate: Tally,
    /// Anything else: a protocol error in the handshake, a refused session.
    other: Tally,
}

impl Refusals {
    /// The tally a failed handshake counts in.
    fn of(&self, e: &TlsError) -> &Tally {
        let about_certificate = |e: &rustls::Error| {
            matches!(
                e,
                rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented
            )
        };
        match e {
            // rustls hands its verdicts back inside the io::Error.
            TlsError::Io { source, .. } => match source
                .get_ref()
                .and_then(|e| e.downcast_ref::<rustls::Error>())
            {
                None => &self.dropped,
                Some(r) if about_certificate(r) => &self.certificate,
                Some(_) => &self.other,
            },
            TlsError::PeerCertVersion { .. } | TlsError::NoCommonName => &self.certificate,
            TlsError::Rustls { source, .. } if about_certificate(source) => &self.certificate,
            _ => &self.other,
        }
    }
}

/// A tcp listener whose connections are served over TLS (steps in [`nf_link::tls`]).
/// Dropping it (or [`TlsListener::stop`]) stops accepting.
#[derive(Debug)]
pub struct TlsListener {
    addr: SocketAddr,
    acceptor: Acceptor,
}

impl TlsListener {
    /// Listens on `addr` and serves each connection of `server` over TLS.
    pub fn start<F: Filesystem>(
        server: Server<F>,
        addr: SocketAddr,
        config: Arc<rustls::ServerConfig>,
    ) -> std::io::Result<TlsListener> {
        let socket = TcpListener::bind(addr)?;
        let addr = socket.local_addr()?;
        // Anyone who can reach the port can fail a handshake at will: counted, a line
        // per 10 s at most for each kind, what the peer sent escaped. One tally per
        // kind, so that port probes that hang up cannot hide a bad certificate.
        let refused = Arc::new(Refusals::default());
        let serve = move |sock| match TlsTransport::accept(sock, Arc::clone(&config)) {
            Ok(t) => {
                tracing::info!(peer = %t.peer(), user = ?t.authenticated_user().unwrap_or_default(), "TLS client authenticated");
                if let Err(e) = server.serve(t) {
                    refused
                        .other
                        .hit(|| format!("TLS connection refused: {:?}", e.to_string()));
                }
            }
            Err(e) => refused
                .of(&e)
                .hit(|| format!("TLS connection refused: {:?}", e.to_string())),
        };
        let acceptor = Acceptor::start(
            "9p-tls-accept",
            socket,
            thread_per_connection("9p-tls-conn", serve),
        )?;
        tracing::info!(%addr, "9P server listening (TLS, client certificates required)");
        Ok(TlsListener { addr, acceptor })
    }

    /// The address listened on (the real port when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and waits for the accept thread.
    pub fn stop(self) {
        self.acceptor.stop();
    }
}
