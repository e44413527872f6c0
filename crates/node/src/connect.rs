//! Reaching a node server as a client: an [`Addr`] and the user to attach as.

use nf_ninep::client::{Client, ClientConfig, ClientError, Root};

use crate::addr::Addr;

/// How the `nf` file commands connect.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// The user named in `Tattach`.
    pub user: String,
    /// The msize to ask for.
    pub msize: u32,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            user: default_user(),
            msize: nf_ninep::DEFAULT_MAX_MSIZE,
        }
    }
}

/// The user running this process, from `$USER` (or `$LOGNAME`), else `nobody`.
pub fn default_user() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| String::from("nobody"))
}

/// Connects to the server at `addr` and negotiates the version.
pub fn connect(addr: &Addr, opts: &ConnectOptions) -> Result<Client, ClientError> {
    let config = ClientConfig { msize: opts.msize };
    match addr {
        Addr::Unix(path) => Client::connect_unix_with(path, config),
        Addr::Tcp(hostport) => Client::connect_tcp_with(hostport.as_str(), config),
    }
}

/// Connects to `addr` and attaches to its root as `opts.user`.
pub fn attach(addr: &Addr, opts: &ConnectOptions) -> Result<Root, ClientError> {
    connect(addr, opts)?.attach(&opts.user, "")
}
