//! Session rules checked with raw frames: version negotiation and reset, fid
//! bookkeeping, malformed requests, and releasing fids when a connection drops.

mod counting;

use std::time::Duration;

use counting::Counting;
use nf_ninep::errno::*;
use nf_ninep::*;
use nf_ninep_server::ServerConfig;
use nf_testkit::ninep::{ecode, serve, wait_for, Got, Via, QUIET};

fn served(via: Via) -> nf_testkit::ninep::Served<Counting> {
    let (tree, _) = Counting::sample();
    serve(tree, ServerConfig::default().max_msize(65536), via)
}

#[test]
fn version_negotiates_msize_and_refuses_other_dialects() {
    let s = served(Via::Tcp);
    let mut raw = s.raw();
    let v = raw.version(1 << 30);
    assert_eq!((v.msize, v.version.as_str()), (65536, VERSION));
    let v = raw.version(8192);
    assert_eq!(v.msize, 8192);
    let r = raw.rpc(
        NOTAG,
        Tversion {
            msize: 8192,
            version: "9P2000.u".into(),
        },
    );
    assert!(
        matches!(r, Rmessage::Rversion(ref v) if v.version == VERSION_UNKNOWN),
        "{r:?}"
    );
    // Refused: nothing else is served until a good Tversion.
    assert_eq!(ecode(&raw.attach(1)), EPROTO);
    let v = raw.version(8192);
    assert_eq!(v.version, VERSION);
    assert!(matches!(raw.attach(1), Rmessage::Rattach(_)));
    // Tversion should carry NOTAG, but clients such as Go's hugelgupf/p9 use an
    // ordinary tag: it is accepted, answered under that tag, and resets the session.
    let r = raw.rpc(
        5,
        Tversion {
            msize: 8192,
            version: "9P2000.L.Google.7".into(),
        },
    );
    match r {
        Rmessage::Rversion(v) => assert_eq!((v.msize, v.version.as_str()), (8192, VERSION)),
        other => panic!("{other:?}"),
    }
    let r = raw.walk(1, 2, &[]);
    assert_eq!(ecode(&r), EBADF, "the session was reset: fid 1 is gone");
}

#[test]
fn requests_before_version_are_refused() {
    let s = served(Via::Unix);
    let mut raw = s.raw();
    assert_eq!(ecode(&raw.attach(1)), EPROTO);
    assert_eq!(ecode(&raw.rpc(9, Tflush { oldtag: 1 })), EPROTO);
}

#[test]
fn a_new_version_clunks_every_fid() {
    let s = served(Via::Tcp);
    let tree = s.server.fs().clone();
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    assert!(matches!(
        raw.walk(1, 2, &["dir", "sub"]),
        Rmessage::Rwalk(_)
    ));
    assert!(matches!(raw.walk(1, 3, &[]), Rmessage::Rwalk(_)));
    assert_eq!(tree.live(), 3);
    assert_eq!(s.server.stats().fids, 3);
    raw.version(8192);
    assert_eq!(tree.live(), 0, "every state clunked");
    assert_eq!(s.server.stats().fids, 0);
    assert_eq!(ecode(&raw.clunk(1)), EBADF);
    // The fid numbers are free again.
    assert!(matches!(raw.attach(1), Rmessage::Rattach(_)));
}

