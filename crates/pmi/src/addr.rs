//! Where the launcher's PMI server listens, as written in `NF_PMI_ADDR`.
//!
//! | `NF_PMI_ADDR` | meaning |
//! |---|---|
//! | `tcp:IP:PORT` (IPv6: `tcp:[IP]:PORT`) | TCP; hellos must carry `NF_PMI_SECRET` |
//! | anything else, e.g. `/tmp/nf-…/pmi.sock` | the path of a unix stream socket |

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The prefix that marks a TCP address in `NF_PMI_ADDR`.
pub const TCP_PREFIX: &str = "tcp:";

/// The address of a PMI server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PmiAddr {
    /// A unix stream socket at this path (single-host jobs).
    Unix(PathBuf),
    /// A TCP endpoint (multi-host jobs).
    Tcp(SocketAddr),
}

impl PmiAddr {
    /// Parses the `NF_PMI_ADDR` form; `None` for an empty value, or for `tcp:` followed by
    /// something that is not `IP:PORT` with a port above 0.
    pub fn parse(value: &OsStr) -> Option<PmiAddr> {
        if value.is_empty() {
            return None;
        }
        match value.to_str().and_then(|s| s.strip_prefix(TCP_PREFIX)) {
            Some(rest) => match rest.parse::<SocketAddr>() {
                Ok(sa) if sa.port() != 0 => Some(PmiAddr::Tcp(sa)),
                _ => None,
            },
            None => Some(PmiAddr::Unix(PathBuf::from(value))),
        }
    }

    /// The `NF_PMI_ADDR` form, which [`PmiAddr::parse`] reads back.
    pub fn to_os_string(&self) -> OsString {
        match self {
            PmiAddr::Unix(p) => p.clone().into_os_string(),
            PmiAddr::Tcp(sa) => format!("{TCP_PREFIX}{sa}").into(),
        }
    }
}

impl fmt::Display for PmiAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PmiAddr::Unix(p) => write!(f, "{}", p.display()),
            PmiAddr::Tcp(sa) => write!(f, "{TCP_PREFIX}{sa}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_and_unix_forms_round_trip() {
        for text in [
            "tcp:10.1.2.3:5000",
            "tcp:[::1]:7",
            "/tmp/nf-x/pmi.sock",
            "rel.sock",
        ] {
            let a = PmiAddr::parse(OsStr::new(text)).unwrap();
            assert_eq!(a.to_os_string(), OsString::from(text));
            assert_eq!(a.to_string(), text);
        }
        assert!(matches!(
            PmiAddr::parse(OsStr::new("tcp:127.0.0.1:9")),
            Some(PmiAddr::Tcp(_))
        ));
    }

    #[test]
    fn bad_tcp_addresses_are_refused() {
        for text in ["", "tcp:", "tcp:host:5", "tcp:1.2.3.4", "tcp:1.2.3.4:0"] {
            assert_eq!(PmiAddr::parse(OsStr::new(text)), None, "{text:?}");
        }
    }
}
