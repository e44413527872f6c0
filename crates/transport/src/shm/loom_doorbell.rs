//! Model checks of the doorbell (`doorbell.rs`) under loom: the receiver's arm /
//! re-check / sleep against the sender's publish / check / wake, with the real
//! sending code (`tx.rs`, which rings after publishing), the real re-check
//! (`Receiver::pending`) and the futex modelled on loom's lock (`doorbell.rs`).
//!
//! Run with the other loom checks (`loom_tests.rs` says how; scripts/test.sh does).
//! The modelled sleep has no timeout, so a wake-up lost in any interleaving leaves the
//! receiver blocked and loom fails the model with a deadlock.
//!
//! Checks:
//! 1. A receiver that sleeps whenever a poll finds nothing gets every packet of a
//!    sender that rings after each (two packets: the second may find the receiver
//!    armed, asleep or awake).
//! 2. The mutation: the same receiver without the re-check after arming sleeps through
//!    a packet published between its empty poll and its arming (a deadlock, which
//!    loom must find — if it does not, the model checks nothing).

use std::sync::Arc;
use std::time::Duration;

use loom::thread;

use super::doorbell::{self, Kernel};
use super::loom_tests::{geometry, send, Memory};
use super::rx::Receiver;
use super::segment::Segment;
use crate::Packet;

/// Rank 1 takes `n` packets, sleeping on its doorbell whenever a poll finds nothing;
/// `recheck` false is the mutation (no re-check after arming).
fn receive_sleeping(mem: &Arc<Memory>, n: u8, recheck: bool) {
    let mut rx = Receiver::new(Segment::model(Arc::clone(mem)), 1);
    let view = mem.view();
    let word = view.doorbell();
    let mut next = 0u8;
    while next < n {
        match rx.poll().unwrap() {
            Some(p) => {
                assert_eq!(p.meta(), &[next][..], "packet out of order");
                next += 1;
            }
            None => {
                let rx = &rx;
                doorbell::sleep(
                    word,
                    || recheck && rx.pending(),
                    Duration::from_millis(10),
                    &Kernel,
                );
            }
        }
    }
}

/// Two 8 B packets through the fast box, to a receiver that sleeps when idle.
fn model(recheck: bool) {
    loom::model(move || {
        let mem = Memory::new(geometry(2), 1, true);
        let sender = {
            let mem = Arc::clone(&mem);
            thread::spawn(move || send(&mem, &[8, 8], false))
        };
        receive_sleeping(&mem, 2, recheck);
        sender.join().unwrap();
    });
}

#[test]
fn loom_a_sleeping_receiver_is_woken_for_every_packet() {
    model(true);
}

#[test]
#[should_panic(expected = "deadlock")]
fn loom_without_the_recheck_a_receiver_sleeps_through_a_packet() {
    model(false);
}
