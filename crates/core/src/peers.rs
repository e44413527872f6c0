//! The peer table: for every rank, which transport reaches it (seeds 001, 002).
//!
//! Ranks that share a host talk over shared memory; ranks on other hosts over the
//! network (tcp now; ofi when present). `NF_TRANSPORTS` narrows the choice, e.g.
//! `tcp` sends even same-host traffic over sockets (for testing and comparison).
//! A host is identified by `NF_HOST` when a launcher sets it (network namespaces on
//! one machine are different hosts), else by host name and kernel boot id.

use crate::error::CoreError;
use crate::netroute::{NetRoute, Wire};

/// How this rank reaches one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// This rank itself: messages are queued locally.
    Myself,
    /// Shared memory, with the peer's index among the ranks of this host.
    Shm(usize),
    /// The ofi transport (libfabric).
    Ofi,
    /// The tcp transport.
    Tcp,
}

impl Route {
    /// The transport's name, as `nf` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            Route::Myself => "self",
            Route::Shm(_) => "shm",
            Route::Ofi => "ofi",
            Route::Tcp => "tcp",
        }
    }
}

/// Which transports a job may use (`NF_TRANSPORTS`, comma-separated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    /// Same-host peers may use shared memory.
    pub shm: bool,
    /// Peers may use ofi (preferred over tcp when both ends opened it).
    pub ofi: bool,
    /// Peers may use tcp.
    pub tcp: bool,
}

impl Default for Allowed {
    fn default() -> Self {
        Allowed {
            shm: true,
            ofi: true,
            tcp: true,
        }
    }
}

impl std::str::FromStr for Allowed {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut a = Allowed {
            shm: false,
            ofi: false,
            tcp: false,
        };
        for t in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match t {
                "shm" => a.shm = true,
                "ofi" => a.ofi = true,
                "tcp" => a.tcp = true,
                other => return Err(format!("unknown transport {other:?}")),
            }
        }
        if !a.shm && !a.ofi && !a.tcp {
            return Err("no transport left".into());
        }
        Ok(a)
    }
}

impl Allowed {
    /// Whether rank `me` has a peer that only a network transport can reach: one on
    /// another host, or any peer when shared memory is not allowed. Every rank can
    /// compute this for every other from the host table (wire-up relies on it).
    pub fn needs_network(&self, me: usize, hosts: &[String]) -> bool {
        (0..hosts.len()).any(|r| r != me && (!self.shm || hosts[r] != hosts[me]))
    }
}

/// Every rank's route, and the ranks of this host in local order.
#[derive(Debug, Clone)]
pub struct Peers {
    /// Route to each rank, indexed by rank; for a peer on another host, the route of
    /// its small messages (see `net`).
    pub routes: Vec<Route>,
    /// For each peer on another host, which transport carries which sizes
    /// (`netroute.rs`); `None` for ourselves and same-host peers.
    pub net: Vec<Option<NetRoute>>,
    /// Ranks on this host, in rank order; a rank's position is its local index.
    pub local: Vec<usize>,
    /// Each rank's host identity (`NF_HOST`, or host name and boot id).
    pub hosts: Vec<String>,
}