#[test]
fn fid_reuse_unknown_fids_and_bad_walks() {
    let s = served(Via::Tcp);
    let tree = s.server.fs().clone();
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    assert_eq!(ecode(&raw.attach(1)), EEXIST, "attach to a fid in use");
    assert_eq!(
        ecode(&raw.walk(1, 1, &["nope"])),
        ENOENT,
        "walk in place to nothing"
    );
    assert!(matches!(raw.walk(1, 2, &["hello"]), Rmessage::Rwalk(_)));
    assert_eq!(ecode(&raw.walk(1, 2, &["dir"])), EEXIST, "newfid in use");
    assert_eq!(ecode(&raw.walk(77, 5, &[])), EBADF, "unknown fid");
    assert_eq!(ecode(&raw.walk(2, 5, &["x"])), ENOTDIR, "walk from a file");
    assert_eq!(ecode(&raw.clunk(77)), EBADF);
    assert_eq!(
        ecode(&raw.rpc(
            6,
            Tgetattr {
                fid: 77,
                request_mask: GetattrMask::ALL
            }
        )),
        EBADF
    );
    // Walk stopping part way: Rwalk with fewer qids, newfid not created.
    match raw.walk(1, 6, &["dir", "nope", "x"]) {
        Rmessage::Rwalk(w) => assert_eq!(w.wqids.len(), 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(ecode(&raw.clunk(6)), EBADF);
    // I/O on an unopened fid, and opening twice.
    assert_eq!(
        ecode(&raw.rpc(
            7,
            Tread {
                fid: 2,
                offset: 0,
                count: 10
            }
        )),
        EBADF
    );
    assert!(matches!(
        raw.lopen(2, LOpenFlags::RDONLY),
        Rmessage::Rlopen(_)
    ));
    assert_eq!(ecode(&raw.lopen(2, LOpenFlags::RDONLY)), EBUSY);
    let w = Twrite {
        fid: 2,
        offset: 0,
        data: vec![1].into(),
    };
    assert_eq!(ecode(&raw.rpc(8, w)), EBADF, "write on a read-only open");
    // Directories: no write opens, no reads.
    assert!(matches!(raw.walk(1, 9, &["dir"]), Rmessage::Rwalk(_)));
    assert_eq!(ecode(&raw.lopen(9, LOpenFlags::RDWR)), EISDIR);
    assert_eq!(tree.live(), 3);
}

/// A `Twalk` frame with `n` names, built by hand (the codec refuses to encode > 16).
fn walk_frame(tag: u16, n: usize) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&1u32.to_le_bytes());
    body.extend_from_slice(&2u32.to_le_bytes());
    body.extend_from_slice(&(n as u16).to_le_bytes());
    for _ in 0..n {
        body.extend_from_slice(&1u16.to_le_bytes());
        body.push(b'a');
    }
    frame(MsgType::Twalk as u8, tag, &body)
}

fn frame(ty: u8, tag: u16, body: &[u8]) -> Vec<u8> {
    let mut f = ((HEADER_SIZE + body.len()) as u32).to_le_bytes().to_vec();
    f.push(ty);
    f.extend_from_slice(&tag.to_le_bytes());
    f.extend_from_slice(body);
    f
}

#[test]
fn malformed_requests_get_rlerror_and_the_session_goes_on() {
    let s = served(Via::Tcp);
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    // 17 walk names.
    raw.send_bytes(&walk_frame(20, 17));
    let f = raw.recv();
    assert_eq!((f.tag, ecode(&f.body)), (20, 7), "E2BIG");
    // 16 are fine (and fail only because no such file).
    raw.send_bytes(&walk_frame(21, 16));
    assert_eq!(ecode(&raw.recv().body), ENOENT);
    // Unknown type, a reply type, a truncated body, trailing bytes.
    for (tag, bytes) in [
        (22, frame(99, 22, &[])),
        (23, frame(MsgType::Rclunk as u8, 23, &[])),
        (24, frame(MsgType::Tclunk as u8, 24, &[1, 0])),
        (25, frame(MsgType::Tclunk as u8, 25, &[1, 0, 0, 0, 9])),
    ] {
        raw.send_bytes(&bytes);
        let f = raw.recv();
        assert_eq!((f.tag, ecode(&f.body)), (tag, EPROTO));
    }
    assert!(matches!(raw.walk(1, 2, &["hello"]), Rmessage::Rwalk(_)));
}

