//! Wire-up: from "I am rank r of n" to transports connected to every peer.
//!
//! 1. Every rank publishes its host identity; fence; every rank reads all of them
//!    and builds the peer table ([`Peers`]): same host → shm, other hosts → tcp.
//! 2. Local rank 0 of each host reclaims segments left by dead jobs. If any peer is
//!    on this host, create our shm receive segment. If any peer is remote, start
//!    the tcp listener and publish its address. Fence.
//! 3. Map the local peers' segments; connect to the remote peers. Fence.
//! 4. Unlink our segment's name (nothing is left behind if we are killed from here
//!    on) and enable single-copy reads if the kernel allows them.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use nf_transport::shm::{segment, ShmTransport};
use nf_transport::tcp::{TcpConfig, TcpTransport};

use crate::bootstrap::Boot;
use crate::config::Config;
use crate::error::CoreError;
use crate::net::Net;
use crate::peers::{host_identity, Peers};

fn key(what: &str, rank: usize) -> String {
    format!("nf.{what}.{rank}")
}

fn hash_of(s: &str) -> u64 {
    let mut h = DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// Publishes `value` under `what`, fences, and returns every rank's value.
fn exchange(boot: &mut Boot, what: &str, value: &str) -> Result<Vec<String>, CoreError> {
    let Some(pmi) = boot.pmi.as_mut() else {
        return Ok(vec![value.to_owned()]);
    };
    pmi.put(&key(what, boot.rank), value)?;
    pmi.fence()?;
    (0..boot.size)
        .map(|r| Ok(pmi.get(&key(what, r))?))
        .collect()
}

/// Runs the wire-up steps above and returns the connected transports.
pub(crate) fn connect(boot: &mut Boot, cfg: &Config) -> Result<Net, CoreError> {
    let me = boot.rank;
    let host = host_identity();
    let hosts = exchange(boot, "host", &host)?;
    let peers = Peers::new(me, &hosts, cfg.transports)?;

    // Ranks of several "hosts" may share one /dev/shm (network namespaces on one
    // machine), so segment names carry the host as well as the job.
    let shm_job = format!("{}-{:08x}", boot.job, hash_of(&host) as u32);
    let local_rank = peers.local_index(me);
    if local_rank == 0 {
        segment::reclaim_stale(&cfg.shm.dir, Duration::from_secs(60));
    }
    let mut shm = if peers.uses_shm() {
        Some(ShmTransport::create(
            &cfg.shm,
            &shm_job,
            local_rank,
            peers.local.len(),
        )?)
    } else {
        None
    };
    let mut tcp = if peers.uses_tcp() {
        let remote = hosts.iter().any(|h| *h != host);
        let t = TcpTransport::listen(tcp_config(cfg, &boot.job, remote), me, boot.size)?;
        if let Some(pmi) = boot.pmi.as_mut() {
            pmi.put(&key("tcp", me), &t.local_addr().to_string())?;
        }
        Some(t)
    } else {
        None
    };
    boot.fence()?;

    if let Some(s) = shm.as_mut() {
        s.connect()?;
    }
    if let Some(t) = tcp.as_mut() {
        let pmi = boot
            .pmi
            .as_mut()
            .ok_or_else(|| CoreError::Unsupported("tcp without a launcher".into()))?;
        let mut addrs = vec![None; boot.size];
        for (rank, route) in peers.routes.iter().enumerate() {
            if *route == crate::peers::Route::Tcp {
                let text = pmi.get(&key("tcp", rank))?;
                let addr: SocketAddr = text.parse().map_err(|_| CoreError::Protocol {
                    src: rank,
                    why: format!("published tcp address {text:?} is not an address"),
                })?;
                addrs[rank] = Some(addr);
            }
        }
        t.connect(&addrs)?;
    }
    if cfg.show_transports {
        let row: Vec<&str> = peers.routes.iter().map(|r| r.name()).collect();
        if let Some(pmi) = boot.pmi.as_mut() {
            pmi.put(&key("routes", me), &row.join(" "))?;
        }
    }
    boot.fence()?;
    if let Some(s) = shm.as_ref() {
        s.unlink_own()?;
    }
    if cfg.show_transports && me == 0 {
        print_matrix(boot, &peers)?;
    }
    Ok(Net { peers, shm, tcp })
}

/// Rank 0 prints who reaches whom by which transport (`nf run --show-transports`).
fn print_matrix(boot: &mut Boot, peers: &Peers) -> Result<(), CoreError> {
    let rows = match boot.pmi.as_mut() {
        Some(pmi) => (0..boot.size)
            .map(|r| Ok(pmi.get(&key("routes", r))?))
            .collect::<Result<Vec<_>, CoreError>>()?,
        None => vec![peers
            .routes
            .iter()
            .map(|r| r.name())
            .collect::<Vec<_>>()
            .join(" ")],
    };
    let mut out = format!("transports (row: from rank, column: to rank)\n{:>6}", "");
    for r in 0..rows.len() {
        out += &format!(" {r:>5}");
    }
    for (r, row) in rows.iter().enumerate() {
        out += &format!("\n{r:>6}");
        for cell in row.split(' ') {
            out += &format!(" {cell:>5}");
        }
    }
    eprintln!("{out}");
    Ok(())
}

/// Where the tcp listener binds: `NF_TCP_BIND`; loopback when every peer is on this
/// host; else the first non-loopback IPv4 address that is up.
fn tcp_config(cfg: &Config, job: &str, remote_peers: bool) -> TcpConfig {
    let bind = cfg.tcp_bind.unwrap_or_else(|| {
        if remote_peers {
            first_external_ipv4().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
        } else {
            IpAddr::V4(Ipv4Addr::LOCALHOST)
        }
    });
    TcpConfig {
        bind,
        cookie: hash_of(job),
        ..TcpConfig::default()
    }
}

fn first_external_ipv4() -> Option<IpAddr> {
    if_addrs::get_if_addrs()
        .ok()?
        .into_iter()
        .map(|i| i.ip())
        .find(|ip| ip.is_ipv4() && !ip.is_loopback())
}
