//! Between hosts, which network transport carries a message, by its size.
//!
//! A [`NetRoute`] names the transport for small messages and the one for large
//! messages, and the payload size from which a message is large, e.g. `tcp` (one
//! transport for every size) or `tcp/ofi@65536` (tcp below 64 KiB, ofi from there).
//! It is chosen once per job, the same on every rank (rank 0's choice is published
//! at wire-up), in this order:
//! 1. `NF_NET_ROUTE`, when set;
//! 2. what `nf tune --knobs route` measured against the other hosts of the job
//!    (cached per peer host; used when every other host has the same entry);
//! 3. the default: ofi for every size when its provider is a fabric of its own
//!    (verbs, efa, cxi, …); ninefold's tcp when the provider itself runs over the
//!    kernel's sockets (`tcp`, `sockets`, `udp`). Layered on the same sockets, the
//!    provider only adds work: measured across two namespace hosts, its 8 B round
//!    trip was 1.4× ours and its 4 MiB bandwidth 0.4–0.6×.
//!
//! A transport a peer cannot use (ofi not open at both ends, or excluded by
//! `NF_TRANSPORTS`) is replaced by the other one for that peer. Per-pair order across
//! the two transports is kept by `order.rs`.

use std::fmt;
use std::str::FromStr;

use crate::peers::Route;

/// A network transport a route may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    /// ninefold's tcp transport.
    Tcp,
    /// The ofi transport (libfabric).
    Ofi,
}

impl Wire {
    /// The peer-table route of this transport.
    pub fn route(self) -> Route {
        match self {
            Wire::Tcp => Route::Tcp,
            Wire::Ofi => Route::Ofi,
        }
    }

    /// The transport of a network route (`None` for shm and ourselves).
    pub fn of(route: Route) -> Option<Wire> {
        match route {
            Route::Tcp => Some(Wire::Tcp),
            Route::Ofi => Some(Wire::Ofi),
            Route::Shm(_) | Route::Myself => None,
        }
    }

    /// The other transport.
    pub fn other(self) -> Wire {
        match self {
            Wire::Tcp => Wire::Ofi,
            Wire::Ofi => Wire::Tcp,
        }
    }

    /// Index for per-transport tables (tcp 0, ofi 1).
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    fn parse(s: &str) -> Result<Wire, String> {
        match s {
            "tcp" => Ok(Wire::Tcp),
            "ofi" => Ok(Wire::Ofi),
            other => Err(format!("unknown network transport {other:?} (tcp or ofi)")),
        }
    }
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.route().name())
    }
}

/// Which transport carries messages to another host, by payload size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NetRoute {
    /// Transport for payloads below `from`.
    pub small: Wire,
    /// Transport for payloads of `from` bytes and more.
    pub large: Wire,
    /// Payload size from which a message is large (irrelevant when both are equal).
    pub from: usize,
}

impl NetRoute {
    /// One transport for every size.
    pub fn single(w: Wire) -> NetRoute {
        NetRoute {
            small: w,
            large: w,
            from: usize::MAX,
        }
    }

    /// The default for a job whose ofi transport uses `provider` (module doc, rule 3).
    pub fn default_for(provider: &str) -> NetRoute {
        if nf_transport::ofi::binds_ip(provider) {
            NetRoute::single(Wire::Tcp)
        } else {
            NetRoute::single(Wire::Ofi)
        }
    }

    /// Whether two transports are in use.
    pub fn is_split(&self) -> bool {
        self.small != self.large
    }

    /// The transport for a message of `len` payload bytes.
    #[inline]
    pub fn wire_for(&self, len: usize) -> Wire {
        if len >= self.from {
            self.large
        } else {
            self.small
        }
    }

    /// This route where only the transports in `usable` (tcp, ofi) reach a peer;
    /// `None` when neither does.
    pub fn narrowed(&self, usable: [bool; 2]) -> Option<NetRoute> {
        let pick = |w: Wire| {
            if usable[w.index()] {
                Some(w)
            } else if usable[w.other().index()] {
                Some(w.other())
            } else {
                None
            }
        };
        let (small, large) = (pick(self.small)?, pick(self.large)?);
        Some(if small == large {
            NetRoute::single(small)
        } else {
            NetRoute {
                small,
                large,
                ..*self
            }
        })
    }
}

impl FromStr for NetRoute {
    type Err = String;

    /// `tcp`, `ofi`, or `SMALL/LARGE@BYTES` such as `tcp/ofi@65536`.
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let Some((pair, from)) = s.split_once('@') else {
            if s.contains('/') {
                return Err(format!(
                    "{s:?} needs the size it splits at: SMALL/LARGE@BYTES"
                ));
            }
            return Wire::parse(s).map(NetRoute::single);
        };
        let (small, large) = pair
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not SMALL/LARGE@BYTES"))?;
        let from: usize = from
            .trim()
            .parse()
            .map_err(|_| format!("{from:?} in {s:?} is not a byte count"))?;
        let (small, large) = (Wire::parse(small.trim())?, Wire::parse(large.trim())?);
        if small == large {
            return Ok(NetRoute::single(small));
        }
        if from == 0 {
            return Err(format!(
                "{s:?}: splitting at 0 B sends nothing over {small}; name {large} alone"
            ));
        }
        Ok(NetRoute { small, large, from })
    }
}

impl fmt::Display for NetRoute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_split() {
            write!(f, "{}/{}@{}", self.small, self.large, self.from)
        } else {
            write!(f, "{}", self.small)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_routes() {
        let r: NetRoute = "tcp/ofi@65536".parse().unwrap();
        assert_eq!(
            r,
            NetRoute {
                small: Wire::Tcp,
                large: Wire::Ofi,
                from: 65536
            }
        );
        assert_eq!(r.to_string(), "tcp/ofi@65536");
        assert_eq!(r.wire_for(65535), Wire::Tcp);
        assert_eq!(r.wire_for(65536), Wire::Ofi);
        assert_eq!(
            "ofi".parse::<NetRoute>().unwrap(),
            NetRoute::single(Wire::Ofi)
        );
        assert_eq!(" tcp ".parse::<NetRoute>().unwrap().to_string(), "tcp");
        assert_eq!(
            "ofi/ofi@10".parse::<NetRoute>().unwrap(),
            NetRoute::single(Wire::Ofi)
        );
        for bad in [
            "",
            "udp",
            "tcp/ofi",
            "tcp/ofi@",
            "tcp/ofi@-1",
            "tcp@5",
            "tcp/ofi@0",
            "tcp/x@5",
        ] {
            assert!(bad.parse::<NetRoute>().is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn defaults_follow_the_provider() {
        assert_eq!(NetRoute::default_for("tcp"), NetRoute::single(Wire::Tcp));
        assert_eq!(
            NetRoute::default_for("tcp;ofi_rxm"),
            NetRoute::single(Wire::Tcp)
        );
        assert_eq!(NetRoute::default_for("verbs"), NetRoute::single(Wire::Ofi));
        assert_eq!(NetRoute::default_for("efa"), NetRoute::single(Wire::Ofi));
    }

    #[test]
    fn narrowing_replaces_what_a_peer_lacks() {
        let r: NetRoute = "tcp/ofi@4096".parse().unwrap();
        assert_eq!(r.narrowed([true, true]), Some(r));
        assert_eq!(r.narrowed([true, false]), Some(NetRoute::single(Wire::Tcp)));
        assert_eq!(r.narrowed([false, true]), Some(NetRoute::single(Wire::Ofi)));
        assert_eq!(r.narrowed([false, false]), None);
    }
}
