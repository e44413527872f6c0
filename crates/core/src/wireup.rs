//! Wire-up: from "I am rank r of n" to transports connected to every peer.
//!
//! 1. Every rank publishes its host identity; fence; every rank reads all of them.
//!    From the host table every rank can tell which ranks need a network transport
//!    (a peer on another host, or any peer when shm is not allowed).
//! 2. Local rank 0 of each host reclaims segments left by dead jobs. If a peer shares
//!    our memory, create our shm receive segment. If we need the network: open an
//!    ofi endpoint (`NF_OFI_PROVIDER`) and publish its address, or why it failed;
//!    start the tcp listener and publish its address, and as many more as
//!    `NF_TCP_LANES` asks for lanes (`lanes.rs`), each under its own key. Fence.
//!    Rank 0 also publishes the job's network route (`netroute.rs`: which transport
//!    carries which sizes between hosts), so every rank follows one choice.
//! 3. Read the ofi status of the networked ranks and build the peer table
//!    ([`Peers`]): same host → shm; other hosts → the job's network route, with ofi
//!    replaced by tcp where an end could not open it. The lowest networked rank
//!    warns once for the job if some rank fell back. Drop the transports no route
//!    uses (they are never polled). Map the local peers' segments, insert the
//!    addresses of the peers reached over ofi, connect to those reached over tcp
//!    (for some sizes), and each lane to the same peers. Fence.
//! 4. Unlink our segment's name (nothing is left behind if we are killed from here
//!    on) and enable single-copy reads if the kernel allows them.

use std::net::SocketAddr;
use std::time::Duration;

use nf_transport::ofi::OfiTransport;
use nf_transport::shm::{segment, ShmConfig, ShmTransport};
use nf_transport::tcp::TcpTransport;

use crate::bootstrap::Bootstrap;
use crate::config::Config;
use crate::error::CoreError;
use crate::lanes::Lanes;
use crate::net::{Net, OfiPoller};
use crate::netconf;
use crate::netroute::{NetRoute, Wire};
use crate::peers::{Peers, Route};
use crate::wait::Waiter;
use nf_sys::hash::fnv1a;
use nf_sys::host::host_identity;

/// Longest reason for a failed ofi open that is published (the store limits values).
const MAX_REASON: usize = 900;

/// The name of wire-up value `what` in the launcher's key-value exchange.
fn key(what: &str) -> String {
    format!("nf.{what}")
}

/// Publishes `value` under `what`, fences, and returns every rank's value.
fn exchange(boot: &mut dyn Bootstrap, what: &str, value: &str) -> Result<Vec<String>, CoreError> {
    boot.put(&key(what), value)?;
    boot.fence()?;
    (0..boot.size())
        .map(|r| Ok(boot.get(r, &key(what))?))
        .collect()
}

/// A rank's ofi endpoint as published in step 2: its address, or why it has none.
enum OfiStatus {
    Address(Vec<u8>),
    Missing(String),
}

impl OfiStatus {
    fn encode(&self) -> String {
        match self {
            OfiStatus::Address(a) => format!("addr:{}", hex::encode(a)),
            OfiStatus::Missing(why) => {
                let mut end = why.len().min(MAX_REASON);
                while !why.is_char_boundary(end) {
                    end -= 1;
                }
                format!("none:{}", &why[..end])
            }
        }
    }

    fn decode(rank: usize, text: &str) -> Result<OfiStatus, CoreError> {
        let bad = |why: &str| CoreError::Protocol {
            src: rank,
            why: format!("published ofi status {text:?} {why}"),
        };
        if let Some(h) = text.strip_prefix("addr:") {
            return hex::decode(h)
                .map(OfiStatus::Address)
                .map_err(|_| bad("is not hex"));
        }
        text.strip_prefix("none:")
            .map(|why| OfiStatus::Missing(why.to_owned()))
            .ok_or_else(|| bad("starts with neither addr: nor none:"))
    }
}

