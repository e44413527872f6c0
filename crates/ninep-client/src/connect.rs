//! Reaching a server by its address: an [`Addr`] (`unix:`, `tcp:`, `tls:`, `shm:`; see
//! [`nf_link::addr`]), the byte transport it names, and the user to attach as.

use std::io;
use std::path::Path;

use nf_link::addr::Addr;
use nf_link::tls::{client_config, TlsError, TlsFiles, TlsTransport};

use crate::{connect_tcp_stream, Client, ClientConfig, ClientError, Root};

/// How the `nf` file commands connect.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// The user named in `Tattach`.
    pub user: String,
    /// The msize to ask for.
    pub msize: u32,
    /// Certificate, key and CA for `tls:` addresses.
    pub tls: Option<TlsFiles>,
    /// Bound on connecting and on every reply; `None`: the client's defaults (10 s to
    /// connect and attach, replies unbounded).
    pub timeout: Option<std::time::Duration>,
}

/// Why a connection could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The 9P client failed (connecting, version, attach).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// TLS failed (files, handshake).
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A `tls:` address without certificate files. The hint names the flags of the
    /// client commands (`nf ls`, `nf exec`, `nf run --hosts` …); servers that dial
    /// out (the gateway, a node's tree spawn) say their own.
    #[error("{addr} needs a client certificate: give --cert FILE --key FILE --ca FILE")]
    NoCertificate {
        /// The address.
        addr: String,
    },
}

impl ConnectError {
    /// Whether the message names the address it failed at already, with its cause: a
    /// caller adding "connecting to ADDR" would say it twice.
    pub fn names_address(&self) -> bool {
        matches!(
            self,
            ConnectError::NoCertificate { .. }
                | ConnectError::Client(ClientError::Connect { .. } | ClientError::Resolve { .. })
        )
    }
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            user: default_user(),
            msize: nf_ninep::DEFAULT_MAX_MSIZE,
            tls: None,
            timeout: None,
        }
    }
}

impl ConnectOptions {
    /// Options attaching as `user`, else as this process's user ([`default_user`]) —
    /// or, with a client certificate (`tls`), as whoever the certificate names; each
    /// wait bounded by `timeout` (`None`: the client's defaults). The msize is the
    /// default.
    pub fn new(
        user: Option<String>,
        tls: Option<TlsFiles>,
        timeout: Option<std::time::Duration>,
    ) -> Self {
        let user = match (user, &tls) {
            (Some(u), _) => u,
            // The server takes the name from the certificate.
            (None, Some(_)) => String::new(),
            (None, None) => default_user(),
        };
        ConnectOptions {
            user,
            msize: nf_ninep::DEFAULT_MAX_MSIZE,
            tls,
            timeout,
        }
    }
}

/// The user running this process: the account of its uid in the system's user database
/// (what a local server checks, `nf_node::access`), else `$USER` (or `$LOGNAME`), else
/// `nobody`.
pub fn default_user() -> String {
    let uid = nix::unistd::Uid::from_raw(rustix::process::getuid().as_raw());
    nix::unistd::User::from_uid(uid)
        .ok()
        .flatten()
        .map(|u| u.name)
        .or_else(|| {
            ["USER", "LOGNAME"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        })
        .unwrap_or_else(|| String::from("nobody"))
}

/// Connects to the server at `addr` and negotiates the version.
pub fn connect(addr: &Addr, opts: &ConnectOptions) -> Result<Client, ConnectError> {
    let mut config = ClientConfig {
        msize: opts.msize,
        ..ClientConfig::default()
    };
    if let Some(t) = opts.timeout {
        config.connect_timeout = t;
        config.reply_timeout = Some(t);
    }
    Ok(match addr {
        Addr::Unix(path) => Client::connect_unix_with(path, config)?,
        Addr::Tcp(hostport) => Client::connect_tcp_with(hostport.as_str(), config)?,
        Addr::Shm(path) => Client::connect_shm_with(path, config)?,
        Addr::Tls(hostport) => {
            let files = opts
                .tls
                .as_ref()
                .ok_or_else(|| ConnectError::NoCertificate {
                    addr: addr.to_string(),
                })?;
            let sock = connect_tcp_stream(hostport.as_str(), config.connect_timeout)?;
            let host = hostport
                .rsplit_once(':')
                .map_or(hostport.as_str(), |(h, _)| h)
                .trim_start_matches('[')
                .trim_end_matches(']');
            let tls = TlsTransport::connect(sock, client_config(files)?, host)?;
            Client::with_transport(tls, config)?
        }
    })
}

impl Client {
    /// Connects over the shared-memory channel set up through the shm socket at `path`
    /// ([`nf_link::shm`]) with `config`; a socket that offers no channel within
    /// `config.connect_timeout` (a plain 9P socket) is [`ClientError::TimedOut`].
    pub fn connect_shm_with(
        path: impl AsRef<Path>,
        config: ClientConfig,
    ) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let shm = nf_link::shm::join(path, config.connect_timeout).map_err(|error| {
            if matches!(
                error.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ) {
                ClientError::TimedOut {
                    what: "shared-memory channel offer",
                    after: config.connect_timeout,
                }
            } else {
                ClientError::Connect {
                    addr: format!("shm:{}", path.display()),
                    error,
                }
            }
        })?;
        Client::with_transport(shm, config)
    }
}

/// Connects to `addr` and attaches to its root as `opts.user`.
pub fn attach(addr: &Addr, opts: &ConnectOptions) -> Result<Root, ConnectError> {
    Ok(connect(addr, opts)?.attach(&opts.user, "")?)
}
