//! 9P over TLS with client certificates (rustls): how remote users authenticate.
//!
//! Both sides present a certificate signed by a CA the other trusts: the server's
//! names its host (checked by the client), the client's common name (CN) is the user
//! it authenticated as ([`Transport::authenticated_user`]), handed to the tree as
//! `nf_ninep_server::Ctx::user` and checked at attach (`nf_node::access`).
//!
//! Connection steps:
//!
//! 1. Accept (or connect) the tcp stream; an accept thread hands it to a thread of its
//!    own at once, so a slow handshake never blocks other clients.
//! 2. Handshake with a deadline ([`HANDSHAKE_TIMEOUT`]): a client without a
//!    certificate from the trusted CA is refused by rustls and the stream closed.
//! 3. Read the client certificate's CN (a certificate without one is refused); a
//!    node's certificate (OU [`NODE_UNIT`]) is told apart as `node:CN`, a gateway's
//!    (OU [`GATEWAY_UNIT`]) as `gateway:CN`.
//! 4. Serve 9P over the TLS stream until it closes (`nf_ninep_server::Server::serve`,
//!    which also applies `max_clients`). The accept loop that does steps 1 and 4 is the
//!    node's (`nf_node::listen::TlsListener`): it serves a `Server`, above this crate.
//!
//! The stream is used by one receiving thread and serialised senders (the
//! [`Transport`] contract). Lock order: `rx`, then `conn`; `tx`, then `conn`; socket
//! reads and writes happen without `conn` held, so a blocked send never stops
//! receiving, and the other way round.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConnection, Connection, RootCertStore, ServerConnection};

use crate::transport::{wait_fd_readable, write_all_parts, Transport};

/// How long a peer may take to complete the TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A certificate chain, its key, and the CA that signs the peers' certificates (PEM).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// This side's certificate chain.
    pub cert: PathBuf,
    /// Its private key.
    pub key: PathBuf,
    /// The CA certificate(s) the peer's certificate must chain to.
    pub ca: PathBuf,
}

/// Why TLS could not be set up or a handshake failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A PEM file could not be read.
    #[error("reading {what} from {}: {reason}", path.display())]
    Pem {
        /// What was expected (certificate, key, CA).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// rustls refused the configuration or the handshake.
    #[error("TLS {context}: {source}")]
    Rustls {
        /// What was being done.
        context: String,
        /// rustls' reason.
        source: rustls::Error,
    },
    /// A certificate rustls cannot use because it is not X.509 v3.
    #[error(
        "{what} {} is an X.509 v{version} certificate; rustls (and so ninefold) needs v3. \
         Make it with `nf cert` (`nf cert user NAME`, `nf cert node HOST`), or with openssl \
         add the v3 extensions: `openssl x509 -req … -extfile <(printf \
         'basicConstraints=CA:FALSE\\nkeyUsage=digitalSignature\\nextendedKeyUsage=clientAuth')`",
        path.display()
    )]
    CertVersion {
        /// Which certificate (`certificate`, `CA certificate`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its X.509 version (1 or 2).
        version: u32,
    },
    /// The peer presented a certificate that is not X.509 v3.
    #[error(
        "TLS handshake with {peer}: the peer's certificate is not X.509 v3 (an \
         `openssl x509 -req` certificate made without -extfile is v1); remake it with \
         `nf cert user NAME` or add -extfile with basicConstraints"
    )]
    PeerCertVersion {
        /// The peer.
        peer: String,
    },
    /// The client certificate names no user.
    #[error(
        "the client certificate names nobody: it has no common name (CN), or it claims \
         to be both a node and a gateway (OU), or its CN starts with `node:` or \
         `gateway:` without being a node's or gateway's certificate"
    )]
    NoCommonName,
    /// Socket I/O failed during the handshake.
    #[error("TLS handshake with {peer}: {source}")]
    Io {
        /// The peer.
        peer: String,
        /// The OS error.
        source: io::Error,
    },
}

fn certs(what: &'static str, path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |reason: String| TlsError::Pem {
        what,
        path: path.to_path_buf(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| bad(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(e.to_string()))?;
    if certs.is_empty() {
        return Err(bad("no PEM certificate in it".into()));
    }
    for c in &certs {
        // rustls verifies v3 certificates only; say so here rather than as a
        // handshake failure on the other side.
        if let Some(version) = x509_version(c).filter(|&v| v != 3) {
            return Err(TlsError::CertVersion {
                what,
                path: path.to_path_buf(),
                version,
            });
        }
    }
    Ok(certs)
}

/// The X.509 version (1, 2, 3) of a DER certificate; `None` if it does not parse.
fn x509_version(der: &[u8]) -> Option<u32> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    Some(cert.version().0 + 1)
}

