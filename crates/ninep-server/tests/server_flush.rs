//! Tflush and cancellation: a blocked read never blocks other tags, a flushed request
//! is never answered after its Rflush, and cancelled reads consume nothing.

mod counting;

use std::time::Duration;

use counting::Counting;
use nf_ninep::errno::EPROTO;
use nf_ninep::*;
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::synthetic::Stream;
use nf_testkit::ninep::{ecode, serve, wait_for, Got, Raw, Served, Via, QUIET};

/// A session with fid 1 = root, 2 = /stream (open), 3 = /hello (open).
fn setup(via: Via) -> (Served<Counting>, Stream, Raw) {
    let (tree, stream) = Counting::sample();
    let s = serve(tree, ServerConfig::default(), via);
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    raw.walk(1, 2, &["stream"]);
    raw.lopen(2, LOpenFlags::RDONLY);
    raw.walk(1, 3, &["hello"]);
    raw.lopen(3, LOpenFlags::RDONLY);
    (s, stream, raw)
}

/// A request that never blocks: the root's attributes.
fn getattr_root() -> Tgetattr {
    Tgetattr {
        fid: 1,
        request_mask: GetattrMask::ALL,
    }
}

fn read(fid: u32) -> Tread {
    Tread {
        fid,
        offset: 0,
        count: 100,
    }
}

