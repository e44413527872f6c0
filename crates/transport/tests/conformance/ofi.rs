//! The ofi fixture: libfabric's tcp provider on loopback (as `ofi.rs` uses); a rank
//! of another job (another cookie) is the hostile rank: the packets it sends fail
//! their check word. A header cannot be forged otherwise: the provider carries only
//! what the transport's send path encodes.

use std::time::Duration;

use nf_transport::ofi::{OfiConfig, OfiTransport};

use crate::cases::{Fixture, Job};
use crate::ofi_support;

/// The ofi transport.
pub struct Ofi;

const COOKIE: u64 = 0x9f00_c0ff_ee00_0004;

fn config() -> OfiConfig {
    OfiConfig {
        max_payload: 16 * 1024,
        queue_limit: 8,
        linger: Duration::from_millis(500),
        ..ofi_support::config(COOKIE)
    }
}

fn job(cfgs: Vec<OfiConfig>) -> Job<OfiTransport> {
    Job {
        eps: ofi_support::job(cfgs).into_iter().map(Some).collect(),
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
