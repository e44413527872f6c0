//! The peer table: for every rank, which transport reaches it (seeds 001, 002).
//!
//! Ranks that share a host talk over shared memory; ranks on other hosts over the
//! network (tcp now; ofi when present). `NF_TRANSPORTS` narrows the choice, e.g.
//! `tcp` sends even same-host traffic over sockets (for testing and comparison).
//! A host is identified by `NF_HOST` when a launcher sets it (network namespaces on
//! one machine are different hosts), else by host name and kernel boot id.

use crate::error::CoreError;

/// How this rank reaches one peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// This rank itself: messages are queued locally.
    Myself,
    /// Shared memory, with the peer's index among the ranks of this host.
    Shm(usize),
    /// The tcp transport.
    Tcp,
}

impl Route {
    /// The transport's name, as `nf` prints it.
    pub fn name(&self) -> &'static str {
        match self {
            Route::Myself => "self",
            Route::Shm(_) => "shm",
            Route::Tcp => "tcp",
        }
    }
}

/// Which transports a job may use (`NF_TRANSPORTS`, comma-separated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    /// Same-host peers may use shared memory.
    pub shm: bool,
    /// Peers may use tcp.
    pub tcp: bool,
}

impl Default for Allowed {
    fn default() -> Self {
        Allowed {
            shm: true,
            tcp: true,
        }
    }
}

impl std::str::FromStr for Allowed {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut a = Allowed {
            shm: false,
            tcp: false,
        };
        for t in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            match t {
                "shm" => a.shm = true,
                "tcp" => a.tcp = true,
                "ofi" => {
                    return Err("the ofi transport is not built yet; use shm and/or tcp".into())
                }
                other => return Err(format!("unknown transport {other:?}")),
            }
        }
        if !a.shm && !a.tcp {
            return Err("no transport left".into());
        }
        Ok(a)
    }
}

/// Every rank's route, and the ranks of this host in local order.
#[derive(Debug, Clone)]
pub struct Peers {
    /// Route to each rank, indexed by rank.
    pub routes: Vec<Route>,
    /// Ranks on this host, in rank order; a rank's position is its local index.
    pub local: Vec<usize>,
}

impl Peers {
    /// Builds the table from every rank's host identity.
    pub fn new(me: usize, hosts: &[String], allowed: Allowed) -> Result<Peers, CoreError> {
        let local: Vec<usize> = (0..hosts.len())
            .filter(|&r| hosts[r] == hosts[me])
            .collect();
        let routes = (0..hosts.len())
            .map(|r| {
                if r == me {
                    Ok(Route::Myself)
                } else if allowed.shm && hosts[r] == hosts[me] {
                    Ok(Route::Shm(
                        local
                            .iter()
                            .position(|&l| l == r)
                            .expect("same host is local"),
                    ))
                } else if allowed.tcp {
                    Ok(Route::Tcp)
                } else {
                    Err(CoreError::Unsupported(format!(
                        "rank {r} is on host {:?}, not ours, and NF_TRANSPORTS allows only shm",
                        hosts[r]
                    )))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Peers { routes, local })
    }

    /// Our index among the ranks of this host.
    pub fn local_index(&self, me: usize) -> usize {
        self.local
            .iter()
            .position(|&r| r == me)
            .expect("a rank is on its own host")
    }

    /// Whether any peer is reached over tcp.
    pub fn uses_tcp(&self) -> bool {
        self.routes.contains(&Route::Tcp)
    }

    /// Whether any peer is reached over shared memory.
    pub fn uses_shm(&self) -> bool {
        self.routes.iter().any(|r| matches!(r, Route::Shm(_)))
    }
}

/// This host's identity: `NF_HOST`, else host name plus kernel boot id.
pub fn host_identity() -> String {
    if let Ok(h) = std::env::var("NF_HOST") {
        return h;
    }
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    format!(
        "{}/{}",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(h: &[&str]) -> Vec<String> {
        h.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn same_host_is_shm_and_other_hosts_tcp() {
        let p = Peers::new(2, &hosts(&["a", "b", "a", "b", "a"]), Allowed::default()).unwrap();
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
    }

    #[test]
    fn transports_can_be_narrowed() {
        let tcp_only: Allowed = "tcp".parse().unwrap();
        let p = Peers::new(0, &hosts(&["a", "a"]), tcp_only).unwrap();
        assert_eq!(p.routes, [Route::Myself, Route::Tcp]);
        let shm_only: Allowed = "shm".parse().unwrap();
        let err = Peers::new(0, &hosts(&["a", "b"]), shm_only).unwrap_err();
        assert!(err.to_string().contains("allows only shm"), "{err}");
        assert!("ofi"
            .parse::<Allowed>()
            .unwrap_err()
            .contains("not built yet"));
        assert!("".parse::<Allowed>().is_err());
        assert!("shm,carrier-pigeon".parse::<Allowed>().is_err());
    }
}
