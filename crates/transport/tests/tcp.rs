//! The tcp transport over real sockets on loopback (127.0.0.1 only), several endpoints
//! per process, one thread each where they must run at once.

mod tcp_support;
mod traffic;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use nf_transport::tcp::wire::{Header, Hello, HELLO_LEN};
use nf_transport::tcp::{PeerState, TcpConfig, TcpTransport};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};
use tcp_support::*;
use traffic::*;

#[test]
fn queued_packets_drain_while_the_sender_only_polls() {
    const N: u32 = 256;
    // No direct reads or writes by the owner (tcp_handoff.rs covers those): only the
    // progress thread may move the queue below.
    let cfg = TcpConfig {
        queue_limit: 64 << 20,
        recv_limit: 256 * 1024,
        hot_for: Duration::ZERO,
        ..config()
    };
    let max = cfg.max_payload;
    let mut eps = job(vec![cfg; 2]);
    let (mut r1, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    // About 8 MiB while rank 1 is not polling: megabytes stay in rank 0's queue.
    for seq in 0..N {
        let (meta, payload) = packet(0, 1, seq, max);
        assert_eq!(r0.try_send(1, &meta, &payload).unwrap(), SendStatus::Sent);
    }
    // From now on only rank 0's progress thread can move its queue.
    let mut next = [0u32; 2];
    let deadline = Instant::now() + Duration::from_secs(10);
    while next[0] < N {
        assert!(Instant::now() < deadline, "stranded after {next:?}");
        assert!(r0.poll().unwrap().is_none());
        while let Some(p) = r1.poll().unwrap() {
            check(&p, 1, &mut next, max);
        }
    }
}

/// One packet each way between the real ranks 0 and 3: their traffic is unaffected.
fn legit(r0: &mut TcpTransport, r3: &mut TcpTransport, round: u32) {
    for from in [0usize, 3] {
        let to = 3 - from;
        let (meta, payload) = packet(from, to, round, 4096);
        let (src, dst) = if from == 0 {
            (&mut *r0, &mut *r3)
        } else {
            (&mut *r3, &mut *r0)
        };
        assert_eq!(src.try_send(to, &meta, &payload).unwrap(), SendStatus::Sent);
        let p = poll_one(dst).unwrap();
        assert_eq!(
            (p.src(), p.meta(), p.payload()),
            (from, &meta[..], &payload[..])
        );
    }
}

#[test]
fn bad_input_on_the_listening_port_is_refused_and_logged() {
    logs();
    // Ranks 0 and 3 are real; 1 and 2 are impostor slots for raw sockets.
    let mut eps: Vec<_> = [0, 3]
        .into_iter()
        .map(|r| TcpTransport::listen(config(), r, 4).unwrap())
        .collect();
    let (a0, a3) = (eps[0].local_addr(), eps[1].local_addr());
    let (mut r3, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    std::thread::scope(|s| {
        s.spawn(|| r0.connect(&[None, None, None, Some(a3)]).unwrap());
        r3.connect(&[Some(a0), None, None, None]).unwrap();
    });
    legit(&mut r0, &mut r3, 5);
    let hello = |rank: u32, cookie: u64| {
        Hello {
            cookie,
            rank,
            size: 4,
            max_payload: config().max_payload as u32,
        }
        .encode()
    };
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("garbage", vec![0xff; 64], "not a ninefold tcp hello"),
        (
            "truncated hello",
            hello(1, COOKIE)[..10].to_vec(),
            "closed after 10 of the 28 hello bytes",
        ),
        (
            "wrong cookie",
            hello(1, COOKIE ^ 1).to_vec(),
            "wrong job cookie",
        ),
        (
            "rank too high",
            hello(3, COOKIE).to_vec(),
            "only lower ranks dial",
        ),
        (
            "rank out of range",
            hello(9, COOKIE).to_vec(),
            "outside the job",
        ),
    ];
    for (i, (what, bytes, reason)) in cases.into_iter().enumerate() {
        let mut raw = TcpStream::connect(a3).unwrap();
        let me = raw.local_addr().unwrap().to_string();
        raw.write_all(&bytes).unwrap();
        if what == "truncated hello" {
            raw.shutdown(Shutdown::Write).unwrap();
        }
        assert_closed_by_peer(&mut raw);
        wait_for_log(&["refused connection from", &me, reason]);
        legit(&mut r0, &mut r3, 10 + i as u32);
    }

    // Impostor rank 1 passes the handshake, then sends an absurd length.
    let mut raw = TcpStream::connect(a3).unwrap();
    raw.write_all(&hello(1, COOKIE)).unwrap();
    let mut answer = [0u8; HELLO_LEN];
    raw.read_exact(&mut answer).unwrap();
    assert_eq!(Hello::decode(&answer).unwrap().rank, 3);
    let absurd = Header {
        payload_len: u32::MAX,
        ..Header::data(0, 0)
    };
    raw.write_all(&absurd.encode()).unwrap();
    assert_closed_by_peer(&mut raw);
    match poll_one(&mut r3) {
        Err(TransportError::PeerLost { peer: 1, why }) => {
            assert!(why.contains("payload length"), "{why}")
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a packet from an oversized frame"),
    }
    assert_eq!(r3.peer_state(1), PeerState::Lost);
    wait_for_log(&["malformed frame", "payload length"]);
    legit(&mut r0, &mut r3, 20);

    // A second connection for rank 1 is refused.
    let mut raw = TcpStream::connect(a3).unwrap();
    let me = raw.local_addr().unwrap().to_string();
    raw.write_all(&hello(1, COOKIE)).unwrap();
    assert_closed_by_peer(&mut raw);
    wait_for_log(&["refused connection from", &me, "already connected"]);

    // Impostor rank 2 dies in the middle of a frame.
    let mut raw = TcpStream::connect(a3).unwrap();
    raw.write_all(&hello(2, COOKIE)).unwrap();
    raw.read_exact(&mut answer).unwrap();
    raw.write_all(&Header::data(4, 1000).encode()).unwrap();
    raw.write_all(&[7; 10]).unwrap();
    drop(raw);
    match poll_one(&mut r3) {
        Err(TransportError::PeerLost { peer: 2, why }) => {
            assert!(why.contains("middle of a"), "{why}")
        }
        other => panic!("expected rank 2 lost, got {:?}", other.map(|p| p.src())),
    }
    legit(&mut r0, &mut r3, 21);
    assert!(r3.poll().unwrap().is_none(), "each loss is reported once");
}

#[test]
fn a_silent_connection_is_dropped_after_the_hello_deadline() {
    logs();
    let ep = TcpTransport::listen(config(), 1, 2).unwrap();
    let mut raw = TcpStream::connect(ep.local_addr()).unwrap();
    let me = raw.local_addr().unwrap().to_string();
    assert_closed_by_peer(&mut raw);
    wait_for_log(&["refused connection from", &me, "no complete hello within"]);
}

#[test]
fn a_peer_that_dies_mid_stream_is_reported_lost() {
    let cfg = TcpConfig {
        recv_limit: 1 << 20,
        queue_limit: 1 << 20,
        ..config()
    };
    let mut eps = job(vec![cfg.clone(); 2]);
    let (mut dying, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    // Fill the pipe (rank 0 is not polling yet), then die with bytes in flight.
    let payload = vec![1u8; cfg.max_payload];
    let mut sent = 0;
    while dying.try_send(0, b"data", &payload).unwrap() == SendStatus::Sent {
        sent += 1;
    }
    assert!(sent > 0);
    dying.abort();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = 0;
    let why = loop {
        assert!(
            Instant::now() < deadline,
            "loss not reported (got {got} of {sent} packets)"
        );
        match r0.poll() {
            Ok(Some(p)) => {
                assert_eq!(
                    (p.src(), p.meta(), p.payload()),
                    (1, &b"data"[..], &payload[..])
                );
                got += 1;
            }
            Ok(None) => std::thread::yield_now(),
            Err(TransportError::PeerLost { peer: 1, why }) => break why,
            Err(e) => panic!("unexpected error {e}"),
        }
    };
    assert!(why.contains("closed") || why.contains("reset"), "{why}");
    assert_eq!(r0.peer_state(1), PeerState::Lost);
    match r0.try_send(1, b"x", b"") {
        Err(TransportError::PeerLost { peer: 1, .. }) => {}
        other => panic!("send to a lost peer gave {other:?}"),
    }
    for _ in 0..100 {
        assert!(r0.poll().unwrap().is_none(), "the loss is reported once");
    }
}

#[test]
fn a_peer_that_leaves_is_not_an_error() {
    let mut eps = job(vec![config(); 2]);
    let (mut leaving, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    for seq in 0..100 {
        let (meta, payload) = packet(1, 0, seq, 4096);
        assert_eq!(
            leaving.try_send(0, &meta, &payload).unwrap(),
            SendStatus::Sent
        );
    }
    drop(leaving);
    let mut next = [0u32; 2];
    let deadline = Instant::now() + Duration::from_secs(5);
    while next[1] < 100 || r0.peer_state(1) != PeerState::Left {
        assert!(
            Instant::now() < deadline,
            "got {next:?}, state {:?}",
            r0.peer_state(1)
        );
        while let Some(p) = r0.poll().unwrap() {
            check(&p, 0, &mut next, 4096);
        }
    }
    match r0.try_send(1, b"x", b"") {
        Err(TransportError::PeerLost { peer: 1, why }) => {
            assert!(why.contains("left the job"), "{why}")
        }
        other => panic!("send to a departed peer gave {other:?}"),
    }
    assert!(r0.poll().unwrap().is_none());
}

#[test]
fn wire_up_names_a_rank_that_never_connects() {
    let cfg = TcpConfig {
        connect_timeout: Duration::from_millis(200),
        ..config()
    };
    let mut r1 = TcpTransport::listen(cfg, 1, 2).unwrap();
    let nowhere: SocketAddr = "127.0.0.1:9".parse().unwrap();
    match r1.connect(&[Some(nowhere), None]) {
        Err(TransportError::WireUp { peer: 0, why }) => {
            assert!(why.contains("did not connect"), "{why}")
        }
        other => panic!("expected a wire-up error naming rank 0, got {other:?}"),
    }
    match r1.try_send(0, b"", b"") {
        Err(TransportError::WireUp { peer: 0, .. }) => {}
        other => panic!("send without a connection gave {other:?}"),
    }
}

#[test]
fn wire_up_across_jobs_fails_on_both_sides() {
    logs();
    let cfg = TcpConfig {
        connect_timeout: Duration::from_millis(500),
        ..config()
    };
    let other_job = TcpConfig {
        cookie: COOKIE + 1,
        ..cfg.clone()
    };
    let mut r0 = TcpTransport::listen(cfg, 0, 2).unwrap();
    let mut r1 = TcpTransport::listen(other_job, 1, 2).unwrap();
    let (a0, a1) = (r0.local_addr(), r1.local_addr());
    let (dialler, acceptor) = std::thread::scope(|s| {
        let acceptor = s.spawn(|| r1.connect(&[Some(a0), None]));
        (r0.connect(&[None, Some(a1)]), acceptor.join().unwrap())
    });
    match dialler {
        Err(TransportError::Handshake { peer: 1, addr, why }) => {
            assert_eq!(addr, a1);
            assert!(why.contains("refused our hello"), "{why}");
        }
        other => panic!("expected a handshake error, got {other:?}"),
    }
    assert!(matches!(
        acceptor,
        Err(TransportError::WireUp { peer: 0, .. })
    ));
    wait_for_log(&["refused connection from", "wrong job cookie"]);
}

/// Receives one packet, yielding while waiting (on a small machine the progress
/// threads need the cores); returns its payload length.
fn recv_one(ep: &mut TcpTransport) -> usize {
    loop {
        if let Some(p) = ep.poll().unwrap() {
            return p.payload().len();
        }
        std::thread::yield_now();
    }
}

/// Half round trip of 8 B packets between two transports.
fn half_round_trip(rounds: usize) -> Duration {
    let mut eps = job(vec![config(); 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..rounds + 1000 {
                recv_one(&mut b);
                b.try_send(0, b"m", &[0; 8]).unwrap();
            }
        });
        let mut t = Instant::now();
        for i in 0..rounds + 1000 {
            if i == 1000 {
                t = Instant::now();
            }
            a.try_send(1, b"m", &[0; 8]).unwrap();
            recv_one(&mut a);
        }
        t.elapsed() / rounds as u32 / 2
    })
}

/// GB/s of 4 MiB messages cut into max-payload packets, as the core does.
fn bandwidth(cfg: TcpConfig, msgs: usize) -> f64 {
    let msg = 4 << 20;
    let mut eps = job(vec![cfg.clone(); 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    let chunk = vec![7u8; cfg.max_payload];
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut got = 0;
            while got < msgs * msg {
                got += recv_one(&mut b);
            }
            b.try_send(0, b"ack", b"").unwrap();
        });
        let t = Instant::now();
        for _ in 0..msgs {
            for _ in 0..msg / cfg.max_payload {
                while a.try_send(1, b"frag", &chunk).unwrap() == SendStatus::NoCredit {
                    a.poll().unwrap();
                }
            }
        }
        recv_one(&mut a);
        (msgs * msg) as f64 / t.elapsed().as_secs_f64() / 1e9
    })
}

