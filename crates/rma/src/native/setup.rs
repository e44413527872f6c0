//! Start-up of native RMA (step 6 of `rma.rs`), collective over the world:
//! 1. A proc with peers in other domains opens an RDM endpoint of `NF_OFI_PROVIDER`
//!    with `FI_RMA` and a wait fd, bound where the service listens; it needs both, or
//!    says why not. Unless `NF_RMA_OFI=off`, or `auto` with a provider that is itself
//!    carried over sockets (`tcp`, `sockets`, `udp`: [`worth_opening`]). Every proc
//!    said in its introduction whether it would (`wanted`): when no proc with peers
//!    in other domains would, every proc knows it and the whole step ends here, with
//!    no round across the hosts.
//! 2. Allgather every proc's [`Status`]: not needed, its address, or why it has none.
//! 3. Proc `p` is reached natively when it is in another domain and both ends have an
//!    endpoint. With `NF_RMA_OFI=on` a proc that needed one and has none fails every
//!    proc's start-up alike, naming it; with `auto` the lowest proc with remote peers
//!    logs one warning saying who falls back to the service thread, and why.
//! 4. Insert the addresses of the procs reached natively; start the progress thread.
//!    With no such proc the endpoint is closed at once and costs nothing.

use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use nf_transport::ofi::{self, OfiConfig, OfiTransport};
use nf_transport::rma::NativeRma;

use super::progress::Progress;
use super::Native;
use crate::config::{OfiMode, RmaConfig};
use crate::domain::Domains;
use crate::error::RmaError;
use crate::rma::gather;
use crate::wireup::Wireup;

/// What a proc publishes at step 2.
enum Status {
    /// No peer in another domain (or `NF_RMA_OFI=off`).
    Unneeded,
    /// Its endpoint's address.
    Ready(Vec<u8>),
    /// Why it has no endpoint.
    Failed(String),
}

impl Status {
    fn encode(&self) -> Vec<u8> {
        let (tag, body) = match self {
            Status::Unneeded => (0, &[][..]),
            Status::Ready(a) => (1, &a[..]),
            Status::Failed(why) => (2, why.as_bytes()),
        };
        let mut b = vec![tag];
        b.extend_from_slice(body);
        b
    }

    fn decode(b: &[u8]) -> Option<Status> {
        let (&tag, body) = b.split_first()?;
        match tag {
            0 if body.is_empty() => Some(Status::Unneeded),
            1 if !body.is_empty() => Some(Status::Ready(body.to_vec())),
            2 => Some(Status::Failed(String::from_utf8_lossy(body).into_owned())),
            _ => None,
        }
    }
}

/// Whether `auto` opens an endpoint of `provider` at all. A provider carried over
/// sockets moves put and get no faster than the service thread's own TCP protocol
/// (architecture.md, "Native RMA across domains": tcp's get 8 B 33.8 against 17.0 µs,
/// 1 MiB on par), while loading libfabric and its providers costs every proc seconds
/// of start-up on a loaded host (2–3 s per rank measured across two namespace hosts):
/// only `on` pays that for it.
pub(crate) fn worth_opening(mode: OfiMode, provider: &str) -> bool {
    match mode {
        OfiMode::Off => false,
        OfiMode::On => true,
        OfiMode::Auto => !ofi::binds_ip(provider),
    }
}

/// Step 1: our endpoint, or why we have none.
fn open(
    cfg: &RmaConfig,
    bind: IpAddr,
    cookie: u64,
    rank: usize,
    size: usize,
) -> Result<OfiTransport, String> {
    ofi::available().map_err(|e| e.to_string())?;
    let mut o = OfiConfig {
        provider: cfg.ofi_provider.clone(),
        node: ofi::binds_ip(&cfg.ofi_provider).then(|| bind.to_string()),
        cookie,
        // Messaging is not used on this endpoint: keep its buffers small.
        max_payload: 64,
        rx_buffers: 2,
        rma: true,
        wait: true,
        ..OfiConfig::default()
    };
    if let Some(d) = cfg.dead_after {
        o.dead_after = d;
    }
    let provider = o.provider.clone();
    let t = OfiTransport::open(o, rank, size).map_err(|e| e.to_string())?;
    if !t.rma_supported() {
        return Err(format!(
            "provider {provider} offers no FI_RMA on this endpoint"
        ));
    }
    if t.wait_fd().is_none() {
        return Err(format!(
            "provider {provider} offers no wait fd on its completion queue, so no thread \
             could serve peers' operations while this proc computes"
        ));
    }
    Ok(t)
}

