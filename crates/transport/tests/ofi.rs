//! The ofi transport over libfabric's `tcp` provider on loopback (bound to 127.0.0.1,
//! domain `lo`, nothing else), several endpoints per process, one thread each where
//! they must run at once. Without libfabric every test fails, saying what to install.

mod ofi_support;
mod traffic;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nf_transport::ofi::{OfiConfig, OfiPacket, OfiTransport};
use nf_transport::rma::{NativeRma, RemoteRegion, RemoteSpan, RmaDone};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};
use ofi_support::job;
use traffic::*;

const COOKIE: u64 = 0x9f00_c0ff_ee00_0002;

fn config() -> OfiConfig {
    ofi_support::config(COOKIE)
}

/// Sends one packet, polling (as the core does) while the answer is `NoCredit`; `other`
/// polls too, as the receiver would (manual progress: nothing moves, not even the
/// connection set-up, unless both ends poll).
fn send(ep: &mut OfiTransport, other: &mut OfiTransport, dest: usize, meta: &[u8], payload: &[u8]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while ep.try_send(dest, meta, payload).unwrap() == SendStatus::NoCredit {
        assert!(Instant::now() < deadline, "no credit to {dest} for 5 s");
        assert!(ep.poll().unwrap().is_none());
        other.progress().unwrap();
    }
}

/// Polls `ep` until it returns something other than `Ok(None)`, for at most 5 s, while
/// `other` polls too (manual progress: the sender moves only when it is polled).
fn poll_one(ep: &mut OfiTransport, other: &mut OfiTransport) -> Result<OfiPacket, TransportError> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(p) = ep.poll().transpose() {
            return p;
        }
        other.poll().unwrap();
        assert!(
            Instant::now() < deadline,
            "nothing arrived at rank {}",
            ep.rank()
        );
    }
}

#[test]
fn the_endpoint_is_bound_to_loopback_and_named() {
    let eps = job(vec![config(); 2]);
    let (prov, fabric, domain) = eps[0].provider();
    assert!(prov.starts_with("tcp"), "{prov}");
    assert_eq!((fabric, domain), ("127.0.0.1/32", "lo"));
    // A sockaddr_in (family AF_INET, a port, 127.0.0.1), then the reorder window,
    // max_payload and a tag.
    let a = eps[0].address();
    assert_eq!(a.len(), 16 + 12);
    assert_eq!(&a[4..8], &[127, 0, 0, 1]);
    assert_eq!(&a[16..], &[0, 1, 0, 0, 0, 0, 1, 0, b'n', b'f', b'o', b'2']);
    assert_ne!(eps[0].address(), eps[1].address());
}

#[test]
fn transports_and_packets_can_move_between_threads() {
    fn is_send<T: Send>() {}
    is_send::<OfiTransport>();
    is_send::<OfiPacket>();
}