/// Runs the wire-up steps above and returns the connected transports.
pub(crate) fn connect(boot: &mut dyn Bootstrap, cfg: &Config) -> Result<Net, CoreError> {
    let (me, size) = (boot.rank(), boot.size());
    let job = boot.job_id().to_owned();
    let allowed = cfg.transports;
    // Step 1.
    let host = host_identity();
    let hosts = exchange(boot, "host", &host)?;
    let networked: Vec<bool> = (0..size)
        .map(|r| allowed.needs_network(r, &hosts))
        .collect();
    let remote_hosts = hosts.iter().any(|h| *h != host);

    // Step 2. Ranks of several "hosts" may share one /dev/shm (network namespaces on
    // one machine), so segment names carry the host as well as the job.
    let shm_job = format!("{}-{:08x}", job, fnv1a(host.as_bytes()) as u32);
    let local: Vec<usize> = (0..size).filter(|&r| hosts[r] == host).collect();
    let local_rank = local.iter().position(|&r| r == me).expect("we are local");
    if local_rank == 0 {
        segment::reclaim_stale(&cfg.shm.dir, Duration::from_secs(60));
    }
    let mut shm = if allowed.shm && local.len() > 1 {
        // Senders ring our doorbell only if we may sleep on it: a rank that parks
        // (`wait.rs`) and has no network peers, which nothing could wake it for.
        let waiter = Waiter::new(cfg.wait, local.len(), cfg.job_cpus, cfg.park_after);
        let shm_cfg = ShmConfig {
            sleeps: waiter.may_park() && !networked[me],
            ..cfg.shm.clone()
        };
        Some(ShmTransport::create(
            &shm_cfg,
            &shm_job,
            local_rank,
            local.len(),
        )?)
    } else {
        None
    };
    let (mut ofi, mut tcp) = (None, None);
    let mut lanes = Vec::new();
    if networked[me] {
        if allowed.ofi {
            let opened = OfiTransport::open(netconf::ofi(cfg, &job, remote_hosts), me, size);
            let status = match &opened {
                Ok(t) => OfiStatus::Address(t.address()),
                Err(e) => OfiStatus::Missing(e.to_string()),
            };
            boot.put(&key("ofi"), &status.encode())?;
            ofi = opened.ok();
        }
        if allowed.tcp {
            let tcp_cfg = netconf::tcp(cfg, &job, remote_hosts, shm.is_some());
            let t = TcpTransport::listen(tcp_cfg, me, size)?;
            boot.put(&key("tcp"), &t.local_addr().to_string())?;
            tcp = Some(t);
            for lane in 1..cfg.tcp_lanes {
                let t = TcpTransport::listen(
                    netconf::tcp_lane(cfg, &job, remote_hosts, lane),
                    me,
                    size,
                )?;
                boot.put(&key(&lane_key(lane)), &t.local_addr().to_string())?;
                lanes.push(t);
            }
        }
    }
    let (route, source) = job_route(cfg, &host, &hosts);
    if me == 0 {
        boot.put(&key("netroute"), &route.to_string())?;
    }
    boot.fence()?;

    // Step 3.
    let route = boot.get(0, &key("netroute"))?;
    let policy: NetRoute = route.parse().map_err(|why| CoreError::Protocol {
        src: 0,
        why: format!("published network route {route:?}: {why}"),
    })?;
    let statuses = read_ofi_statuses(boot, &networked, allowed.ofi)?;
    let has_ofi: Vec<bool> = statuses
        .iter()
        .map(|s| matches!(s, Some(OfiStatus::Address(_))))
        .collect();
    let peers = Peers::new(me, &hosts, allowed, &has_ofi, policy)?;
    if allowed.ofi && allowed.tcp && networked.iter().position(|&n| n) == Some(me) {
        warn_fallback(&statuses, &cfg.ofi_provider);
    }
    if !peers.uses(Route::Ofi) {
        ofi = None;
    }
    if !peers.uses(Route::Tcp) {
        tcp = None;
        lanes.clear();
    }
    if let Some(s) = shm.as_mut() {
        s.connect()?;
    }
    if let Some(o) = ofi.as_mut() {
        let addrs: Vec<Option<Vec<u8>>> = (0..size)
            .map(|r| match &statuses[r] {
                Some(OfiStatus::Address(a)) if peers.reaches_over(r, Wire::Ofi) => Some(a.clone()),
                _ => None,
            })
            .collect();
        o.connect(&addrs)?;
    }
    if let Some(t) = tcp.as_mut() {
        t.connect(&tcp_addresses(boot, &peers, "tcp")?)?;
    }
    let opened = lanes.len();
    for (i, t) in lanes.iter_mut().enumerate() {
        // A peer with fewer lanes never publishes this key: say why, not just that.
        let addrs =
            tcp_addresses(boot, &peers, &lane_key(i + 1)).map_err(|e| CoreError::ConfigWhy {
                var: "NF_TCP_LANES",
                value: cfg.tcp_lanes.to_string(),
                why: format!(
                    "this rank opened {opened} extra tcp lanes, but a peer published no \
                     address for lane {} ({e}); set the same NF_TCP_LANES on every rank",
                    i + 1
                ),
            })?;
        t.connect(&addrs)?;
    }
    if cfg.show_transports {
        let row: Vec<String> = (0..size).map(|r| peers.describe(r)).collect();
        boot.put(&key("routes"), &row.join(" "))?;
    }
    boot.fence()?;

    // Step 4.
    if let Some(s) = shm.as_ref() {
        s.unlink_own()?;
    }
    if cfg.show_transports && me == 0 {
        let between = remote_hosts.then(|| format!("{policy} ({source}, {})", cfg.ofi_provider));
        let striped = (!lanes.is_empty()).then(|| {
            format!(
                "tcp lanes: {} connections per pair, messages from {} B striped across them \
                 (NF_TCP_LANES, NF_TCP_STRIPE)",
                lanes.len() + 1,
                cfg.tcp_stripe
            )
        });
        print_matrix(boot, between, striped)?;
    }
    let dead_after = netconf::ofi(cfg, &job, remote_hosts).dead_after;
    let ofi = ofi.map(|t| OfiPoller::new(t, cfg.ofi_poll_every, peers.uses_shm(), dead_after));
    let lanes = (!lanes.is_empty()).then(|| {
        let reach = (0..size)
            .map(|r| peers.reaches_over(r, Wire::Tcp))
            .collect();
        let wait = netconf::tcp(cfg, &job, remote_hosts, false).dead_after;
        Lanes::new(lanes, reach, wait)
    });
    Ok(Net::new(peers, shm, ofi, tcp, lanes))
}

