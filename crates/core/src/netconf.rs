//! Settings of the network transports for one job, derived from [`Config`] and the
//! host table: where to bind, the job cookie, how soon a silent peer is lost.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use nf_transport::ofi::OfiConfig;
use nf_transport::tcp::TcpConfig;

use crate::config::Config;
use nf_sys::hash::fnv1a;

/// Largest ofi payload per packet (`NF_OFI_PACKET`): a packet (20 B header, metadata,
/// payload) stays under `ofi_rxm`'s eager limit (16 KiB buffers, less its own header),
/// so the tcp and verbs providers send every packet eagerly, in order on one
/// connection. Larger packets are correct too (the transport's send windows bound
/// what a receiver holds to restore order), but go by rendezvous, one handshake per
/// packet: measured across two namespace hosts (`bench/compare-ofi.sh --part packet`),
/// 64 KiB packets doubled the bandwidth of 64 KiB messages and lost 15 % at 1 MiB and
/// 46 % at 4 MiB.
pub(crate) const OFI_PACKET: usize = 16 * 1024 - 512;

/// Longest sleep of a tcp-only rank's poll for the rest of a large body (the tcp
/// transport's `rx.rs`, step 6): long enough that a 256 KiB share arrives, short
/// enough that the rank's liveness checks and other connections wait little.
pub(crate) const TCP_BODY_WAIT: Duration = Duration::from_millis(1);

/// Where network transports bind: `NF_TCP_BIND`; loopback when every peer is on this
/// host; else the first non-loopback IPv4 address that is up.
fn bind_addr(cfg: &Config, remote_hosts: bool) -> IpAddr {
    cfg.tcp_bind.unwrap_or_else(|| {
        if remote_hosts {
            first_external_ipv4().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
        } else {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }
    })
}

/// How long a busy tcp connection stays read by the rank's own polls when the rank
/// also has shared-memory peers: each such poll pays a `recv`, which shm round trips
/// feel, so the connection goes back to the progress thread soon.
const HOT_WITH_SHM: Duration = Duration::from_micros(500);
/// The same without shared-memory peers: the rank waits for the network anyway, and
/// a connection handed back makes the next arrival cost the thread's wake-up.
const HOT_NETWORK_ONLY: Duration = Duration::from_millis(20);

/// The tcp transport's settings for `job`; `shares_memory` when the rank also has
/// shm peers.
pub(crate) fn tcp(cfg: &Config, job: &str, remote_hosts: bool, shares_memory: bool) -> TcpConfig {
    let mut t = TcpConfig {
        bind: bind_addr(cfg, remote_hosts),
        cookie: fnv1a(job.as_bytes()),
        hot_for: if shares_memory {
            HOT_WITH_SHM
        } else {
            HOT_NETWORK_ONLY
        },
        ..TcpConfig::default()
    };
    if let Some(d) = cfg.dead_after {
        t.dead_after = d;
    }
    if let Some(h) = cfg.tcp_hot_tuned.filter(|_| !shares_memory) {
        t.hot_for = h;
    }
    if let Some(h) = cfg.tcp_hot_for {
        t.hot_for = h;
    }
    t
}

/// The settings of tcp lane `lane` (1 ..< `NF_TCP_LANES`, `lanes.rs`): the main
/// transport's, but read by its progress thread alone (its polls would only add
/// `recv`s to the owner's loop while the point is copies on other threads), with a
/// cookie of its own so a lane and the main connection can never be confused.
pub(crate) fn tcp_lane(cfg: &Config, job: &str, remote_hosts: bool, lane: usize) -> TcpConfig {
    TcpConfig {
        cookie: fnv1a(format!("{job}/lane{lane}").as_bytes()),
        hot_for: Duration::ZERO,
        ..tcp(cfg, job, remote_hosts, false)
    }
}

/// The ofi transport's settings for `job`: the provider from `NF_OFI_PROVIDER`; for
/// IP providers the node is `NF_OFI_NODE`, else the address tcp would bind (so the
/// endpoint is reachable from the other hosts, not only on loopback).
pub(crate) fn ofi(cfg: &Config, job: &str, remote_hosts: bool) -> OfiConfig {
    let node = cfg.ofi_node.clone().or_else(|| {
        nf_transport::ofi::binds_ip(&cfg.ofi_provider)
            .then(|| bind_addr(cfg, remote_hosts).to_string())
    });
    let mut o = OfiConfig {
        provider: cfg.ofi_provider.clone(),
        node,
        cookie: fnv1a(job.as_bytes()),
        max_payload: cfg.ofi_packet,
        ..OfiConfig::default()
    };
    if let Some(d) = cfg.dead_after {
        o.dead_after = d;
    }
    o
}

fn first_external_ipv4() -> Option<IpAddr> {
    if_addrs::get_if_addrs()
        .ok()?
        .into_iter()
        .map(|i| i.ip())
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
}