/// A read or readdir asking for more than fits in msize is answered with what fits
/// (diod and the Linux client expect a short reply, not an error).
#[test]
fn counts_are_cut_to_fit_msize() {
    let s = served(Via::Unix);
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    raw.walk(1, 2, &["hello"]);
    raw.lopen(2, LOpenFlags::RDONLY);
    for (tag, count) in [(9, 8193), (9, u32::MAX), (9, 8192)] {
        match raw.rpc(
            tag,
            Tread {
                fid: 2,
                offset: 0,
                count,
            },
        ) {
            Rmessage::Rread(r) => assert_eq!(r.data.as_slice(), b"hello, world\n", "{count}"),
            other => panic!("count {count}: {other:?}"),
        }
    }
    raw.walk(1, 3, &["dir"]);
    raw.lopen(3, LOpenFlags::RDONLY);
    let r = raw.rpc(
        10,
        Treaddir {
            fid: 3,
            offset: 0,
            count: u32::MAX,
        },
    );
    match r {
        Rmessage::Rreaddir(r) => assert!(!r.data.is_empty() && r.data.len() <= 8192 - 24),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_oversized_frame_closes_the_connection() {
    let s = served(Via::Tcp);
    let mut raw = s.raw_session(8192);
    let mut big = 9000u32.to_le_bytes().to_vec();
    big.extend_from_slice(&[MsgType::Twrite as u8, 1, 0]);
    raw.send_bytes(&big);
    assert!(matches!(
        raw.recv_within(Duration::from_secs(5)),
        Got::Closed
    ));
    assert!(wait_for(|| s.server.stats().clients == 0));
}

#[test]
fn a_size_below_the_header_closes_the_connection() {
    let s = served(Via::Unix);
    for size in 0u32..HEADER_SIZE as u32 {
        let mut raw = s.raw_session(8192);
        raw.attach(1);
        let mut bytes = size.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[MsgType::Tclunk as u8, 1, 0, 1, 0, 0, 0]);
        raw.send_bytes(&bytes);
        assert!(
            matches!(raw.recv_within(Duration::from_secs(5)), Got::Closed),
            "size {size}"
        );
    }
    assert!(wait_for(|| {
        let st = s.server.stats();
        st.clients == 0 && st.fids == 0
    }));
}

#[test]
fn a_write_whose_count_runs_past_its_frame_is_refused() {
    let s = served(Via::Unix);
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    raw.walk(1, 2, &["hello"]);
    // Twrite fid[4] offset[8] count[4] data: count says 9000 (beyond msize), 3 bytes follow.
    let mut body = 2u32.to_le_bytes().to_vec();
    body.extend_from_slice(&0u64.to_le_bytes());
    body.extend_from_slice(&9000u32.to_le_bytes());
    body.extend_from_slice(b"abc");
    raw.send_bytes(&frame(MsgType::Twrite as u8, 30, &body));
    let f = raw.recv();
    assert_eq!((f.tag, ecode(&f.body)), (30, EPROTO));
    assert!(matches!(raw.walk(1, 3, &["hello"]), Rmessage::Rwalk(_)));
}

#[test]
fn a_dropped_connection_releases_its_fids() {
    for via in [Via::Tcp, Via::Unix] {
        let s = served(via);
        let tree = s.server.fs().clone();
        {
            let mut raw = s.raw_session(8192);
            raw.attach(1);
            for i in 0..10 {
                raw.walk(1, 10 + i, &["dir"]);
            }
            raw.walk(1, 2, &["hello"]);
            raw.lopen(2, LOpenFlags::RDONLY);
            assert_eq!(tree.live(), 12);
            // A blocked read in flight when the connection drops.
            raw.walk(1, 3, &["stream"]);
            raw.lopen(3, LOpenFlags::RDONLY);
            raw.send(
                50,
                Tread {
                    fid: 3,
                    offset: 0,
                    count: 100,
                },
            );
            assert!(matches!(raw.recv_within(QUIET), Got::Nothing));
            assert_eq!(s.server.stats().in_flight, 1);
        }
        assert!(
            wait_for(|| tree.live() == 0),
            "{via:?}: {} states live",
            tree.live()
        );
        let st = s.server.stats();
        assert_eq!((st.clients, st.fids, st.in_flight), (0, 0, 0));
    }
}

#[test]
fn client_fids_are_clunked_when_dropped() {
    let s = served(Via::Unix);
    let tree = s.server.fs().clone();
    let client = s.client();
    let root = client.attach("t", "").unwrap();
    {
        let f = root.open("/hello", LOpenFlags::RDONLY).unwrap();
        let g = root.walk("/dir/sub").unwrap();
        assert_eq!(g.clone_fid().unwrap().qid(), g.qid());
        // An open fid cannot be walked (or cloned).
        assert_eq!(f.clone_fid().unwrap_err().errno(), Some(EBUSY));
        assert_eq!(tree.live(), 3);
    }
    assert_eq!(tree.live(), 1, "only the root is left");
    drop(root);
    assert_eq!(tree.live(), 0);
}
