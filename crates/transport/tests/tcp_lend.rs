//! Large frames lent from the sender's buffer (`tcp/lend.rs`), over real sockets on
//! loopback: they arrive whole and in order, whether the loan is written out, given
//! up, or ended by a panic, and two ranks lending to each other both finish.

mod tcp_support;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

use nf_transport::tcp::{TcpConfig, TcpTransport, LEND_MIN};
use nf_transport::{Messaging, Packet, SendStatus};
use tcp_support::*;

/// A frame size that the sockets cannot hold, so that a rest is lent: twice the
/// largest send and receive buffers the kernel may grow to (at least 16 MiB).
fn big() -> usize {
    let max = |what: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{what}"))
            .ok()
            .and_then(|v| v.split_whitespace().nth(2)?.parse::<usize>().ok())
            .unwrap_or(8 << 20)
    };
    (2 * (max("tcp_wmem") + max("tcp_rmem"))).max(16 << 20)
}

fn cfg(max_payload: usize) -> TcpConfig {
    TcpConfig {
        max_payload,
        ..config()
    }
}

/// `len` bytes that differ with `seed` and position.
fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed)
        .collect()
}

/// Polls `ep` until a packet comes (at most 30 s) and checks it is `(meta, payload)`.
fn expect(ep: &mut TcpTransport, meta: &[u8], payload: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(p) = ep.poll().unwrap() {
            assert_eq!(p.meta(), meta, "packets out of order");
            assert_eq!(p.payload().len(), payload.len(), "wrong length");
            assert!(p.payload() == payload, "payload of {meta:?} corrupted");
            return;
        }
        assert!(Instant::now() < deadline, "nothing arrived");
        std::thread::yield_now();
    }
}

#[test]
fn a_lent_frame_arrives_whole_and_before_what_was_sent_during_the_loan() {
    let n = big();
    let mut eps = job(vec![cfg(n); 2]);
    let (mut r1, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    let payload = pattern(1, n);
    let lender = r0.lender();
    r0.expect_from(1);
    let receiver = std::thread::spawn(move || {
        expect(&mut r1, b"big", &pattern(1, n));
        expect(&mut r1, b"small", b"after");
        r1
    });
    let (status, waited) = lender
        .send(1, b"big", &payload, |loan| {
            assert!(loan.left() >= LEND_MIN, "a rest of the frame is lent");
            // Sent during the loan: it must wait behind the lent bytes.
            assert_eq!(
                r0.try_send(1, b"small", b"after").unwrap(),
                SendStatus::Sent
            );
            let deadline = Instant::now() + Duration::from_secs(30);
            while loan.left() > 0 && Instant::now() < deadline {
                assert!(r0.poll().unwrap().is_none());
            }
            loan.left()
        })
        .unwrap();
    assert_eq!((status, waited), (SendStatus::Sent, Some(0)));
    receiver.join().unwrap();
    let stats = r0.stats();
    assert_eq!((stats.lent, stats.reclaimed), (1, 0));
}

/// Ranks 0 and 1 where rank 1 does not read: its progress thread stopped on a full
/// inbox (two frames of `FILL` bytes, sent first), so rank 0's socket stays full.
fn stalled_pair(n: usize) -> (TcpTransport, TcpTransport) {
    let receiver_cfg = TcpConfig {
        recv_limit: FILL,
        hot_for: Duration::ZERO,
        ..cfg(n)
    };
    let mut eps = job(vec![cfg(n), receiver_cfg]);
    let (r1, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    for _ in 0..2 {
        assert_eq!(
            r0.try_send(1, b"fill", &[7; FILL]).unwrap(),
            SendStatus::Sent
        );
    }
    (r0, r1)
}

/// Bytes in each of the two frames that fill a stalled receiver's inbox.
const FILL: usize = 200 << 10;

#[test]
fn a_loan_given_up_is_copied_and_the_buffer_is_free_at_once() {
    let n = big();
    let (mut r0, mut r1) = stalled_pair(n);
    let mut payload = pattern(2, n);
    let (status, waited) = r0
        .lender()
        .send(1, b"big", &payload, |loan| loan.left())
        .unwrap();
    assert_eq!(status, SendStatus::Sent);
    assert!(
        waited.unwrap() >= LEND_MIN,
        "a rest was lent, then given up"
    );
    // The send is over: the caller may reuse its buffer; the rest was copied.
    payload.fill(0xee);
    let receiver = std::thread::spawn(move || {
        for _ in 0..2 {
            expect(&mut r1, b"fill", &[7; FILL]);
        }
        expect(&mut r1, b"big", &pattern(2, n));
        expect(&mut r1, b"small", b"after");
        r1
    });
    // The copied rest fills the queue: this send waits for credit behind it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while r0.try_send(1, b"small", b"after").unwrap() == SendStatus::NoCredit {
        assert!(Instant::now() < deadline, "no credit ever came back");
        assert!(r0.poll().unwrap().is_none());
    }
    receiver.join().unwrap();
    let stats = r0.stats();
    assert_eq!((stats.lent, stats.reclaimed), (1, 1));
}

#[test]
fn a_wait_that_panics_still_ends_the_loan() {
    let n = big();
    let (r0, mut r1) = stalled_pair(n);
    let lender = r0.lender();
    let mut payload = pattern(3, n);
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        lender.send(1, b"big", &payload, |_| panic!("the waiter failed"))
    }));
    assert!(outcome.is_err(), "the panic reached the caller");
    payload.fill(0);
    drop(payload);
    for _ in 0..2 {
        expect(&mut r1, b"fill", &[7; FILL]);
    }
    expect(&mut r1, b"big", &pattern(3, n));
    assert_eq!((r0.stats().lent, r0.stats().reclaimed), (1, 1));
}

#[test]
fn two_ranks_lending_to_each_other_at_once_both_finish() {
    let n = big();
    let eps = job(vec![cfg(n); 2]);
    let finish = |mut ep: TcpTransport| {
        std::thread::spawn(move || {
            let me = ep.rank();
            let other = 1 - me;
            let mine = pattern(me as u8, n);
            let mut got = None;
            let lender = ep.lender();
            ep.expect_from(other);
            let (_, left) = lender
                .send(other, b"big", &mine, |loan| {
                    // Both ranks wait here at once: only their polls read what the
                    // other sends, so a wait that did not poll would never end.
                    let deadline = Instant::now() + Duration::from_secs(60);
                    while loan.left() > 0 && Instant::now() < deadline {
                        if let Some(p) = ep.poll().unwrap() {
                            got = Some(p.payload().to_vec());
                        }
                    }
                    loan.left()
                })
                .unwrap();
            let got = match got {
                Some(g) => g,
                None => {
                    let deadline = Instant::now() + Duration::from_secs(60);
                    loop {
                        if let Some(p) = ep.poll().unwrap() {
                            break p.payload().to_vec();
                        }
                        assert!(Instant::now() < deadline, "rank {me} got nothing");
                    }
                }
            };
            assert!(
                got == pattern(other as u8, n),
                "rank {me} got a corrupted frame"
            );
            (left, ep.stats().reclaimed)
        })
    };
    let mut eps = eps.into_iter();
    let (a, b) = (eps.next().unwrap(), eps.next().unwrap());
    let (ta, tb) = (finish(a), finish(b));
    for t in [ta, tb] {
        let (left, reclaimed) = t.join().unwrap();
        assert_eq!(
            (left, reclaimed),
            (Some(0), 0),
            "the loan was written out while both polled"
        );
    }
}
