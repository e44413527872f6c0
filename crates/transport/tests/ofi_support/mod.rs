//! Helpers shared by the ofi test binaries (`ofi.rs`, the conformance suite): the
//! tcp provider on loopback, a job of connected endpoints.
#![allow(dead_code)]

use std::time::Duration;

use nf_transport::ofi::{self, OfiConfig, OfiTransport};

/// Fails the test unless the ofi transport can run here.
pub fn require_ofi() {
    if let Err(e) = ofi::available() {
        panic!(
            "{e}\nthe ofi tests need libfabric: run scripts/setup.sh (it installs \
             libfabric-dev and libfabric-bin), then rebuild"
        );
    }
}

/// Settings for endpoints of job `cookie` on loopback.
pub fn config(cookie: u64) -> OfiConfig {
    require_ofi();
    OfiConfig {
        provider: "tcp".into(),
        node: Some("127.0.0.1".into()),
        domain: Some("lo".into()),
        cookie,
        max_payload: 64 * 1024,
        dead_after: Duration::from_secs(2),
        ..OfiConfig::default()
    }
}

/// Opens `cfgs.len()` endpoints and inserts every address into every endpoint.
pub fn job(cfgs: Vec<OfiConfig>) -> Vec<OfiTransport> {
    let n = cfgs.len();
    let mut eps: Vec<_> = cfgs
        .into_iter()
        .enumerate()
        .map(|(r, c)| OfiTransport::open(c, r, n).unwrap())
        .collect();
    let addrs: Vec<_> = eps.iter().map(|e| Some(e.address())).collect();
    for ep in &mut eps {
        let mut table = addrs.clone();
        table[ep.rank()] = None;
        ep.connect(&table).unwrap();
    }
    eps
}
