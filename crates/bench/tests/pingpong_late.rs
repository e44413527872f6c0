//! A ping-pong partner that answers whole exchanges before it starts waiting for them.
//!
//! Handlers run during any wait, so the `to` rank of `PingPong::measure_pair` may
//! answer every PING, and receive the STOP, while it still waits for something else
//! (in `nf bench rings`: the barrier before the pair, which a dissemination barrier
//! lets some ranks leave earlier than others). Two such exchanges in a row once left
//! the second `measure_pair` waiting for a STOP that had already come (the STOP was a
//! flag, not a count): a hang seen on CI, 1 run in 20–50 across namespace hosts.
//!
//! The test runs itself as the two ranks of a real job (`nf_launch`, shared memory):
//! rank 0 does two exchanges, then tells rank 1 to start; rank 1 answers both while
//! it waits for that word, and only then makes its own two `measure_pair` calls,
//! which must return. The launcher's timeout ends a hang as a failure.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use nf_bench::pingpong::PingPong;
use nf_core::World;

const GO: u16 = 0x0777;
const TEST: &str = "a_partner_that_answered_two_exchanges_before_waiting_finishes_both";

#[test]
fn a_partner_that_answered_two_exchanges_before_waiting_finishes_both() {
    if std::env::var_os("NF_RANK").is_some() {
        return rank();
    }
    let exe = std::env::current_exe().expect("the test binary");
    let mut spec = nf_launch::LaunchSpec::new(2, exe);
    spec.args = ["--exact", TEST, "--nocapture", "--test-threads", "1"]
        .map(Into::into)
        .to_vec();
    spec.timeout = Some(Duration::from_secs(60));
    let shm = std::path::PathBuf::from(
        std::env::var_os("NF_SHM_DIR").unwrap_or_else(|| "/dev/shm".into()),
    );
    let report = nf_launch::run_with(&spec, |job| {
        nf_transport::shm::remove_job_segments(&shm, job);
    })
    .expect("the job starts");
    assert!(
        matches!(report.outcome, nf_launch::Outcome::Success),
        "the job failed (a timeout means the second measure_pair waited for a STOP that \
         had already come): {:?}",
        report.outcome
    );
}

/// One rank's part (see the module doc).
fn rank() {
    let world = World::init().expect("join the job");
    let pp = PingPong::new(&world).expect("ping-pong handlers");
    let go = Rc::new(Cell::new(false));
    let g = Rc::clone(&go);
    world
        .register(GO, move |_, _| g.set(true))
        .expect("GO handler");
    world.barrier().expect("barrier after registering");
    if world.rank() == 0 {
        for size in [8, 1000] {
            let samples = pp.measure_pair(0, 1, size, 3, 1).expect("exchange");
            assert_eq!(samples.map(|s| s.len()), Some(3));
        }
        world.send(1, GO, &[], &[]).expect("send GO");
    } else {
        // Both exchanges, STOPs included, are answered inside this wait.
        world.wait_until(|| go.get()).expect("wait for GO");
        for size in [8, 1000] {
            assert!(pp
                .measure_pair(0, 1, size, 3, 1)
                .expect("exchange")
                .is_none());
        }
    }
    world.barrier().expect("final barrier");
    world.finalize().expect("finalize");
}