/// Reads or writes all of `buf`; a non-blocking socket yields while it waits.
fn raw_io(c: &mut TcpStream, buf: &mut [u8], write: bool) {
    let mut at = 0;
    while at < buf.len() {
        let r = if write {
            c.write(&buf[at..])
        } else {
            c.read(&mut buf[at..])
        };
        match r {
            Ok(0) => panic!("raw socket closed"),
            Ok(n) => at += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::yield_now(),
            Err(e) => panic!("raw socket: {e}"),
        }
    }
}

/// The same two measurements over plain sockets, for comparison: blocking, or
/// non-blocking and polled (as a polling runtime waits).
fn raw_socket(rounds: usize, msgs: usize, polled: bool) -> (Duration, f64) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let msg = 4 << 20;
    let setup = |c: &TcpStream| {
        c.set_nodelay(true).unwrap();
        c.set_nonblocking(polled).unwrap();
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            let (mut c, _) = listener.accept().unwrap();
            setup(&c);
            let mut buf = [0u8; 8];
            for _ in 0..rounds + 1000 {
                raw_io(&mut c, &mut buf, false);
                raw_io(&mut c, &mut buf, true);
            }
            let mut big = vec![0u8; msg];
            for _ in 0..msgs {
                raw_io(&mut c, &mut big, false);
            }
            raw_io(&mut c, &mut buf, true);
        });
        let mut c = TcpStream::connect(addr).unwrap();
        setup(&c);
        let mut buf = [0u8; 8];
        let mut t = Instant::now();
        for i in 0..rounds + 1000 {
            if i == 1000 {
                t = Instant::now();
            }
            raw_io(&mut c, &mut buf, true);
            raw_io(&mut c, &mut buf, false);
        }
        let half = t.elapsed() / rounds as u32 / 2;
        let mut big = vec![7u8; msg];
        let t = Instant::now();
        for _ in 0..msgs {
            raw_io(&mut c, &mut big, true);
        }
        raw_io(&mut c, &mut buf, false);
        (half, (msgs * msg) as f64 / t.elapsed().as_secs_f64() / 1e9)
    })
}

