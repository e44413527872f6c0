//! The shm fixture: segments in a temporary directory; a forged ring entry as the
//! malformed packet.

use std::sync::atomic::Ordering;

use nf_transport::shm::segment::{segment_path, Segment};
use nf_transport::shm::{ShmConfig, ShmTransport};

use crate::cases::{Fixture, Job};

/// The shm transport.
pub struct Shm;

const JOB: &str = "conformance";

/// What the job keeps: its directory, and (hostile jobs) a mapping of rank 2's segment.
struct Keep {
    _dir: tempfile::TempDir,
    victim: Option<Segment>,
}

fn job(n: usize, map_rank2: bool) -> Job<ShmTransport> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ShmConfig {
        dir: dir.path().to_owned(),
        rings: 1,
        frames: 8,
        frame_size: 4096,
        ..ShmConfig::default()
    };
    let mut eps: Vec<_> = (0..n)
        .map(|r| ShmTransport::create(&cfg, JOB, r, n).unwrap())
        .collect();
    for ep in &mut eps {
        ep.connect().unwrap();
    }
    let victim = map_rank2.then(|| Segment::open(&segment_path(dir.path(), JOB, 2), n).unwrap());
    for ep in &eps {
        ep.unlink_own().unwrap();
    }
    Job {
        eps: eps.into_iter().map(Some).collect(),
        keep: Box::new(Keep { _dir: dir, victim }),
    }
}

impl Fixture for Shm {
    type T = ShmTransport;

    fn job(n: usize) -> Job<ShmTransport> {
        job(n, false)
    }

    fn hostile_job() -> Job<ShmTransport> {
        job(3, true)
    }

    /// Rank 0 takes a ticket in rank 2's ring, as a sender does, and publishes an
    /// entry naming a frame that does not exist.
    fn inject_bad(job: &mut Job<ShmTransport>) {
        let keep: &Keep = job.keep.downcast_ref().unwrap();
        let view = keep.victim.as_ref().unwrap().view();
        let ring = view.geometry().ring_of(0);
        let ticket = view.control(ring).tail.fetch_add(1, Ordering::Relaxed);
        let slot = view.ring_slots(ring);
        slot.slot(ticket).frame.store(999, Ordering::Relaxed);
        slot.slot(ticket).seq.store(ticket + 1, Ordering::Release);
    }

    fn crash(_ep: ShmTransport) {
        unreachable!("peer_loss is not run on shm (see main.rs)")
    }
}
