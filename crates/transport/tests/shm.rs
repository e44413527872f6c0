//! The shm transport over real shared-memory segments, several endpoints per process.

use std::io::Write;
use std::time::Duration;

use nf_transport::shm::layout::FAST_DATA;
use nf_transport::shm::{segment, ShmConfig, ShmTransport};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};

fn config(dir: &std::path::Path) -> ShmConfig {
    ShmConfig {
        dir: dir.to_owned(),
        rings: 1,
        frames: 8,
        frame_size: 1024,
        ..ShmConfig::default()
    }
}

/// Creates, connects and unlinks `n` endpoints of one job, as the core does.
fn job(cfg: &ShmConfig, n: usize) -> Vec<ShmTransport> {
    let mut eps: Vec<_> = (0..n)
        .map(|r| ShmTransport::create(cfg, "t1", r, n).unwrap())
        .collect();
    for ep in &mut eps {
        ep.connect().unwrap();
    }
    for ep in &eps {
        ep.unlink_own().unwrap();
    }
    eps
}

#[test]
fn segment_names_are_gone_after_wire_up() {
    let dir = tempfile::tempdir().unwrap();
    let eps = job(&config(dir.path()), 2);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "names unlinked after wire-up"
    );
    drop(eps);
}

#[test]
fn credit_runs_out_and_comes_back_when_packets_are_freed() {
    let dir = tempfile::tempdir().unwrap();
    let mut eps = job(&config(dir.path()), 3);
    // Payloads too big for the fast box. 8 frames shared by 3 senders: 2 each.
    let [a, b, c, x] = [[b'a'; 600], [b'b'; 600], [b'c'; 600], [b'x'; 600]];
    assert_eq!(eps[0].try_send(2, &[], &a).unwrap(), SendStatus::Sent);
    assert_eq!(eps[0].try_send(2, &[], &b).unwrap(), SendStatus::Sent);
    assert_eq!(eps[0].try_send(2, &[], &c).unwrap(), SendStatus::NoCredit);
    // Another sender has its own share.
    assert_eq!(eps[1].try_send(2, &[], &x).unwrap(), SendStatus::Sent);
    let held = eps[2].poll().unwrap().unwrap();
    let again = eps[0].try_send(2, &[], &c).unwrap();
    assert_eq!(
        again,
        SendStatus::NoCredit,
        "credit returns on drop, not on poll"
    );
    assert_eq!(held.payload(), a);
    drop(held);
    assert_eq!(eps[0].try_send(2, &[], &c).unwrap(), SendStatus::Sent);
    let rest: Vec<Vec<u8>> = std::iter::from_fn(|| eps[2].poll().unwrap())
        .map(|p| p.payload().to_vec())
        .collect();
    assert_eq!(rest, [b.to_vec(), x.to_vec(), c.to_vec()]);
}

#[test]
fn several_rings_per_receiver_keep_per_sender_order() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = ShmConfig {
        rings: 3,
        frames: 16,
        ..config(dir.path())
    };
    let mut eps = job(&cfg, 4);
    let mut next = [0u32; 4];
    for round in 0..50u32 {
        for s in 0..3 {
            while eps[s]
                .try_send(3, &round.to_le_bytes(), &[s as u8; 600])
                .unwrap()
                == SendStatus::NoCredit
            {
                drain_checking(&mut eps[3], &mut next);
            }
        }
    }
    drain_checking(&mut eps[3], &mut next);
    assert_eq!(&next[..3], &[50, 50, 50]);
}

fn drain_checking(ep: &mut ShmTransport, next: &mut [u32; 4]) {
    while let Some(p) = ep.poll().unwrap() {
        let seq = u32::from_le_bytes(p.meta().try_into().unwrap());
        assert_eq!(seq, next[p.src()], "order from sender {}", p.src());
        assert_eq!(p.payload(), [p.src() as u8; 600]);
        next[p.src()] += 1;
    }
}