fn key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| TlsError::Pem {
        what: "private key",
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

fn roots(path: &Path) -> Result<Arc<RootCertStore>, TlsError> {
    let mut store = RootCertStore::empty();
    for c in certs("CA certificate", path)? {
        store.add(c).map_err(|source| TlsError::Rustls {
            context: format!("adding CA {}", path.display()),
            source,
        })?;
    }
    Ok(Arc::new(store))
}

fn rustls_err(context: &str) -> impl FnOnce(rustls::Error) -> TlsError + '_ {
    move |source| TlsError::Rustls {
        context: context.to_string(),
        source,
    }
}

/// The server side: our certificate, and client certificates required from `files.ca`.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let verifier = WebPkiClientVerifier::builder(roots(&files.ca)?)
        .build()
        .map_err(|e| TlsError::Rustls {
            context: "building the client-certificate verifier".into(),
            source: rustls::Error::General(e.to_string()),
        })?;
    let config = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs("certificate", &files.cert)?, key(&files.key)?)
        .map_err(rustls_err("loading the server certificate and key"))?;
    Ok(Arc::new(config))
}

/// The client side: our certificate, and the server's checked against `files.ca`.
pub fn client_config(files: &TlsFiles) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots(&files.ca)?)
        .with_client_auth_cert(certs("certificate", &files.cert)?, key(&files.key)?)
        .map_err(rustls_err("loading the client certificate and key"))?;
    Ok(Arc::new(config))
}

/// How much ciphertext one socket read may take: a 64 KiB reply's TLS records in one
/// or two reads, where 16 KiB took five.
const RX_BUFFER: usize = 64 * 1024 + 1024;

/// Received ciphertext not yet handed to rustls: `buf[start..end]`. The socket reads
/// into the whole buffer once rustls has taken everything (it takes up to a record at
/// a time, from the front), so received bytes are copied once, into rustls.
struct Ciphertext {
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

impl Default for Ciphertext {
    fn default() -> Self {
        Ciphertext {
            buf: vec![0; RX_BUFFER].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }
}

impl Ciphertext {
    fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Hands what it holds to `conn`; returns how much rustls took.
    fn give(&mut self, conn: &mut Connection) -> io::Result<usize> {
        let used = conn.read_tls(&mut &self.buf[self.start..self.end])?;
        self.start += used;
        if self.is_empty() {
            (self.start, self.end) = (0, 0);
        }
        Ok(used)
    }

