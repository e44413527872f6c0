//! The ofi fixture: libfabric's tcp provider on loopback (as `ofi.rs` uses); a rank
//! of another job (another cookie) is the hostile rank: the packets it sends fail
//! their check word. A header cannot be forged otherwise: the provider carries only
//! what the transport's send path encodes.

use std::time::Duration;

use nf_transport::ofi::{self, OfiConfig, OfiTransport};

use crate::cases::{Fixture, Job};

/// The ofi transport.
pub struct Ofi;

const COOKIE: u64 = 0x9f00_c0ff_ee00_0004;

fn config() -> OfiConfig {
    if let Err(e) = ofi::available() {
        panic!(
            "{e}\nthe ofi tests need libfabric: run scripts/setup.sh (it installs \
             libfabric-dev and libfabric-bin), then rebuild"
        );
    }
    OfiConfig {
        provider: "tcp".into(),
        node: Some("127.0.0.1".into()),
        domain: Some("lo".into()),
        cookie: COOKIE,
        max_payload: 16 * 1024,
        queue_limit: 8,
        dead_after: Duration::from_secs(2),
        linger: Duration::from_millis(500),
        ..OfiConfig::default()
    }
}

/// Opens one endpoint per config and inserts every address into every endpoint.
fn job(cfgs: Vec<OfiConfig>) -> Job<OfiTransport> {
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
    Job {
        eps: eps.into_iter().map(Some).collect(),
        keep: Box::new(()),
    }
}

impl Fixture for Ofi {
    type T = OfiTransport;

    fn job(n: usize) -> Job<OfiTransport> {
        job(vec![config(); n])
    }

    fn hostile_job() -> Job<OfiTransport> {
        let stranger = OfiConfig {
            cookie: COOKIE ^ 1,
            ..config()
        };
        job(vec![stranger, config(), config()])
    }

    fn inject_bad(job: &mut Job<OfiTransport>) {
        job.send(0, 2, b"intruder", b"payload");
    }

    fn crash(ep: OfiTransport) {
        drop(ep);
    }
}