#[test]
fn bad_arguments_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut eps = job(&config(dir.path()), 2);
    assert!(matches!(
        eps[0].try_send(5, &[], b""),
        Err(TransportError::NoPeer { dest: 5, size: 2 })
    ));
    assert!(
        matches!(
            eps[0].try_send(0, &[], b""),
            Err(TransportError::NoPeer { .. })
        ),
        "no shm path to self"
    );
    let big = vec![0u8; 1024];
    assert!(matches!(
        eps[0].try_send(1, &[], &big),
        Err(TransportError::TooLarge { max: 960, .. })
    ));
    assert!(matches!(
        eps[0].try_send(1, &[0; 49], b""),
        Err(TransportError::TooLarge { max: 48, .. })
    ));
    let bad = ShmConfig {
        frames: 6,
        ..config(dir.path())
    };
    assert!(matches!(
        ShmTransport::create(&bad, "t2", 0, 2),
        Err(TransportError::Config(_))
    ));
}

#[test]
fn foreign_or_garbage_segments_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let mut a = ShmTransport::create(&cfg, "t3", 0, 2).unwrap();
    std::fs::File::create(segment::segment_path(dir.path(), "t3", 1))
        .unwrap()
        .write_all(&[0xAB; 4096])
        .unwrap();
    let err = a.connect().expect_err("garbage must be refused");
    assert!(err.to_string().contains("not a ninefold segment"), "{err}");
    // A peer created for a different job size.
    let _b = ShmTransport::create(&cfg, "t4", 1, 3).unwrap();
    let mut c = ShmTransport::create(&cfg, "t4", 0, 2).unwrap();
    let err = c.connect().expect_err("size mismatch must be refused");
    assert!(err.to_string().contains("3 local ranks"), "{err}");
}

#[test]
fn stale_segments_of_dead_owners_are_reclaimed() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let live = ShmTransport::create(&cfg, "live", 0, 1).unwrap();
    let dead_path = segment::segment_path(dir.path(), "dead", 0);
    drop(ShmTransport::create(&cfg, "dead", 0, 1).unwrap());
    // Make its owner a pid that cannot exist (beyond pid_max).
    let mut bytes = std::fs::read(&dead_path).unwrap();
    bytes[36..40].copy_from_slice(&(i32::MAX as u32).to_le_bytes());
    std::fs::write(&dead_path, &bytes).unwrap();
    // Half-made (no magic yet), fresh: kept; with zero grace: removed.
    let half = dir.path().join("nf-half-0");
    std::fs::write(&half, [0u8; 64]).unwrap();
    let removed = segment::reclaim_stale(dir.path(), Duration::from_secs(3600));
    assert_eq!(removed, vec![dead_path]);
    assert!(half.exists());
    let removed = segment::reclaim_stale(dir.path(), Duration::ZERO);
    assert_eq!(removed, vec![half]);
    assert!(live.geometry().nsenders == 1);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "the live job's segment stays"
    );
}

#[test]
fn small_packets_take_the_fast_box_and_order_holds_across_paths() {
    let dir = tempfile::tempdir().unwrap();
    let mut eps = job(&config(dir.path()), 2);
    let small = |i: u8| [i; 8];
    // 16 fast slots per pair: the 17th small packet waits (the box is full).
    for i in 0..16 {
        assert_eq!(
            eps[0].try_send(1, &[i], &small(i)).unwrap(),
            SendStatus::Sent
        );
    }
    assert_eq!(
        eps[0].try_send(1, &[16], &small(16)).unwrap(),
        SendStatus::NoCredit
    );
    // A large packet may not overtake the small ones still in the box.
    let big = [0xEEu8; 600];
    assert_eq!(
        eps[0].try_send(1, &[99], &big).unwrap(),
        SendStatus::NoCredit
    );
    let first = eps[1].poll().unwrap().unwrap();
    assert_eq!((first.meta(), first.payload()), (&[0u8][..], &small(0)[..]));
    drop(first);
    assert_eq!(eps[1].poll().unwrap().unwrap().meta(), [1]);
    // Two slots free, but 14 small packets are still queued: the large one waits.
    assert_eq!(
        eps[0].try_send(1, &[99], &big).unwrap(),
        SendStatus::NoCredit
    );
    let mut metas: Vec<u8> = std::iter::from_fn(|| eps[1].poll().unwrap())
        .map(|p| p.meta()[0])
        .collect();
    assert_eq!(metas, (2..16).collect::<Vec<u8>>());
    // Drained: the large one goes by frame, and a small one right after follows it there.
    assert_eq!(eps[0].try_send(1, &[99], &big).unwrap(), SendStatus::Sent);
    assert_eq!(
        eps[0].try_send(1, &[100], &small(100)).unwrap(),
        SendStatus::Sent
    );
    metas = std::iter::from_fn(|| eps[1].poll().unwrap())
        .map(|p| p.meta()[0])
        .collect();
    assert_eq!(metas, [99, 100]);
}