/// Steps 1–4; `None` when no proc is reached natively.
///
/// `wanted[p]`: proc `p`'s [`worth_opening`], from its introduction.
pub(crate) fn setup(
    cfg: &RmaConfig,
    wire: &dyn Wireup,
    domains: &Domains,
    wanted: &[bool],
    bind: IpAddr,
    cookie: u64,
) -> Result<Option<Native>, RmaError> {
    let (rank, size) = (wire.rank(), wire.members().len());
    let remote = |p: usize| p != rank && !domains.same(p);

    // Step 1.
    // With two domains or more every proc has peers in another.
    if domains.count() < 2 || !wanted.contains(&true) {
        return Ok(None);
    }
    let mut ep = None;
    let mine = if !worth_opening(cfg.ofi, &cfg.ofi_provider) || !(0..size).any(remote) {
        Status::Unneeded
    } else {
        match open(cfg, bind, cookie, rank, size) {
            Ok(t) => {
                let a = t.address();
                ep = Some(t);
                Status::Ready(a)
            }
            Err(why) => Status::Failed(why),
        }
    };

    // Step 2.
    let all = gather(wire, &mine.encode(), "ofi rma status", Status::decode)?;

    // Step 3.
    let failed = all.iter().enumerate().find_map(|(p, s)| match s {
        Status::Failed(why) => Some((p, why)),
        _ => None,
    });
    if let Some((p, why)) = failed {
        if cfg.ofi == OfiMode::On {
            return Err(RmaError::Collective {
                op: "Rma::new",
                why: format!(
                    "NF_RMA_OFI=on, but proc {p} cannot use the ofi transport's native RMA: \
                     {why} (NF_RMA_OFI=auto falls back to the service thread)"
                ),
            });
        }
        // The lowest proc with remote peers speaks for the job.
        if all.iter().position(|s| !matches!(s, Status::Unneeded)) == Some(rank) {
            tracing::warn!(
                "rma: proc {p} cannot use the ofi transport's native RMA ({why}); put and \
                 get to and from it go through the service thread"
            );
        }
    }
    let Some(mut t) = ep else {
        return Ok(None);
    };
    let route: Vec<bool> = (0..size)
        .map(|p| remote(p) && matches!(all[p], Status::Ready(_)))
        .collect();
    if !route.contains(&true) {
        return Ok(None);
    }

    // Step 4.
    let peers: Vec<Option<Vec<u8>>> = all
        .into_iter()
        .enumerate()
        .map(|(p, s)| match s {
            Status::Ready(a) if route[p] => Some(a),
            _ => None,
        })
        .collect();
    t.connect(&peers).map_err(|e| RmaError::Core(e.into()))?;
    let caps = t.rma_caps();
    let wait_fd = t.wait_fd().expect("checked at step 1");
    let ep = Arc::new(Mutex::new(t));
    let progress = Progress::start(Arc::clone(&ep), wait_fd, rank)?;
    Ok(Some(Native {
        ep,
        progress,
        route,
        caps,
        chunk: cfg.chunk,
        next_tag: 1,
        ops: Default::default(),
        reads: vec![0; size],
        writes: vec![0; size],
        staged: 0,
        pool: Vec::new(),
        done: Vec::new(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_opens_no_endpoint_of_a_provider_carried_over_sockets() {
        for p in ["tcp", "tcp;ofi_rxm", "sockets", "udp"] {
            assert!(!worth_opening(OfiMode::Auto, p), "{p}");
            assert!(worth_opening(OfiMode::On, p), "{p}");
        }
        for p in ["verbs;ofi_rxm", "efa", "no-such-provider"] {
            assert!(worth_opening(OfiMode::Auto, p), "{p}");
            assert!(!worth_opening(OfiMode::Off, p), "{p}");
        }
    }
}