/// The wire-up key of tcp lane `lane`'s address.
fn lane_key(lane: usize) -> String {
    format!("tcp.lane{lane}")
}

/// The addresses published under `what` by the ranks reached over tcp (for some
/// sizes); `None` for the others.
fn tcp_addresses(
    boot: &mut dyn Bootstrap,
    peers: &Peers,
    what: &str,
) -> Result<Vec<Option<SocketAddr>>, CoreError> {
    (0..boot.size())
        .map(|rank| {
            if !peers.reaches_over(rank, Wire::Tcp) {
                return Ok(None);
            }
            let text = boot.get(rank, &key(what))?;
            let addr: SocketAddr = text.parse().map_err(|_| CoreError::Protocol {
                src: rank,
                why: format!("published {what} address {text:?} is not an address"),
            })?;
            Ok(Some(addr))
        })
        .collect()
}

/// The job's network route as rank 0 sees it (`netroute.rs`): `NF_NET_ROUTE`; else
/// the route `nf tune` cached to the other hosts, when they all have the same one;
/// else the provider's default.
fn job_route(cfg: &Config, me: &str, hosts: &[String]) -> (NetRoute, &'static str) {
    if let Some(r) = cfg.net_route {
        return (r, "NF_NET_ROUTE");
    }
    let mut others = hosts.iter().filter(|h| *h != me);
    let cached = others.next().and_then(|first| {
        let r = cfg.net_route_tuned.get(first)?;
        others
            .all(|h| cfg.net_route_tuned.get(h) == Some(r))
            .then_some(*r)
    });
    match cached {
        Some(r) => (r, "measured by nf tune"),
        None => (
            NetRoute::default_for(&cfg.ofi_provider),
            "the default for the ofi provider",
        ),
    }
}