#[test]
fn flushing_a_blocked_read_cancels_it_while_other_tags_go_on() {
    for via in [Via::Tcp, Via::Unix] {
        let (s, stream, mut raw) = setup(via);
        raw.send(10, read(2));
        // Flush only once the read is in flight (it then stays so: the stream is empty).
        assert!(wait_for(|| s.server.stats().in_flight == 1));

        // Other tags on the same connection are answered meanwhile.
        for tag in 11..20 {
            match raw.rpc(tag, read(3)) {
                Rmessage::Rread(r) => assert_eq!(r.data.as_slice(), b"hello, world\n"),
                other => panic!("{other:?}"),
            }
        }
        let r = raw.rpc(20, getattr_root());
        assert!(matches!(r, Rmessage::Rgetattr(_)));
        assert_eq!(s.server.stats().in_flight, 1, "the stream read blocks");

        // Flush it: Rflush comes, and tag 10 is never answered.
        let f = raw.rpc(21, Tflush { oldtag: 10 });
        assert!(matches!(f, Rmessage::Rflush(_)), "{f:?}");
        assert!(matches!(raw.recv_within(QUIET), Got::Nothing));
        stream.push(b"late data");
        assert!(
            matches!(raw.recv_within(QUIET), Got::Nothing),
            "{via:?}: flushed tag answered"
        );
        assert_eq!(s.server.stats().in_flight, 0);

        // The cancelled read took nothing: the next read on tag 10 gets everything.
        match raw.rpc(10, read(2)) {
            Rmessage::Rread(r) => assert_eq!(r.data.as_slice(), b"late data"),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn flushing_nothing_answers_at_once() {
    let (_s, _stream, mut raw) = setup(Via::Tcp);
    assert!(matches!(
        raw.rpc(5, Tflush { oldtag: 4242 }),
        Rmessage::Rflush(_)
    ));
}

#[test]
fn a_reply_that_beats_the_flush_comes_first() {
    let (_s, _stream, mut raw) = setup(Via::Unix);
    for round in 0..50u16 {
        let tag = 100 + round;
        raw.send(tag, read(3));
        raw.send(99, Tflush { oldtag: tag });
        let first = raw.recv();
        if first.tag == tag {
            assert!(matches!(first.body, Rmessage::Rread(_)));
            let second = raw.recv();
            assert_eq!(second.tag, 99);
            assert!(matches!(second.body, Rmessage::Rflush(_)));
        } else {
            assert_eq!(first.tag, 99);
            assert!(matches!(first.body, Rmessage::Rflush(_)));
        }
        // The read is over once its Rflush is out, so nothing of this round may come
        // before the next reply.
        let r = raw.rpc(98, getattr_root());
        assert!(matches!(r, Rmessage::Rgetattr(_)), "round {round}: {r:?}");
    }
}

#[test]
fn several_flushes_of_one_request_are_answered_in_order() {
    let (_s, _stream, mut raw) = setup(Via::Tcp);
    raw.send(10, read(2));
    raw.send(11, Tflush { oldtag: 10 });
    raw.send(12, Tflush { oldtag: 10 });
    raw.send(13, Tflush { oldtag: 11 });
    let tags: Vec<u16> = (0..3)
        .map(|_| raw.recv())
        .map(|f| {
            assert!(matches!(f.body, Rmessage::Rflush(_)));
            f.tag
        })
        .collect();
    assert_eq!(tags, [11, 12, 13]);
    assert!(matches!(raw.recv_within(QUIET), Got::Nothing));
}

#[test]
fn many_blocked_reads_flush_independently() {
    let (s, stream, mut raw) = setup(Via::Tcp);
    for i in 0..20u32 {
        raw.walk(1, 100 + i, &["stream"]);
        raw.lopen(100 + i, LOpenFlags::RDONLY);
        raw.send(1000 + i as u16, read(100 + i));
    }
    assert!(wait_for(|| s.server.stats().in_flight == 20));
    for i in (0..20u16).step_by(2) {
        let f = raw.rpc(2000 + i, Tflush { oldtag: 1000 + i });
        assert!(matches!(f, Rmessage::Rflush(_)));
    }
    stream.push(b"x");
    let mut answered: Vec<u16> = (0..10).map(|_| raw.recv().tag).collect();
    answered.sort();
    assert_eq!(
        answered,
        (0..20)
            .filter(|i| i % 2 == 1)
            .map(|i| 1000 + i)
            .collect::<Vec<_>>()
    );
    assert!(matches!(raw.recv_within(QUIET), Got::Nothing));
}

#[test]
fn a_tag_in_flight_cannot_be_reused() {
    let (_s, _stream, mut raw) = setup(Via::Tcp);
    raw.send(10, read(2));
    let r = raw.rpc(10, getattr_root());
    assert_eq!(ecode(&r), EPROTO);
    assert!(matches!(
        raw.rpc(11, Tflush { oldtag: 10 }),
        Rmessage::Rflush(_)
    ));
}

#[test]
fn version_aborts_blocked_reads_without_answering_them() {
    let (s, _stream, mut raw) = setup(Via::Unix);
    let tree = s.server.fs().clone();
    raw.send(10, read(2));
    raw.send(11, read(2));
    assert!(wait_for(|| s.server.stats().in_flight == 2));
    let v = raw.version(8192);
    assert_eq!(v.version, VERSION);
    assert!(matches!(raw.recv_within(QUIET), Got::Nothing));
    assert_eq!(tree.live(), 0);
}

#[test]
fn the_client_can_flush_its_own_calls() {
    let (tree, stream) = Counting::sample();
    let s = serve(tree, ServerConfig::default(), Via::Tcp);
    let client = s.client();
    let root = client.attach("t", "").unwrap();
    let file = root.open("/stream", LOpenFlags::RDONLY).unwrap();
    let pending = client
        .start(Tread {
            fid: file.number(),
            offset: 0,
            count: 64,
        })
        .unwrap();
    // Flush only once the read is in flight; the stream is empty, so it stays blocked.
    assert!(wait_for(|| s.server.stats().in_flight == 1));
    assert!(pending.wait_timeout(Duration::ZERO).unwrap().is_none());
    // The same client keeps working while the call is blocked.
    assert_eq!(root.read_file("/hello").unwrap(), b"hello, world\n");
    assert_eq!(pending.flush().unwrap(), None);
    stream.push(b"after");
    assert_eq!(file.read_chunk(0, 64).unwrap(), b"after");
    // A blocked read returns as soon as data arrives.
    let reader = std::thread::spawn(move || file.read_chunk(0, 64).unwrap());
    // Push only once the read is blocked in the server.
    assert!(wait_for(|| s.server.stats().in_flight == 1));
    stream.push(b"more");
    assert_eq!(reader.join().unwrap(), b"more");
}
