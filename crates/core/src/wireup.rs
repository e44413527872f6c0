//! Wire-up: from "I am rank r of n" to transports connected to every peer.
//!
//! 1. Every rank publishes its host identity; fence; every rank reads all of them.
//!    From the host table every rank can tell which ranks need a network transport
//!    (a peer on another host, or any peer when shm is not allowed).
//! 2. Local rank 0 of each host reclaims segments left by dead jobs. If a peer shares
//!    our memory, create our shm receive segment. If we need the network: open an
//!    ofi endpoint (`NF_OFI_PROVIDER`) and publish its address, or why it failed;
//!    start the tcp listener and publish its address. Fence.
//! 3. Read the ofi status of the networked ranks and build the peer table
//!    ([`Peers`]): same host → shm; other hosts → ofi when both ends opened it, else
//!    tcp. The lowest networked rank warns once for the job if some rank fell back.
//!    Drop the transports no route uses (they are never polled). Map the local
//!    peers' segments, insert the ofi peers' addresses, connect to the tcp peers.
//!    Fence.
//! 4. Unlink our segment's name (nothing is left behind if we are killed from here
//!    on) and enable single-copy reads if the kernel allows them.

use std::net::SocketAddr;
use std::time::Duration;

use nf_transport::ofi::OfiTransport;
use nf_transport::shm::{segment, ShmTransport};
use nf_transport::tcp::TcpTransport;

use crate::bootstrap::Bootstrap;
use crate::config::Config;
use crate::error::CoreError;
use crate::net::{Net, OfiPoller};
use crate::netconf;
use crate::peers::{Peers, Route};
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
        Some(ShmTransport::create(
            &cfg.shm,
            &shm_job,
            local_rank,
            local.len(),
        )?)
    } else {
        None
    };
    let (mut ofi, mut tcp) = (None, None);
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
        }
    }
    boot.fence()?;

    // Step 3.
    let statuses = read_ofi_statuses(boot, &networked, allowed.ofi)?;
    let has_ofi: Vec<bool> = statuses
        .iter()
        .map(|s| matches!(s, Some(OfiStatus::Address(_))))
        .collect();
    let peers = Peers::new(me, &hosts, allowed, &has_ofi)?;
    if allowed.ofi && allowed.tcp && networked.iter().position(|&n| n) == Some(me) {
        warn_fallback(&statuses, &cfg.ofi_provider);
    }
    if !peers.uses(Route::Ofi) {
        ofi = None;
    }
    if !peers.uses(Route::Tcp) {
        tcp = None;
    }
    if let Some(s) = shm.as_mut() {
        s.connect()?;
    }
    if let Some(o) = ofi.as_mut() {
        let addrs: Vec<Option<Vec<u8>>> = (0..size)
            .map(|r| match (&peers.routes[r], &statuses[r]) {
                (Route::Ofi, Some(OfiStatus::Address(a))) => Some(a.clone()),
                _ => None,
            })
            .collect();
        o.connect(&addrs)?;
    }
    if let Some(t) = tcp.as_mut() {
        let mut addrs = vec![None; size];
        for (rank, route) in peers.routes.iter().enumerate() {
            if *route == Route::Tcp {
                let text = boot.get(rank, &key("tcp"))?;
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
        boot.put(&key("routes"), &row.join(" "))?;
    }
    boot.fence()?;

    // Step 4.
    if let Some(s) = shm.as_ref() {
        s.unlink_own()?;
    }
    if cfg.show_transports && me == 0 {
        print_matrix(boot)?;
    }
    let dead_after = netconf::ofi(cfg, &job, remote_hosts).dead_after;
    let ofi = ofi.map(|t| OfiPoller::new(t, cfg.ofi_poll_every, peers.uses_shm(), dead_after));
    Ok(Net {
        peers,
        shm,
        ofi,
        tcp,
    })
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

/// Rank 0 prints who reaches whom by which transport (`nf run --show-transports`).
fn print_matrix(boot: &mut dyn Bootstrap) -> Result<(), CoreError> {
    let rows = (0..boot.size())
        .map(|r| boot.get(r, &key("routes")))
        .collect::<Result<Vec<_>, _>>()?;
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