/// Indicative loopback numbers: `cargo test --release -p nf-transport --test tcp --
/// --ignored --nocapture measure`.
#[test]
#[ignore]
fn measure_loopback() {
    let (rounds, msgs) = (20_000, 256);
    let big = TcpConfig {
        max_payload: 256 * 1024,
        ..config()
    };
    // NF_TCP_MEASURE=bw measures only the transport's bandwidth (for profiling).
    if std::env::var("NF_TCP_MEASURE").as_deref() == Ok("bw") {
        println!(
            "4 MiB messages: tcp transport {:.2} GB/s",
            bandwidth(big, msgs * 4)
        );
        return;
    }
    let half = half_round_trip(rounds);
    let bw = bandwidth(big.clone(), msgs);
    let bw_small_queue = bandwidth(
        TcpConfig {
            queue_limit: 0,
            ..big
        },
        msgs,
    );
    let (raw_half, raw_bw) = raw_socket(rounds, msgs, false);
    let (polled_half, polled_bw) = raw_socket(rounds, msgs, true);
    println!(
        "8 B half round trip: tcp transport {half:?}; raw socket blocking {raw_half:?}, \
         polled {polled_half:?}\n\
         4 MiB messages: tcp transport {bw:.2} GB/s (queue_limit 0: {bw_small_queue:.2} GB/s); \
         raw socket blocking {raw_bw:.2} GB/s, polled {polled_bw:.2} GB/s"
    );
}