#[test]
fn a_large_packet_completing_late_does_not_let_small_ones_overtake_it() {
    // A large message goes by rendezvous and completes after the small ones queued
    // behind it; the sequence numbers put them back in order.
    let mut eps = job(vec![config(); 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    let big = vec![0xabu8; 64 * 1024];
    let mut reordered = 0;
    for round in 0..20u32 {
        send(&mut a, &mut b, 1, &(3 * round).to_le_bytes(), &big);
        send(&mut a, &mut b, 1, &(3 * round + 1).to_le_bytes(), b"small");
        send(&mut a, &mut b, 1, &(3 * round + 2).to_le_bytes(), b"");
        for want in 3 * round..3 * round + 3 {
            let p = poll_one(&mut b, &mut a).unwrap();
            assert_eq!(p.meta(), want.to_le_bytes(), "out of order");
            let len = [big.len(), 5, 0][(want % 3) as usize];
            assert_eq!(p.payload().len(), len);
        }
        reordered = b.stats().reordered;
    }
    eprintln!("reordered and restored: {reordered} of 60");
}

#[test]
fn packets_sent_just_before_close_arrive() {
    let mut eps = job(vec![config(); 2]);
    let (mut leaving, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    // Mixed sizes: injected (tiny) and sent ones, the last right before the drop.
    for seq in 0..100 {
        let (meta, payload) = packet(1, 0, seq, if seq % 2 == 1 { 16 } else { 8192 });
        let deadline = Instant::now() + Duration::from_secs(5);
        while leaving.try_send(0, &meta, &payload).unwrap() == SendStatus::NoCredit {
            assert!(Instant::now() < deadline);
            leaving.poll().unwrap();
            r0.poll().unwrap();
        }
    }
    let sender = std::thread::spawn(move || drop(leaving));
    let mut got = 0u32;
    let deadline = Instant::now() + Duration::from_secs(5);
    while got < 100 {
        assert!(Instant::now() < deadline, "only {got} of 100 arrived");
        if let Some(p) = r0.poll().unwrap() {
            let (meta, payload) = packet(1, 0, got, if got % 2 == 1 { 16 } else { 8192 });
            assert_eq!((p.meta(), p.payload()), (&meta[..], &payload[..]));
            got += 1;
        }
    }
    sender.join().unwrap();
}

/// Sends to rank 1 (gone) until an error, for at most `limit`; returns it and the time.
fn send_until_error(ep: &mut OfiTransport, limit: Duration) -> (TransportError, Duration) {
    let t = Instant::now();
    loop {
        assert!(t.elapsed() < limit, "no error within {limit:?}: a hang");
        match ep.try_send(1, b"x", &[5u8; 1000]) {
            Ok(_) => {}
            Err(e) => return (e, t.elapsed()),
        }
        if let Err(e) = ep.poll() {
            return (e, t.elapsed());
        }
    }
}

#[test]
fn sends_to_a_peer_that_never_existed_fail_within_dead_after() {
    let cfg = config();
    let mut r0 = OfiTransport::open(cfg.clone(), 0, 2).unwrap();
    // A real endpoint's address, closed before anyone sends to it: connection refused.
    let addr = OfiTransport::open(cfg, 1, 2).unwrap().address();
    r0.connect(&[None, Some(addr)]).unwrap();
    let (err, _) = send_until_error(&mut r0, Duration::from_secs(10));
    assert!(
        matches!(err, TransportError::PeerLost { peer: 1, .. }),
        "{err}"
    );
}

#[test]
fn operations_in_flight_to_a_dead_peer_are_reported_while_only_polling() {
    let mut eps = job(vec![config(); 2]);
    let (mut gone, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    send(&mut r0, &mut gone, 1, b"hello", b"");
    poll_one(&mut gone, &mut r0).unwrap();
    // Large sends wait (rendezvous) for the receiver, which dies without polling.
    let big = vec![1u8; 60 * 1024];
    for _ in 0..4 {
        assert_eq!(r0.try_send(1, b"big", &big).unwrap(), SendStatus::Sent);
    }
    gone.poll().unwrap();
    drop(gone);
    let t = Instant::now();
    let err = loop {
        assert!(t.elapsed() < Duration::from_secs(10), "no error: a hang");
        match r0.poll() {
            Ok(p) => assert!(p.is_none()),
            Err(e) => break e,
        }
    };
    match err {
        TransportError::PeerLost { peer: 1, why } => {
            assert!(why.contains("not completed"), "{why}")
        }
        other => panic!("expected rank 1 lost, got {other}"),
    }
}

#[test]
fn a_bad_provider_name_is_a_clear_error() {
    let cfg = OfiConfig {
        provider: "no-such-provider".into(),
        ..config()
    };
    let err = OfiTransport::open(cfg, 0, 1)
        .err()
        .expect("opened a bogus provider");
    let text = err.to_string();
    assert!(matches!(err, TransportError::Ofi { .. }), "{text}");
    for part in [
        "\"no-such-provider\"",
        "fi_getinfo",
        "fi_info -l",
        "NF_OFI_PROVIDER",
    ] {
        assert!(text.contains(part), "{part:?} missing from: {text}");
    }
}

#[test]
fn bad_settings_are_refused_before_opening() {
    for cfg in [
        OfiConfig {
            max_payload: 0,
            ..config()
        },
        OfiConfig {
            rx_buffers: 0,
            ..config()
        },
        OfiConfig {
            queue_limit: 100_000,
            ..config()
        },
        OfiConfig {
            reorder_window: 0,
            ..config()
        },
    ] {
        assert!(OfiTransport::open(cfg, 0, 2).is_err());
    }
    assert!(matches!(
        OfiTransport::open(config(), 2, 2),
        Err(TransportError::NoPeer { dest: 2, size: 2 })
    ));
}

#[test]
fn sends_to_a_rank_without_an_address_are_refused_before_sending() {
    let mut lonely = OfiTransport::open(config(), 0, 2).unwrap();
    assert!(matches!(
        lonely.try_send(1, b"", b""),
        Err(TransportError::WireUp { peer: 1, .. })
    ));
    assert!(matches!(
        lonely.connect(&[None, Some(vec![1, 2, 3])]),
        Err(TransportError::WireUp { peer: 1, .. })
    ));
    assert!(lonely.connect(&[None]).is_err());
}

#[test]
fn a_peer_with_another_max_payload_is_refused_at_wire_up() {
    let bigger = OfiConfig {
        max_payload: 128 * 1024,
        ..config()
    };
    let mut r0 = OfiTransport::open(config(), 0, 2).unwrap();
    let r1 = OfiTransport::open(bigger, 1, 2).unwrap();
    match r0.connect(&[None, Some(r1.address())]) {
        Err(TransportError::WireUp { peer: 1, why }) => {
            assert!(why.contains("max_payload of 131072 B"), "{why}")
        }
        other => panic!("a max_payload mismatch gave {other:?}"),
    }
}

/// `addr` with the max_payload of its trailer replaced (to get past the wire-up check).
fn claiming_max(mut addr: Vec<u8>, max: usize) -> Vec<u8> {
    let n = addr.len() - 8;
    addr[n..n + 4].copy_from_slice(&(max as u32).to_le_bytes());
    addr
}

#[test]
fn a_packet_longer_than_the_receive_buffers_is_reported() {
    // Rank 1 lies about its max_payload at wire-up, then sends more than rank 0's
    // buffers hold: the receive is truncated and reported. (The tcp provider then
    // drops that connection: a stream cannot skip the rest of a message.) Rank 2,
    // configured like rank 0, is unaffected.
    let small = OfiConfig {
        max_payload: 1024,
        ..config()
    };
    let bigger = OfiConfig {
        max_payload: 8192,
        ..config()
    };
    let mut r0 = OfiTransport::open(small.clone(), 0, 3).unwrap();
    let mut r1 = OfiTransport::open(bigger, 1, 3).unwrap();
    let mut r2 = OfiTransport::open(small, 2, 3).unwrap();
    let (a0, a1, a2) = (r0.address(), r1.address(), r2.address());
    r0.connect(&[None, Some(claiming_max(a1, 1024)), Some(a2)])
        .unwrap();
    r1.connect(&[Some(claiming_max(a0.clone(), 8192)), None, None])
        .unwrap();
    r2.connect(&[Some(a0), None, None]).unwrap();
    send(&mut r1, &mut r0, 0, b"too big", &[3u8; 4000]);
    match poll_one(&mut r0, &mut r1) {
        Err(TransportError::BadPacket { why, .. }) => {
            assert!(why.contains("max_payload"), "{why}")
        }
        other => panic!("an oversized packet gave {:?}", other.map(|p| p.src())),
    }
    send(&mut r2, &mut r0, 0, b"fine", &[4u8; 100]);
    let p = poll_one(&mut r0, &mut r2).unwrap();
    assert_eq!((p.src(), p.meta()), (2, &b"fine"[..]));
    assert_eq!(p.payload(), &[4u8; 100][..]);
}

#[test]
fn held_packets_keep_their_buffers_until_dropped() {
    let small = OfiConfig {
        rx_buffers: 4,
        ..config()
    };
    let mut eps = job(vec![small.clone(), small]);
    let (mut r1, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    // Hold more packets than there are receive buffers, in rounds: each round's
    // packets are dropped before the next, so their buffers are re-posted.
    for round in 0..10u32 {
        let mut held = Vec::new();
        for i in 0..4u32 {
            send(
                &mut r1,
                &mut r0,
                0,
                &(round * 4 + i).to_le_bytes(),
                &[i as u8; 3000],
            );
        }
        for i in 0..4u32 {
            let p = poll_one(&mut r0, &mut r1).unwrap();
            assert_eq!(p.meta(), (round * 4 + i).to_le_bytes());
            held.push(p);
        }
        // All four buffers are out: nothing is posted until they come back.
        for (i, p) in held.iter().enumerate() {
            assert_eq!(p.payload(), &[i as u8; 3000][..]);
        }
    }
}

#[test]
fn rma_put_and_get_move_bytes_between_registered_regions() {
    let mut eps = job(vec![config(); 2]);
    let (mut r1, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    assert!(r0.rma_supported(), "the tcp provider offers FI_RMA");
    let mine = r0.register(1 << 20).unwrap();
    let theirs = r1.register(1 << 20).unwrap();
    let remote = RemoteRegion::from_bytes(&r1.remote(theirs).unwrap().to_bytes()).unwrap();
    assert_eq!(remote, r1.remote(theirs).unwrap());
    let data: Vec<u8> = (0..300_000).map(|i| (i * 13) as u8).collect();
    r0.region_write(mine, 1000, &data).unwrap();
    let wait = |r0: &mut OfiTransport, r1: &mut OfiTransport| {
        let deadline = Instant::now() + Duration::from_secs(5);
        while r0.rma_in_flight() > 0 {
            assert!(Instant::now() < deadline, "RMA did not complete");
            r0.progress().unwrap();
            r1.progress().unwrap(); // the target's manual progress
        }
    };
    while r0.put(1, mine, 1000, data.len(), &remote, 5000, 7).unwrap() == SendStatus::NoCredit {
        r0.progress().unwrap();
        r1.progress().unwrap(); // connection set-up needs both ends
    }
    wait(&mut r0, &mut r1);
    let done = r0.pop_rma_done().expect("the put's completion");
    assert_eq!((done.tag, done.peer, done.result.is_ok()), (7, 1, true));
    let mut back = vec![0u8; data.len()];
    r1.region_read(theirs, 5000, &mut back).unwrap();
    assert!(back == data, "put moved the wrong bytes");

    r1.region_write(theirs, 0, b"from rank one").unwrap();
    while r0.get(1, mine, 0, 13, &remote, 0, 8).unwrap() == SendStatus::NoCredit {
        r0.progress().unwrap();
    }
    wait(&mut r0, &mut r1);
    let mut got = [0u8; 13];
    r0.region_read(mine, 0, &mut got).unwrap();
    assert_eq!(&got, b"from rank one");

    assert!(r0.put(1, mine, 0, 16, &remote, (1 << 20) - 8, 9).is_err());
    assert!(r0.put(1, mine, (1 << 20) - 8, 16, &remote, 0, 9).is_err());
    r0.deregister(mine).unwrap();
    assert!(r0.region_read(mine, 0, &mut got).is_err());
}

#[test]
fn rma_without_fi_rma_is_unsupported() {
    let cfg = OfiConfig {
        rma: false,
        ..config()
    };
    let mut eps = job(vec![cfg; 2]);
    assert!(!eps[0].rma_supported());
    match eps[0].register(4096) {
        Err(TransportError::Unsupported(what)) => assert!(what.contains("FI_RMA"), "{what}"),
        other => panic!("register without RMA gave {:?}", other.map(|_| ())),
    }
}

/// Receives one packet; returns its payload length.
fn recv_one(ep: &mut OfiTransport) -> usize {
    loop {
        if let Some(p) = ep.poll().unwrap() {
            return p.payload().len();
        }
    }
}

/// Half round trip of `size`-byte packets between two endpoints (one thread each).
fn ping_pong(cfg: OfiConfig, size: usize, rounds: usize) -> Duration {
    let warm = rounds / 10 + 10;
    let mut eps = job(vec![cfg; 2]);
    let (mut b, mut a) = (eps.pop().unwrap(), eps.pop().unwrap());
    let msg = vec![0u8; size];
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for _ in 0..rounds + warm {
                recv_one(&mut b);
                while b.try_send(0, b"", &msg).unwrap() == SendStatus::NoCredit {
                    b.poll().unwrap();
                }
            }
            // Manual progress: a large last reply moves only while we poll.
            while !done.load(Ordering::SeqCst) {
                b.poll().unwrap();
            }
        });
        let mut t = Instant::now();
        for i in 0..rounds + warm {
            if i == warm {
                t = Instant::now();
            }
            while a.try_send(1, b"", &msg).unwrap() == SendStatus::NoCredit {
                a.poll().unwrap();
            }
            recv_one(&mut a);
        }
        let half = t.elapsed() / rounds as u32 / 2;
        done.store(true, Ordering::SeqCst);
        half
    })
}

/// Indicative loopback numbers, to set beside `fi_pingpong -p tcp -e rdm` on
/// 127.0.0.1: `cargo test --release -p nf-transport --test ofi -- --ignored
/// --nocapture measure`.
#[test]
#[ignore]
fn measure_loopback() {
    let half = ping_pong(config(), 8, 20_000);
    let big = OfiConfig {
        max_payload: 1 << 20,
        rx_buffers: 16,
        queue_limit: 16,
        ..config()
    };
    let mib = ping_pong(big, 1 << 20, 500);
    // What one poll costs when nothing has arrived (the unified poll loop pays it).
    let mut eps = job(vec![config(); 2]);
    let n = 200_000;
    let t = Instant::now();
    for _ in 0..n {
        assert!(eps[0].poll().unwrap().is_none());
    }
    let empty = t.elapsed() / n;
    println!(
        "ofi (tcp provider) on 127.0.0.1: 8 B half round trip {half:?}; 1 MiB ping-pong \
         half round trip {mib:?} = {:.0} MB/s; empty poll {empty:?}",
        (1 << 20) as f64 / mib.as_secs_f64() / 1e6
    );
}

/// A payload size for packet `seq` of a mixed stream: full packets (above the tcp
/// provider's 64 KiB eager size once the header is added: rendezvous), packets just
/// under it, and tiny (injected) ones between.
fn mixed_size(seq: u32, max: usize) -> usize {
    let key = mix(seq as u64 ^ 0x5eed);
    match key % 16 {
        0 => max,
        2 => max - 64 - (key >> 8) as usize % 4096,
        _ => (key >> 8) as usize % 32,
    }
}

#[test]
fn a_sustained_two_way_stream_of_large_and_small_packets_loses_nothing() {
    // Both ranks send as fast as the transport lets them and receive at the same time:
    // large packets finish by rendezvous behind small ones sent after them, so the
    // receivers must restore order. Nothing may be dropped or refused.
    const N: u32 = 20000;
    let cfg = config();
    let (max, window) = (cfg.max_payload, cfg.reorder_window);
    let eps = job(vec![cfg; 2]);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for mut ep in eps {
            let finished = &finished;
            s.spawn(move || {
                let me = ep.rank();
                let peer = 1 - me;
                let (mut sent, mut next) = (0u32, 0u32);
                let deadline = Instant::now() + Duration::from_secs(60);
                while sent < N || next < N {
                    assert!(
                        Instant::now() < deadline,
                        "rank {me} stuck: sent {sent}, got {next} of {N}"
                    );
                    while sent < N {
                        let mut meta = sent.to_le_bytes().to_vec();
                        meta.push(me as u8);
                        let len = mixed_size(sent ^ (me as u32) << 20, max);
                        let payload = vec![(sent as u8) ^ (me as u8); len];
                        match ep.try_send(peer, &meta, &payload) {
                            Ok(SendStatus::Sent) => sent += 1,
                            Ok(SendStatus::NoCredit) => break,
                            Err(e) => panic!("rank {me}: send #{sent} failed: {e}"),
                        }
                    }
                    loop {
                        match ep.poll() {
                            Ok(Some(pkt)) => {
                                let seq = u32::from_le_bytes(pkt.meta()[..4].try_into().unwrap());
                                assert_eq!(seq, next, "rank {me}: out of order");
                                let len = mixed_size(seq ^ (peer as u32) << 20, max);
                                assert_eq!(pkt.payload().len(), len, "rank {me}: #{seq} length");
                                assert!(
                                    pkt.payload()
                                        .iter()
                                        .all(|&b| b == (seq as u8) ^ (peer as u8)),
                                    "rank {me}: #{seq} payload"
                                );
                                next += 1;
                            }
                            Ok(None) => break,
                            Err(e) => panic!("rank {me}: lost data after #{next}: {e}"),
                        }
                    }
                }
                let stats = ep.stats();
                eprintln!("rank {me}: {stats:?}");
                assert!(
                    stats.held_max < window,
                    "rank {me} held {} packets of one sender; the window is {window}",
                    stats.held_max
                );
                finished.fetch_add(1, Ordering::SeqCst);
                while finished.load(Ordering::SeqCst) < 2 {
                    assert!(ep.poll().unwrap().is_none());
                }
            });
        }
    });
}