    /// Reads what `sock` holds now into the buffer, which rustls has emptied, without
    /// blocking: `Some(0)` at end of stream, `None` if nothing was there.
    fn fill_now(&mut self, sock: &TcpStream) -> io::Result<Option<usize>> {
        debug_assert!(self.is_empty(), "filled before rustls took everything");
        loop {
            match rustix::net::recv(sock, &mut self.buf[..], rustix::net::RecvFlags::DONTWAIT) {
                Ok((n, _)) => {
                    (self.start, self.end) = (0, n);
                    return Ok(Some(n));
                }
                Err(rustix::io::Errno::AGAIN) => return Ok(None),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Reads from `sock` into the buffer, which rustls has emptied; 0 at end of stream.
    fn fill(&mut self, mut sock: &TcpStream) -> io::Result<usize> {
        debug_assert!(self.is_empty(), "filled before rustls took everything");
        loop {
            match sock.read(&mut self.buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
                Ok(n) => {
                    (self.start, self.end) = (0, n);
                    return Ok(n);
                }
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A TLS stream carrying 9P, either side.
pub struct TlsTransport {
    sock: TcpStream,
    conn: Mutex<Connection>,
    /// Ciphertext received and not yet given to rustls (the receiving thread's).
    rx: Mutex<Ciphertext>,
    /// Ciphertext to send (the senders' scratch; also their lock).
    tx: Mutex<Vec<u8>>,
    peer: String,
    user: Option<String>,
}

impl TlsTransport {
    fn handshake(sock: TcpStream, mut conn: Connection) -> Result<TlsTransport, TlsError> {
        let peer = sock
            .peer_addr()
            .map_or_else(|_| String::from("?"), |a| a.to_string());
        let io_err = |source: io::Error| {
            // rustls hands its verdict on the peer's certificate back as an io::Error.
            let bad_version = source
                .get_ref()
                .and_then(|e| e.downcast_ref::<rustls::Error>())
                .is_some_and(|e| format!("{e:?}").contains("UnsupportedCertVersion"));
            if bad_version {
                TlsError::PeerCertVersion { peer: peer.clone() }
            } else {
                TlsError::Io {
                    peer: peer.clone(),
                    source,
                }
            }
        };
        sock.set_read_timeout(Some(HANDSHAKE_TIMEOUT))
            .map_err(io_err)?;
        sock.set_write_timeout(Some(HANDSHAKE_TIMEOUT))
            .map_err(io_err)?;
        conn.set_buffer_limit(None);
        let mut s = &sock;
        while conn.is_handshaking() {
            conn.complete_io(&mut s).map_err(io_err)?;
        }
        sock.set_read_timeout(None).map_err(io_err)?;
        sock.set_write_timeout(None).map_err(io_err)?;
        let _ = sock.set_nodelay(true);
        Ok(TlsTransport {
            sock,
            conn: Mutex::new(conn),
            rx: Mutex::new(Ciphertext::default()),
            tx: Mutex::new(Vec::new()),
            peer: format!("tls {peer}"),
            user: None,
        })
    }

    /// Runs the server side of the handshake; the client's CN becomes the user.
    pub fn accept(
        sock: TcpStream,
        config: Arc<rustls::ServerConfig>,
    ) -> Result<TlsTransport, TlsError> {
        let conn = ServerConnection::new(config).map_err(rustls_err("starting a session"))?;
        let mut t = TlsTransport::handshake(sock, conn.into())?;
        let cert = match &*lock(&t.conn) {
            Connection::Server(s) => s.peer_certificates().and_then(|c| c.first().cloned()),
            Connection::Client(_) => None,
        };
        let user = cert
            .as_deref()
            .and_then(identity)
            .ok_or(TlsError::NoCommonName)?;
        t.user = Some(user);
        Ok(t)
    }

    /// Connects the client side to `server` (the name its certificate must carry).
    pub fn connect(
        sock: TcpStream,
        config: Arc<rustls::ClientConfig>,
        server: &str,
    ) -> Result<TlsTransport, TlsError> {
        let name = ServerName::try_from(server.to_string()).map_err(|e| TlsError::Rustls {
            context: format!("server name {server:?}"),
            source: rustls::Error::General(e.to_string()),
        })?;
        let conn = ClientConnection::new(config, name).map_err(rustls_err("starting a session"))?;
        TlsTransport::handshake(sock, conn.into())
    }

    /// Hands ciphertext rustls wants sent to the socket (senders only).
    fn flush(&self, out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        {
            let mut conn = lock(&self.conn);
            while conn.wants_write() {
                conn.write_tls(out)?;
            }
        }
        (&self.sock).write_all(out)
    }
}

/// The organizational unit `nf cert node` gives node certificates: a peer presenting
/// one is a node of the cluster (it may hand sessions on for users, `nf_node::access`).
pub const NODE_UNIT: &str = "ninefold node";
/// How a node's identity is told to the tree: `node:` and its common name. No user
/// name can hold a `:`, and a user certificate whose name starts so is refused.
pub const NODE_PREFIX: &str = "node:";
/// The organizational unit `nf cert gateway` gives gateway certificates: a peer
/// presenting one is a gateway (it may attach for users where it is trusted,
/// `nf_node::access`).
pub const GATEWAY_UNIT: &str = "ninefold gateway";
/// How a gateway's identity is told to the tree: `gateway:` and its common name; a
/// user certificate whose name starts so is refused, as for [`NODE_PREFIX`].
pub const GATEWAY_PREFIX: &str = "gateway:";

/// Who a DER certificate names: its subject's first common name, as `node:CN` when the
/// certificate is a node's ([`NODE_UNIT`]) and `gateway:CN` when it is a gateway's
/// ([`GATEWAY_UNIT`]); `None` without a usable name. A certificate claiming both units
/// names nobody, and neither does a user certificate whose name could pass for a node's
/// or a gateway's.
fn identity(der: &[u8]) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let cn = cert.subject().iter_common_name().next()?;
    let cn = cn.as_str().ok().filter(|s| !s.is_empty())?;
    let unit = |name| {
        cert.subject()
            .iter_organizational_unit()
            .any(|ou| ou.as_str() == Ok(name))
    };
    let prefix = match (unit(NODE_UNIT), unit(GATEWAY_UNIT)) {
        (true, true) => return None,
        (true, false) => NODE_PREFIX,
        (false, true) => GATEWAY_PREFIX,
        (false, false)
            if [NODE_PREFIX, GATEWAY_PREFIX]
                .iter()
                .any(|p| cn.starts_with(p)) =>
        {
            return None
        }
        (false, false) => "",
    };
    Some(format!("{prefix}{cn}"))
}

/// Who the first certificate of the PEM file `path` names, as a peer presenting it
/// would be told to the tree (`node:CN`, `gateway:CN`, or the user); `None` when it
/// names nobody.
pub fn file_identity(path: &Path) -> Result<Option<String>, TlsError> {
    let certs = certs("certificate", path)?;
    Ok(certs.first().and_then(|c| identity(c)))
}

impl Transport for TlsTransport {
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut rx = lock(&self.rx);
        loop {
            {
                let mut conn = lock(&self.conn);
                match conn.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if !rx.is_empty() {
                    rx.give(&mut conn)?;
                    conn.process_new_packets()
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    continue;
                }
            }
            // Replies rustls owes the peer (alerts, key updates) go out with the next
            // send if a sender is busy now.
            if let Ok(mut out) = self.tx.try_lock() {
                self.flush(&mut out)?;
            }
            if rx.fill(&self.sock)? == 0 {
                return Ok(0);
            }
        }
    }

    fn send(&self, bytes: &[u8]) -> io::Result<()> {
        let mut out = lock(&self.tx);
        lock(&self.conn).writer().write_all(bytes)?;
        self.flush(&mut out)
    }

    /// rustls makes records from all the parts at once (each byte copied once, into
    /// the record it is encrypted in), and they leave in one socket write.
    fn send_parts(&self, parts: &[&[u8]]) -> io::Result<()> {
        let mut out = lock(&self.tx);
        write_all_parts(lock(&self.conn).writer(), parts)?;
        self.flush(&mut out)
    }

    fn can_wait_readable(&self) -> bool {
        true
    }

    /// Readable once rustls has plaintext for `recv`, or the stream ended or failed.
    /// A readable socket alone is not enough: it may hold part of a record only (a
    /// peer that stopped halfway, or a large record still arriving) or records that
    /// carry no data (session tickets), and `recv` would then block past `timeout` —
    /// a caller receiving its own reply would overstay its deadline, without bound
    /// if the peer never sends the rest. So what the socket holds is read without
    /// blocking and handed to rustls here, and the wait goes on until a whole record
    /// of data is in.
    fn wait_readable(&self, timeout: Option<Duration>) -> io::Result<bool> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            {
                let mut rx = lock(&self.rx);
                let mut conn = lock(&self.conn);
                loop {
                    match conn.process_new_packets() {
                        Ok(state)
                            if state.plaintext_bytes_to_read() == 0 && !state.peer_has_closed() => {
                        }
                        // Bytes, the end, or an error: `recv` hands each on.
                        _ => return Ok(true),
                    }
                    // rustls takes up to a record at a time.
                    if rx.is_empty() {
                        break;
                    }
                    match rx.give(&mut conn) {
                        Ok(0) | Err(_) => return Ok(true),
                        Ok(_) => {}
                    }
                }
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if !wait_fd_readable(&self.sock, left)? {
                return Ok(false);
            }
            let mut rx = lock(&self.rx);
            if rx.is_empty() && rx.fill_now(&self.sock)? == Some(0) {
                // The end of the stream: `recv` reads it too.
                return Ok(true);
            }
        }
    }

    fn close(&self) {
        let _ = self.sock.shutdown(Shutdown::Both);
    }

    fn peer(&self) -> String {
        self.peer.clone()
    }

    fn authenticated_user(&self) -> Option<String> {
        self.user.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    /// The identity of a self-signed certificate with common name `cn` and units `ous`.
    fn identity_of(cn: &str, ous: &[&str]) -> Option<String> {
        let mut p = CertificateParams::new(Vec::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        for (i, ou) in ous.iter().enumerate() {
            // rcgen keeps one value per attribute type; the OU's OID (2.5.4.11) spelt
            // as a custom type adds a second one.
            let ty = match i {
                0 => DnType::OrganizationalUnitName,
                _ => DnType::CustomDnType(vec![2, 5, 4, 11]),
            };
            p.distinguished_name.push(ty, *ou);
        }
        let cert = p.self_signed(&KeyPair::generate().unwrap()).unwrap();
        identity(cert.der())
    }

    #[test]
    fn users_nodes_and_gateways_are_told_apart() {
        assert_eq!(identity_of("ann", &[]), Some("ann".into()));
        assert_eq!(identity_of("n1", &[NODE_UNIT]), Some("node:n1".into()));
        assert_eq!(
            identity_of("gw", &[GATEWAY_UNIT]),
            Some("gateway:gw".into())
        );
        assert_eq!(identity_of("ann", &["physics"]), Some("ann".into()));
    }

    #[test]
    fn a_user_certificate_cannot_pass_for_a_node_or_a_gateway() {
        assert_eq!(identity_of("node:n1", &[]), None);
        assert_eq!(identity_of("gateway:x", &[]), None);
        assert_eq!(identity_of("gateway:x", &["physics"]), None);
    }

    #[test]
    fn a_certificate_claiming_both_units_names_nobody() {
        assert_eq!(identity_of("both", &[NODE_UNIT, GATEWAY_UNIT]), None);
        assert_eq!(identity_of("", &[]), None);
    }
}