/// The ofi status of every networked rank (indexed by rank, `None` for the others).
fn read_ofi_statuses(
    boot: &mut dyn Bootstrap,
    networked: &[bool],
    ofi_allowed: bool,
) -> Result<Vec<Option<OfiStatus>>, CoreError> {
    (0..boot.size())
        .map(|r| {
            if !ofi_allowed || !networked[boot.rank()] || !networked[r] {
                return Ok(None);
            }
            let text = boot.get(r, &key("ofi"))?;
            OfiStatus::decode(r, &text).map(Some)
        })
        .collect()
}

/// One warning for the job when some networked rank could not open ofi.
fn warn_fallback(statuses: &[Option<OfiStatus>], provider: &str) {
    let missing: Vec<(usize, &str)> = statuses
        .iter()
        .enumerate()
        .filter_map(|(r, s)| match s {
            Some(OfiStatus::Missing(why)) => Some((r, why.as_str())),
            _ => None,
        })
        .collect();
    if let Some(&(first, why)) = missing.first() {
        let ranks: Vec<usize> = missing.iter().map(|m| m.0).collect();
        tracing::warn!(
            "ofi (provider {provider}) is unavailable on ranks {ranks:?}, so their network \
             peers use tcp; rank {first} says: {why}"
        );
    }
}

/// Rank 0 prints who reaches whom by which transport (`nf run --show-transports`),
/// the route between hosts and the tcp lanes, if any.
fn print_matrix(
    boot: &mut dyn Bootstrap,
    between: Option<String>,
    lanes: Option<String>,
) -> Result<(), CoreError> {
    let rows = (0..boot.size())
        .map(|r| boot.get(r, &key("routes")))
        .collect::<Result<Vec<_>, _>>()?;
    let width = rows
        .iter()
        .flat_map(|row| row.split(' '))
        .map(str::len)
        .max()
        .unwrap_or(0)
        .max(5);
    let mut out = format!("transports (row: from rank, column: to rank)\n{:>6}", "");
    for r in 0..rows.len() {
        out += &format!(" {r:>width$}");
    }
    for (r, row) in rows.iter().enumerate() {
        out += &format!("\n{r:>6}");
        for cell in row.split(' ') {
            out += &format!(" {cell:>width$}");
        }
    }
    if let Some(b) = between {
        out += &format!("\nbetween hosts: {b}");
    }
    if let Some(l) = lanes {
        out += &format!("\n{l}");
    }
    eprintln!("{out}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_job_route_is_the_setting_else_an_agreed_measurement_else_the_default() {
        let hosts: Vec<String> = ["a", "b", "c", "b"].map(String::from).to_vec();
        let mut cfg = Config::default();
        assert_eq!(job_route(&cfg, "a", &hosts).0.to_string(), "tcp");
        cfg.ofi_provider = "verbs".into();
        assert_eq!(job_route(&cfg, "a", &hosts).0.to_string(), "ofi");
        let split: NetRoute = "tcp/ofi@65536".parse().unwrap();
        cfg.net_route_tuned.insert("b".into(), split);
        // Host c has no measurement: the default stays.
        assert_eq!(job_route(&cfg, "a", &hosts).0.to_string(), "ofi");
        cfg.net_route_tuned.insert("c".into(), split);
        assert_eq!(job_route(&cfg, "a", &hosts), (split, "measured by nf tune"));
        cfg.net_route = Some(NetRoute::single(Wire::Tcp));
        assert_eq!(
            job_route(&cfg, "a", &hosts),
            (NetRoute::single(Wire::Tcp), "NF_NET_ROUTE")
        );
    }
}
