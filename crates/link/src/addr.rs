//! Where a node server is, and `ADDR:/path` arguments of the `nf` file commands.
//!
//! | form | meaning |
//! |---|---|
//! | `unix:PATH:/path` | the server on unix socket `PATH` |
//! | `tcp:HOST:PORT:/path` | the server at `HOST:PORT` over plain tcp |
//! | `tls:HOST:PORT:/path` | the server at `HOST:PORT` over TLS with a client certificate |
//! | `shm:PATH:/path` | the server whose shm socket is `PATH`, over shared memory |
//! | `:/path` or `/path` | the local default server ([`default_address`]) |
//!
//! The server part ends at the first `:/` after the scheme, so a socket path must not
//! contain `:/`. The remote path is `/`-separated from the server's root.

use std::fmt;
use std::path::PathBuf;

use nf_sys::setting::Setting;

/// The environment variable naming the default server (`unix:PATH` or `tcp:HOST:PORT`).
pub const ADDR_ENV: &str = "NF_ADDR";

/// The settings this crate reads, as `nf config` lists them: the default server.
pub const SETTINGS: &[Setting] = &[Setting::new(
    ADDR_ENV,
    "link",
    "the server :/path means in the nf file commands: unix:PATH, shm:PATH, tcp:HOST:PORT or tls:HOST:PORT",
    "your own nf serve's socket ($XDG_RUNTIME_DIR/ninefold/nf.sock) when it is there, else the system server's (/run/ninefold/nf.sock)",
)];

/// How to reach a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Addr {
    /// A unix socket.
    Unix(PathBuf),
    /// Plain tcp to `HOST:PORT`.
    Tcp(String),
    /// TLS to `HOST:PORT` (the server's certificate must name `HOST`).
    Tls(String),
    /// A shared-memory channel set up over the unix socket at this path.
    Shm(PathBuf),
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Unix(p) => write!(f, "unix:{}", p.display()),
            Addr::Tcp(a) => write!(f, "tcp:{a}"),
            Addr::Tls(a) => write!(f, "tls:{a}"),
            Addr::Shm(p) => write!(f, "shm:{}", p.display()),
        }
    }
}

/// A file on a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The server.
    pub addr: Addr,
    /// The path from the server's root (starts with `/`).
    pub path: String,
}

/// An address that cannot be understood.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad address {given:?}: {reason} (use unix:PATH, shm:PATH, tcp:HOST:PORT or tls:HOST:PORT, then :/path; or :/path for the local server)")]
pub struct AddrError {
    /// What was given.
    pub given: String,
    /// What is wrong.
    pub reason: &'static str,
}

/// The default unix socket of `nf serve`: `$XDG_RUNTIME_DIR/ninefold/nf.sock` when
/// `XDG_RUNTIME_DIR` is set, else `/run/ninefold/nf.sock`.
pub fn default_socket() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("ninefold/nf.sock"),
        _ => PathBuf::from(SYSTEM_SOCKET),
    }
}

/// The system server's socket (`nf serve` run as root, or the service).
pub const SYSTEM_SOCKET: &str = "/run/ninefold/nf.sock";

/// The default server: `$NF_ADDR` if set, else the user's own server's socket
/// ([`default_socket`]) when one is there, else the system server's: a user in a login
/// session (`XDG_RUNTIME_DIR` set) reaches the node's root server without naming it.
pub fn default_address() -> Result<Addr, AddrError> {
    match std::env::var(ADDR_ENV) {
        Ok(a) if !a.is_empty() => parse_addr(&a),
        _ => Ok(Addr::Unix(own_or_system(
            default_socket(),
            PathBuf::from(SYSTEM_SOCKET),
        ))),
    }
}

/// `own` if it exists or `system` does not (then the error names the user's own).
fn own_or_system(own: PathBuf, system: PathBuf) -> PathBuf {
    if !own.exists() && system.exists() {
        system
    } else {
        own
    }
}

/// Parses `unix:PATH` or `tcp:HOST:PORT` (no remote path).
pub fn parse_addr(s: &str) -> Result<Addr, AddrError> {
    let bad = |reason| AddrError {
        given: s.to_string(),
        reason,
    };
    if let Some((shm, path)) = s
        .strip_prefix("unix:")
        .map(|p| (false, p))
        .or_else(|| s.strip_prefix("shm:").map(|p| (true, p)))
    {
        if path.is_empty() {
            return Err(bad("the socket path is empty"));
        }
        let path = PathBuf::from(path);
        Ok(if shm {
            Addr::Shm(path)
        } else {
            Addr::Unix(path)
        })
    } else if let Some((tls, hostport)) = s
        .strip_prefix("tcp:")
        .map(|h| (false, h))
        .or_else(|| s.strip_prefix("tls:").map(|h| (true, h)))
    {
        match hostport.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                let hostport = hostport.to_string();
                Ok(if tls {
                    Addr::Tls(hostport)
                } else {
                    Addr::Tcp(hostport)
                })
            }
            _ => Err(bad("tcp and tls need HOST:PORT")),
        }
    } else {
        Err(bad("unknown scheme"))
    }
}

/// True if `arg` names a file on a server rather than a local file (for `nf cp`).
pub fn is_remote(arg: &str) -> bool {
    arg.starts_with(':')
        || ["unix:", "tcp:", "tls:", "shm:"]
            .iter()
            .any(|p| arg.starts_with(p))
}

/// Parses `ADDR:/path`, `:/path` or `/path`.
pub fn parse_target(s: &str) -> Result<Target, AddrError> {
    if s.starts_with('/') {
        return Ok(Target {
            addr: default_address()?,
            path: s.to_string(),
        });
    }
    if let Some(path) = s.strip_prefix(':') {
        if !path.starts_with('/') {
            return Err(AddrError {
                given: s.to_string(),
                reason: "the path after ':' must start with '/'",
            });
        }
        return Ok(Target {
            addr: default_address()?,
            path: path.to_string(),
        });
    }
    let scheme_end = s.find(':').map_or(0, |i| i + 1);
    let Some(split) = s[scheme_end..].find(":/").map(|i| i + scheme_end) else {
        return Err(AddrError {
            given: s.to_string(),
            reason: "no :/path after the server address",
        });
    };
    Ok(Target {
        addr: parse_addr(&s[..split])?,
        path: s[split + 1..].to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_without_a_server_of_their_own_reaches_the_systems() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("own.sock");
        let system = dir.path().join("system.sock");
        assert_eq!(
            own_or_system(own.clone(), system.clone()),
            own,
            "neither: name the own"
        );
        std::fs::write(&system, "").unwrap();
        assert_eq!(own_or_system(own.clone(), system.clone()), system);
        std::fs::write(&own, "").unwrap();
        assert_eq!(own_or_system(own.clone(), system), own, "one's own first");
    }

    #[test]
    fn forms() {
        assert_eq!(
            parse_target("unix:/tmp/a.sock:/fs/x").unwrap(),
            Target {
                addr: Addr::Unix("/tmp/a.sock".into()),
                path: "/fs/x".into()
            }
        );
        assert_eq!(
            parse_target("tcp:127.0.0.1:564:/").unwrap(),
            Target {
                addr: Addr::Tcp("127.0.0.1:564".into()),
                path: "/".into()
            }
        );
        assert_eq!(parse_target(":/status").unwrap().path, "/status");
        assert!(parse_target("tcp:host:/x").is_err());
        assert!(parse_target("ftp:host:/x").is_err());
        assert!(parse_target("unix:/tmp/a.sock").is_err());
        assert!(is_remote(":/log") && is_remote("unix:/s:/x") && !is_remote("./local"));
    }
}