impl Peers {
    /// Builds the table from every rank's host identity, whether it opened an ofi
    /// endpoint (`ofi[r]`), and the job's network route. Same host → shm; else
    /// `policy`, with ofi replaced by tcp where an end lacks it and tcp by ofi where
    /// `allowed` excludes it. The choice is symmetric: rank a reaches b the way b
    /// reaches a.
    pub fn new(
        me: usize,
        hosts: &[String],
        allowed: Allowed,
        ofi: &[bool],
        policy: NetRoute,
    ) -> Result<Peers, CoreError> {
        let local: Vec<usize> = (0..hosts.len())
            .filter(|&r| hosts[r] == hosts[me])
            .collect();
        let mut net = vec![None; hosts.len()];
        let routes = (0..hosts.len())
            .map(|r| {
                if r == me {
                    return Ok(Route::Myself);
                }
                if allowed.shm && hosts[r] == hosts[me] {
                    return Ok(Route::Shm(
                        local
                            .iter()
                            .position(|&l| l == r)
                            .expect("same host is local"),
                    ));
                }
                let usable = [allowed.tcp, allowed.ofi && ofi[me] && ofi[r]];
                if let Some(n) = policy.narrowed(usable) {
                    net[r] = Some(n);
                    return Ok(n.small.route());
                }
                if allowed.ofi {
                    let without = if ofi[me] { r } else { me };
                    Err(CoreError::Unsupported(format!(
                        "rank {r} (host {:?}) needs a network transport, NF_TRANSPORTS \
                         excludes tcp, and rank {without} could not open ofi (its warning \
                         says why); allow tcp or fix ofi (NF_OFI_PROVIDER)",
                        hosts[r]
                    )))
                } else {
                    Err(CoreError::Unsupported(format!(
                        "rank {r} is on host {:?}, not ours, and NF_TRANSPORTS allows only shm",
                        hosts[r]
                    )))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Peers {
            routes,
            net,
            local,
            hosts: hosts.to_vec(),
        })
    }

    /// The transport that carries a message of `len` payload bytes to `rank`.
    #[inline]
    pub fn route_for(&self, rank: usize, len: usize) -> Route {
        match &self.net[rank] {
            Some(n) if n.is_split() => n.wire_for(len).route(),
            _ => self.routes[rank],
        }
    }

    /// Whether `rank` is reached over `wire` for some sizes.
    pub fn reaches_over(&self, rank: usize, wire: Wire) -> bool {
        self.net[rank].is_some_and(|n| n.small == wire || n.large == wire)
    }

    /// How `rank` is reached, as `nf run --show-transports` prints it: `shm`, `tcp`,
    /// `tcp/ofi@65536`, …
    pub fn describe(&self, rank: usize) -> String {
        match &self.net[rank] {
            Some(n) => n.to_string(),
            None => self.routes[rank].name().to_owned(),
        }
    }

    /// Our index among the ranks of this host.
    pub fn local_index(&self, me: usize) -> usize {
        self.local
            .iter()
            .position(|&r| r == me)
            .expect("a rank is on its own host")
    }

    /// Whether any peer is reached by `route` for some sizes (compared by transport,
    /// not local index).
    pub fn uses(&self, route: Route) -> bool {
        let same = |r: &Route| std::mem::discriminant(r) == std::mem::discriminant(&route);
        self.routes.iter().any(same)
            || self
                .net
                .iter()
                .flatten()
                .any(|n| same(&n.small.route()) || same(&n.large.route()))
    }

    /// Whether any peer is reached over shared memory.
    pub fn uses_shm(&self) -> bool {
        self.uses(Route::Shm(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The route the tests assume unless they say otherwise: ofi where both ends have it.
    const OFI: NetRoute = NetRoute {
        small: Wire::Ofi,
        large: Wire::Ofi,
        from: usize::MAX,
    };

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn same_host_is_shm_and_other_hosts_tcp_without_ofi() {
        let h = hosts(&["a", "b", "a", "b", "a"]);
        let p = Peers::new(2, &h, Allowed::default(), &[false; 5], OFI).unwrap();
        assert_eq!(p.local, [0, 2, 4]);
        assert_eq!(
            p.routes,
            [
                Route::Shm(0),
                Route::Tcp,
                Route::Myself,
                Route::Tcp,
                Route::Shm(2)
            ]
        );
        assert_eq!(p.local_index(2), 1);
        assert!(p.uses_shm() && p.uses(Route::Tcp) && !p.uses(Route::Ofi));
    }

    #[test]
    fn other_hosts_use_ofi_where_both_ends_have_it() {
        let h = hosts(&["a", "b", "a", "c"]);
        let ofi = [true, true, true, false];
        let p = Peers::new(0, &h, Allowed::default(), &ofi, OFI).unwrap();
        assert_eq!(
            p.routes,
            [Route::Myself, Route::Ofi, Route::Shm(1), Route::Tcp]
        );
        // Symmetric: rank 3, without ofi, reaches everyone over tcp.
        let p = Peers::new(3, &h, Allowed::default(), &ofi, OFI).unwrap();
        assert_eq!(
            p.routes,
            [Route::Tcp, Route::Tcp, Route::Tcp, Route::Myself]
        );
    }

    #[test]
    fn transports_can_be_narrowed() {
        let tcp_only: Allowed = "tcp".parse().unwrap();
        let p = Peers::new(0, &hosts(&["a", "a"]), tcp_only, &[false; 2], OFI).unwrap();
        assert_eq!(p.routes, [Route::Myself, Route::Tcp]);
        assert!(tcp_only.needs_network(0, &hosts(&["a", "a"])));
        let ofi_only: Allowed = "ofi".parse().unwrap();
        let p = Peers::new(1, &hosts(&["a", "a"]), ofi_only, &[true; 2], OFI).unwrap();
        assert_eq!(p.routes, [Route::Ofi, Route::Myself]);
        let err = Peers::new(1, &hosts(&["a", "a"]), ofi_only, &[false, true], OFI).unwrap_err();
        assert!(
            err.to_string().contains("rank 0 could not open ofi"),
            "{err}"
        );
        let shm_only: Allowed = "shm".parse().unwrap();
        assert!(!shm_only.needs_network(0, &hosts(&["a", "a"])));
        let err = Peers::new(0, &hosts(&["a", "b"]), shm_only, &[false; 2], OFI).unwrap_err();
        assert!(err.to_string().contains("allows only shm"), "{err}");
        assert_eq!(
            "shm, ofi".parse::<Allowed>().unwrap(),
            Allowed {
                shm: true,
                ofi: true,
                tcp: false
            }
        );
        assert!("".parse::<Allowed>().is_err());
        assert!("shm,carrier-pigeon".parse::<Allowed>().is_err());
    }
}