#[test]
fn a_held_fast_packet_is_never_overwritten_even_when_later_ones_are_freed() {
    let dir = tempfile::tempdir().unwrap();
    let mut eps = job(&config(dir.path()), 2);
    for i in 0..16u8 {
        assert_eq!(eps[0].try_send(1, &[i], &[i; 8]).unwrap(), SendStatus::Sent);
    }
    let held = eps[1].poll().unwrap().unwrap();
    let later: Vec<_> = std::iter::from_fn(|| eps[1].poll().unwrap()).collect();
    assert_eq!(later.len(), 15);
    drop(later);
    assert!(
        eps[1].poll().unwrap().is_none(),
        "idle poll publishes what was freed"
    );
    // Ticket 16 would reuse the held packet's slot: it must wait.
    assert_eq!(
        eps[0].try_send(1, &[16], &[16; 8]).unwrap(),
        SendStatus::NoCredit
    );
    assert_eq!(
        (held.meta(), held.payload()),
        (&[0u8][..], &[0u8; 8][..]),
        "held packet intact"
    );
    drop(held);
    assert!(eps[1].poll().unwrap().is_none());
    assert_eq!(
        eps[0].try_send(1, &[16], &[16; 8]).unwrap(),
        SendStatus::Sent
    );
    let p = eps[1].poll().unwrap().unwrap();
    assert_eq!((p.meta(), p.payload()), (&[16u8][..], &[16u8; 8][..]));
}

/// Small packets sent to rank 1 before the path they take is full.
fn sent_until_full(eps: &mut [ShmTransport]) -> usize {
    (0..64u8)
        .take_while(|&i| eps[0].try_send(1, &[i], &[i; 8]).unwrap() == SendStatus::Sent)
        .count()
}

#[test]
fn the_fast_limit_sends_larger_packets_through_the_rings() {
    let dir = tempfile::tempdir().unwrap();
    // The fast box holds 16 packets per pair; this ring gives a sender at most 8 frames.
    let mut eps = job(&config(dir.path()), 2);
    assert_eq!(sent_until_full(&mut eps), 16);
    let off = ShmConfig {
        fast_limit: 0,
        ..config(dir.path())
    };
    let mut eps = job(&off, 2);
    let n = sent_until_full(&mut eps);
    assert!(
        n <= 8,
        "{n} packets: the fast box was used with its limit at 0"
    );
    let metas: Vec<u8> = std::iter::from_fn(|| eps[1].poll().unwrap())
        .map(|p| p.meta()[0])
        .collect();
    assert_eq!(metas, (0..n as u8).collect::<Vec<u8>>());
    let too_big = ShmConfig {
        fast_limit: FAST_DATA + 1,
        ..config(dir.path())
    };
    assert!(matches!(
        ShmTransport::create(&too_big, "t9", 0, 2),
        Err(TransportError::Config(_))
    ));
}

#[test]
fn a_peer_with_another_frame_size_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let mut a = ShmTransport::create(&cfg, "t10", 0, 2).unwrap();
    let bigger = ShmConfig {
        frame_size: 2048,
        ..config(dir.path())
    };
    let _b = ShmTransport::create(&bigger, "t10", 1, 2).unwrap();
    let err = a
        .connect()
        .expect_err("a frame size mismatch must be refused");
    assert!(
        matches!(
            err,
            TransportError::FrameSizeMismatch {
                peer: 1,
                ours: 1024,
                theirs: 2048
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("NF_SHM_FRAME_SIZE"), "{err}");
}
