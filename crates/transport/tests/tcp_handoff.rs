//! The tcp transport's read handoff (`tcp/handoff.rs`): a polling owner reads the
//! connections it expects traffic on itself, the progress thread serves the rest and
//! takes connections back from an owner that stopped polling. Real sockets on
//! loopback; `TcpTransport::stats` tells which side read each packet.

mod tcp_support;
mod traffic;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use nf_transport::tcp::wire::{Header, Hello, HELLO_LEN};
use nf_transport::tcp::{PeerState, TcpConfig, TcpTransport};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};
use tcp_support::*;
use traffic::*;

/// Rounds of a ping-pong between ranks 0 and 1 in which both only poll between sends;
/// checks every packet and returns the stats of both ends.
fn ping_pong(cfg: TcpConfig, rounds: u32) -> [nf_transport::tcp::TcpStats; 2] {
    let max = cfg.max_payload;
    let mut eps = job(vec![cfg; 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    thread::scope(|s| {
        let echo = s.spawn(move || {
            let mut next = [0u32; 2];
            for seq in 0..rounds {
                check(&poll_one(&mut b).unwrap(), 1, &mut next, max);
                let (meta, payload) = packet(1, 0, seq, max);
                assert_eq!(b.try_send(0, &meta, &payload).unwrap(), SendStatus::Sent);
            }
            b.stats()
        });
        let mut next = [0u32; 2];
        for seq in 0..rounds {
            let (meta, payload) = packet(0, 1, seq, max);
            assert_eq!(a.try_send(1, &meta, &payload).unwrap(), SendStatus::Sent);
            check(&poll_one(&mut a).unwrap(), 0, &mut next, max);
        }
        [a.stats(), echo.join().unwrap()]
    })
}

#[test]
fn a_polling_rank_reads_its_connection_itself() {
    const ROUNDS: u32 = 2000;
    let held = TcpConfig {
        hot_for: Duration::from_secs(2),
        ..config()
    };
    let [a, b] = ping_pong(held, ROUNDS);
    // Every packet arrives exactly once, by one path or the other.
    assert_eq!(a.direct + a.relayed, ROUNDS as u64, "rank 0: {a:?}");
    assert_eq!(b.direct + b.relayed, ROUNDS as u64, "rank 1: {b:?}");
    // Rank 0 sent before it waited, so it read its answers itself (the thread only
    // takes a connection back from an owner that stopped polling for a 10 ms tick).
    assert!(a.direct > 0, "rank 0 never read directly: {a:?}");
    assert!(b.direct > 0, "rank 1 never read directly: {b:?}");

    let thread_only = TcpConfig {
        hot_for: Duration::ZERO,
        ..config()
    };
    let [a, b] = ping_pong(thread_only, ROUNDS);
    for (r, st) in [a, b].iter().enumerate() {
        assert_eq!(
            st.direct, 0,
            "rank {r} read directly with hot_for 0: {st:?}"
        );
        assert_eq!(st.relayed, ROUNDS as u64, "rank {r}: {st:?}");
    }
}

/// Large packets with the owner's wait for the rest of a body on (`rx.rs` step 6):
/// every packet intact and in order, and the polls did sleep for bodies.
#[test]
fn large_bodies_waited_for_arrive_intact_and_in_order() {
    const ROUNDS: u32 = 60;
    let cfg = TcpConfig {
        hot_for: Duration::from_secs(2),
        max_payload: 4 << 20,
        ..config()
    };
    let mut eps = job(vec![cfg; 2]);
    for ep in &mut eps {
        ep.set_body_wait(Some(Duration::from_millis(1)));
    }
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    let max = 4 << 20;
    let [sa, sb] = thread::scope(|s| {
        let echo = s.spawn(move || {
            let mut next = [0u32; 2];
            for seq in 0..ROUNDS {
                check(&poll_one(&mut b).unwrap(), 1, &mut next, max);
                let (meta, payload) = packet(1, 0, seq, max);
                while b.try_send(0, &meta, &payload).unwrap() != SendStatus::Sent {
                    b.poll().unwrap();
                }
            }
            b.stats()
        });
        let mut next = [0u32; 2];
        for seq in 0..ROUNDS {
            let (meta, payload) = packet(0, 1, seq, max);
            while a.try_send(1, &meta, &payload).unwrap() != SendStatus::Sent {
                a.poll().unwrap();
            }
            check(&poll_one(&mut a).unwrap(), 0, &mut next, max);
        }
        [a.stats(), echo.join().unwrap()]
    });
    assert!(
        sa.body_waits + sb.body_waits > 0,
        "no poll waited for a body: {sa:?} {sb:?}"
    );
}

#[test]
fn the_thread_takes_back_a_connection_whose_owner_stopped_polling() {
    const N: u32 = 64;
    let cfg = TcpConfig {
        hot_for: Duration::from_secs(60),
        ..config()
    };
    let max = cfg.max_payload;
    let mut eps = job(vec![cfg; 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    // Rank 1 sends, so it holds its connection to rank 0, and polls once.
    let (meta, payload) = packet(1, 0, 0, max);
    assert_eq!(b.try_send(0, &meta, &payload).unwrap(), SendStatus::Sent);
    assert!(b.poll().unwrap().is_none());
    let mut next_a = [0u32; 2];
    check(&poll_one(&mut a).unwrap(), 0, &mut next_a, max);
    // Now rank 1 computes: it does not poll while rank 0 sends.
    for seq in 0..N {
        let (meta, payload) = packet(0, 1, seq, max);
        assert_eq!(a.try_send(1, &meta, &payload).unwrap(), SendStatus::Sent);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.stats().relayed < N as u64 {
        assert!(
            Instant::now() < deadline,
            "the progress thread did not take the connection back: {:?}",
            b.stats()
        );
        thread::sleep(Duration::from_millis(5));
    }
    let mut next = [0u32; 2];
    while next[0] < N {
        check(&poll_one(&mut b).unwrap(), 1, &mut next, max);
    }
    assert_eq!(b.stats().direct, 0, "nothing was left for rank 1 to read");
}

#[test]
fn order_holds_while_the_connection_changes_hands() {
    const N: u32 = 3000;
    // Quiet after 50 µs: rank 1's pauses hand the connection back every time, and its
    // next receipt takes it again; packets up to 64 KiB cross both ways of reading.
    let cfg = TcpConfig {
        hot_for: Duration::from_micros(50),
        queue_limit: 1 << 20,
        ..config()
    };
    let max = cfg.max_payload;
    let mut eps = job(vec![cfg; 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    thread::scope(|s| {
        s.spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut seq = 0;
            while seq < N {
                assert!(Instant::now() < deadline, "sender stuck at {seq}");
                let (meta, payload) = packet(0, 1, seq, max);
                match a.try_send(1, &meta, &payload).unwrap() {
                    SendStatus::Sent => seq += 1,
                    SendStatus::NoCredit => assert!(a.poll().unwrap().is_none()),
                }
            }
            // Rank 0 leaves only after rank 1 has everything (its goodbye would do,
            // but then a slow reader could not tell a loss from the end).
            let deadline = Instant::now() + Duration::from_secs(30);
            while a.poll().unwrap().is_none() {
                assert!(Instant::now() < deadline, "no final word from rank 1");
            }
        });
        let mut next = [0u32; 2];
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut burst = 0u32;
        while next[0] < N {
            assert!(Instant::now() < deadline, "receiver stuck at {next:?}");
            match b.poll().unwrap() {
                Some(p) => check(&p, 1, &mut next, max),
                None => thread::yield_now(),
            }
            burst += 1;
            if burst.is_multiple_of(500) {
                // Sometimes long enough for a tick of the progress thread.
                thread::sleep(Duration::from_millis(if burst.is_multiple_of(4000) {
                    25
                } else {
                    1
                }));
            }
        }
        let st = b.stats();
        assert_eq!(st.direct + st.relayed, N as u64, "{st:?}");
        assert!(
            st.direct > 0 && st.relayed > 0,
            "only one way of reading ran: {st:?}"
        );
        assert_eq!(b.try_send(0, b"done", b"").unwrap(), SendStatus::Sent);
    });
}

/// Two connected ranks where rank 1 holds its connection to rank 0 (they exchanged a
/// packet each way and rank 1 keeps polling).
fn held_pair() -> (TcpTransport, TcpTransport) {
    let cfg = TcpConfig {
        hot_for: Duration::from_secs(60),
        ..config()
    };
    let mut eps = job(vec![cfg; 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    assert_eq!(a.try_send(1, b"hi", b"").unwrap(), SendStatus::Sent);
    poll_one(&mut b).unwrap();
    assert_eq!(b.try_send(0, b"hi", b"").unwrap(), SendStatus::Sent);
    poll_one(&mut a).unwrap();
    (a, b)
}

#[test]
fn a_peer_that_crashes_while_held_is_reported_lost_once() {
    let (a, mut b) = held_pair();
    a.abort();
    match poll_one(&mut b) {
        Err(TransportError::PeerLost { peer: 0, why }) => {
            assert!(
                why.contains("without goodbye") || why.contains("reset"),
                "{why}"
            )
        }
        other => panic!("expected rank 0 lost, got {:?}", other.map(|p| p.src())),
    }
    assert_eq!(b.peer_state(0), PeerState::Lost);
    assert!(matches!(
        b.try_send(0, b"x", b""),
        Err(TransportError::PeerLost { peer: 0, .. })
    ));
    assert!(b.poll().unwrap().is_none(), "each loss is reported once");
}

#[test]
fn a_peer_that_leaves_while_held_is_not_an_error() {
    let (a, mut b) = held_pair();
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.peer_state(0) != PeerState::Left {
        assert!(Instant::now() < deadline, "rank 0's goodbye was not seen");
        assert!(
            b.poll().unwrap().is_none(),
            "a goodbye is not a packet or an error"
        );
    }
}

#[test]
fn garbage_on_a_held_connection_is_refused() {
    logs();
    // Rank 1 is real; rank 0 is a raw socket that passes the hello.
    let mut b = TcpTransport::listen(
        TcpConfig {
            hot_for: Duration::from_secs(60),
            ..config()
        },
        1,
        2,
    )
    .unwrap();
    let mut raw = TcpStream::connect(b.local_addr()).unwrap();
    let hello = Hello {
        cookie: COOKIE,
        rank: 0,
        size: 2,
        max_payload: config().max_payload as u32,
    };
    raw.write_all(&hello.encode()).unwrap();
    let mut answer = [0u8; HELLO_LEN];
    raw.read_exact(&mut answer).unwrap();
    b.connect(&[None, None]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while b.peer_state(0) != PeerState::Up {
        assert!(
            Instant::now() < deadline,
            "rank 0's connection was not installed"
        );
        thread::sleep(Duration::from_millis(1));
    }
    // Rank 1 sends, so it reads the connection itself from now on.
    assert_eq!(b.try_send(0, b"hi", b"").unwrap(), SendStatus::Sent);
    assert!(b.poll().unwrap().is_none());
    let mut bad = Header::data(4, 16).encode();
    bad[3] ^= 0xff;
    raw.write_all(&bad).unwrap();
    match poll_one(&mut b) {
        Err(TransportError::PeerLost { peer: 0, why }) => {
            assert!(why.contains("malformed frame"), "{why}")
        }
        other => panic!("expected rank 0 lost, got {:?}", other.map(|p| p.src())),
    }
    assert_closed_by_peer(&mut raw);
    wait_for_log(&["connection lost", "check byte"]);
    assert_eq!(
        b.stats().relayed,
        0,
        "the garbage was read by the owner itself"
    );
}

/// Parks `b` for at most `limit` in a thread while rank 0 sends it one packet after
/// `delay`; returns how long the park lasted and the packet's metadata.
fn park_until_arrival(
    mut a: TcpTransport,
    mut b: TcpTransport,
    delay: Duration,
    limit: Duration,
) -> (Duration, Vec<u8>) {
    thread::scope(|s| {
        let parked = s.spawn(move || {
            let t = Instant::now();
            b.park(limit).unwrap();
            let took = t.elapsed();
            (took, poll_one(&mut b).unwrap().meta().to_vec())
        });
        thread::sleep(delay);
        assert_eq!(a.try_send(1, b"wake", b"").unwrap(), SendStatus::Sent);
        let got = parked.join().unwrap();
        drop(a);
        got
    })
}

#[test]
fn a_parked_owner_wakes_when_a_held_connection_has_bytes() {
    let (a, b) = held_pair();
    let limit = Duration::from_secs(20);
    let (took, meta) = park_until_arrival(a, b, Duration::from_millis(50), limit);
    assert_eq!(meta, b"wake");
    // Woken by the arrival, not by the end of its (generous) timeout.
    assert!(took < limit / 2, "parked {took:?} of {limit:?}");
}

#[test]
fn a_parked_owner_wakes_when_the_thread_relays_an_arrival() {
    // hot_for 0: the owner holds nothing; the progress thread reads and rings.
    let cfg = TcpConfig {
        hot_for: Duration::ZERO,
        ..config()
    };
    let mut eps = job(vec![cfg; 2]);
    let (b, a) = (eps.pop().unwrap(), eps.pop().unwrap());
    let limit = Duration::from_secs(20);
    let (took, meta) = park_until_arrival(a, b, Duration::from_millis(50), limit);
    assert_eq!(meta, b"wake");
    assert!(took < limit / 2, "parked {took:?} of {limit:?}");
}

#[test]
fn park_returns_at_once_when_arrivals_wait() {
    let cfg = TcpConfig {
        hot_for: Duration::ZERO,
        ..config()
    };
    let mut eps = job(vec![cfg; 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    assert_eq!(a.try_send(1, b"early", b"").unwrap(), SendStatus::Sent);
    let deadline = Instant::now() + Duration::from_secs(10);
    while b.stats().relayed == 0 {
        assert!(Instant::now() < deadline, "the packet was never relayed");
        thread::sleep(Duration::from_millis(1));
    }
    let limit = Duration::from_secs(20);
    let t = Instant::now();
    b.park(limit).unwrap();
    assert!(t.elapsed() < limit / 2, "slept with an arrival waiting");
    assert_eq!(poll_one(&mut b).unwrap().meta(), b"early");
}