/// `len` bytes at `off` of a peer's region.
fn span_of(region: RemoteRegion, off: u64, len: u64) -> RemoteSpan {
    RemoteSpan { region, off, len }
}

/// Drives `ep` from its own thread until `stop`, sleeping on the completion queue's
/// wait fd whenever `trywait` allows: the target side of asynchronous progress, with
/// the endpoint's owner doing nothing.
fn progress_thread(
    ep: Arc<Mutex<OfiTransport>>,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let fd = ep.lock().unwrap().wait_fd().expect("a wait fd");
        while !stop.load(Ordering::SeqCst) {
            let sleep = {
                let mut t = ep.lock().unwrap();
                t.progress().unwrap();
                t.trywait().unwrap()
            };
            if sleep {
                let mut p = libc::pollfd {
                    fd,
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one valid pollfd for the call.
                unsafe { libc::poll(&mut p, 1, 50) };
            }
        }
    })
}

/// Waits (at most 5 s) for the next RMA completion of `ep`, driving it.
fn next_done(ep: &mut OfiTransport) -> RmaDone {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(d) = ep.pop_rma_done() {
            return d;
        }
        assert!(Instant::now() < deadline, "no RMA completion within 5 s");
        ep.progress().unwrap();
    }
}

#[test]
fn rma_on_the_callers_memory_in_pieces_while_the_target_only_sleeps_on_its_fd() {
    let waiting = OfiConfig {
        wait: true,
        ..config()
    };
    let mut eps = job(vec![config(), waiting]);
    let (r1, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    let caps = r0.rma_caps();
    assert!(caps.rma_iov_limit >= 2 && caps.iov_limit >= 2, "{caps:?}");
    // What `fi_info -p tcp` lists: RAW and WAW (general and RMA bits), not WAR.
    assert!(caps.read_after_write && caps.write_after_write, "{caps:?}");
    assert!(!caps.write_after_read, "{caps:?}");
    // Rank 1's memory is its own (a Vec here; a shared-memory segment in the rma layer).
    let mut memory: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
    let r1 = Arc::new(Mutex::new(r1));
    // SAFETY: `memory` outlives the transport (dropped at the end, after it).
    let region = unsafe {
        r1.lock()
            .unwrap()
            .register_memory(memory.as_mut_ptr(), memory.len())
    }
    .unwrap();
    let remote = r1.lock().unwrap().remote(region).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let thread = progress_thread(Arc::clone(&r1), Arc::clone(&stop));

    // A strided write: 300 B, then 500 B, to two places.
    let span = |off, len| span_of(remote, off, len);
    let mut data: Vec<u8> = (0..800).map(|i| (i * 7) as u8).collect();
    let want = data.clone();
    let to = [span(100, 300), span(10_000, 500)];
    let deadline = Instant::now() + Duration::from_secs(5);
    while r0.write(1, &mut data, &to, 1).unwrap() == SendStatus::NoCredit {
        assert!(Instant::now() < deadline, "no credit for 5 s");
        assert_eq!(data.len(), 800, "a refused write keeps its bytes");
    }
    assert!(data.is_empty(), "an issued write takes its bytes");
    let done = next_done(&mut r0);
    assert_eq!((done.tag, done.peer), (1, 1));
    done.result.unwrap();
    // Remote completion: the bytes are in rank 1's memory once the write completed.
    assert_eq!(&memory[100..400], &want[..300]);
    assert_eq!(&memory[10_000..10_500], &want[300..]);

    // A read of three remote pieces into two local ones.
    let mut a = [0u8; 100];
    let mut b = [0u8; 60];
    let from = [span(0, 40), span(100, 70), span(10_400, 50)];
    let into = [(a.as_mut_ptr(), a.len()), (b.as_mut_ptr(), b.len())];
    if caps.rma_iov_limit >= 3 {
        // SAFETY: `a` and `b` live until the completion is popped below.
        while unsafe { r0.read(1, &into, &from, 2) }.unwrap() == SendStatus::NoCredit {}
        let done = next_done(&mut r0);
        assert_eq!(done.tag, 2);
        done.result.unwrap();
        let mut expect = memory[0..40].to_vec();
        expect.extend_from_slice(&memory[100..170]);
        expect.extend_from_slice(&memory[10_400..10_450]);
        assert_eq!((&a[..], &b[..]), (&expect[..100], &expect[100..]));
    }

    // Refused before anything moves: too many pieces, a piece outside the region,
    // lengths that do not add up.
    let many = vec![span(0, 1); caps.rma_iov_limit + 1];
    let mut one = vec![0u8; many.len()];
    assert!(r0.write(1, &mut one, &many, 3).is_err());
    assert!(r0
        .write(1, &mut vec![0u8; 8], &[span(64 * 1024 - 4, 8)], 3)
        .is_err());
    assert_eq!(
        one.len(),
        caps.rma_iov_limit + 1,
        "a refused write keeps its bytes"
    );
    stop.store(true, Ordering::SeqCst);
    thread.join().unwrap();
    assert!(
        r0.pop_rma_done().is_none(),
        "refused operations complete nothing"
    );
    drop(r1);
    drop(memory);
}

#[test]
fn rma_to_a_peer_that_died_completes_with_its_loss() {
    let mut eps = job(vec![config(); 2]);
    let (mut gone, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    let theirs = gone.register(4096).unwrap();
    let remote = gone.remote(theirs).unwrap();
    let span = span_of(remote, 0, 8);
    // One read that completes, so the connection exists, then the peer goes.
    let mut buf = [0u8; 8];
    let into = [(buf.as_mut_ptr(), 8)];
    // SAFETY: `buf` outlives every operation on it (each is popped before the end).
    while unsafe { r0.read(1, &into, &[span], 1) }.unwrap() == SendStatus::NoCredit {
        gone.progress().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let done = loop {
        assert!(Instant::now() < deadline, "the first read never completed");
        gone.progress().unwrap();
        r0.progress().unwrap();
        if let Some(d) = r0.pop_rma_done() {
            break d;
        }
    };
    done.result.unwrap();
    drop(gone);
    let t = Instant::now();
    let err = loop {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "no error within 10 s: a hang"
        );
        r0.expire_stuck();
        // SAFETY: as above.
        if let Err(e) = unsafe { r0.read(1, &into, &[span], 2) } {
            break e;
        }
        r0.progress().unwrap();
        if let Some(RmaDone {
            tag: 2,
            result: Err(e),
            ..
        }) = r0.pop_rma_done()
        {
            break e;
        }
    };
    assert!(
        matches!(err, TransportError::PeerLost { peer: 1, .. }),
        "expected rank 1 lost, got {err}"
    );
    // Whatever is still in flight ends before `buf` goes.
    let deadline = Instant::now() + Duration::from_secs(10);
    while r0.rma_in_flight() > 0 {
        assert!(
            Instant::now() < deadline,
            "operations to a lost peer never ended"
        );
        r0.expire_stuck();
        r0.progress().unwrap();
    }
}

/// 8 B RMA read round trips against a target served by a thread that either spins on
/// `progress` or sleeps on the wait fd (the rma layer's progress thread).
fn read_latency(sleeping_target: bool, rounds: usize) -> Duration {
    let mut eps = job(vec![
        config(),
        OfiConfig {
            wait: true,
            ..config()
        },
    ]);
    let (mut r1, mut r0) = (eps.pop().unwrap(), eps.pop().unwrap());
    let theirs = r1.register(4096).unwrap();
    let remote = r1.remote(theirs).unwrap();
    let r1 = Arc::new(Mutex::new(r1));
    let stop = Arc::new(AtomicBool::new(false));
    let thread = if sleeping_target {
        progress_thread(Arc::clone(&r1), Arc::clone(&stop))
    } else {
        let (r1, stop) = (Arc::clone(&r1), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                r1.lock().unwrap().progress().unwrap();
            }
        })
    };
    let span = span_of(remote, 0, 8);
    let mut buf = [0u8; 8];
    let into = [(buf.as_mut_ptr(), 8)];
    let mut t = Instant::now();
    for i in 0..rounds + 100 {
        if i == 100 {
            t = Instant::now();
        }
        // SAFETY: `buf` outlives the read, whose completion is awaited here.
        while unsafe { r0.read(1, &into, &[span], i as u64) }.unwrap() == SendStatus::NoCredit {}
        next_done(&mut r0).result.unwrap();
    }
    let each = t.elapsed() / rounds as u32;
    stop.store(true, Ordering::SeqCst);
    thread.join().unwrap();
    each
}

/// Indicative: `cargo test --release -p nf-transport --test ofi -- --ignored
/// --nocapture measure_rma`.
#[test]
#[ignore]
fn measure_rma_read_loopback() {
    for _ in 0..3 {
        let spin = read_latency(false, 5000);
        let sleep = read_latency(true, 5000);
        println!(
            "8 B fi_read round trip: target spinning {spin:?}, target sleeping on its fd {sleep:?}"
        );
    }
}
