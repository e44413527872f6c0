//! Limits: each one, when hit, gives a clear error and leaves the server working.

mod counting;

use counting::Counting;
use nf_ninep::errno::{EAGAIN, EMFILE};
use nf_ninep::*;
use nf_ninep_client::{ClientConfig, ClientError};
use nf_ninep_server::ServerConfig;
use nf_testkit::ninep::{ecode, serve, wait_for, Via};
use std::time::Duration;

#[test]
fn max_fids_per_connection() {
    let (tree, _) = Counting::sample();
    let s = serve(tree, ServerConfig::default().max_fids(4), Via::Tcp);
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    for fid in 2..=4 {
        assert!(matches!(raw.walk(1, fid, &["dir"]), Rmessage::Rwalk(_)));
    }
    assert_eq!(ecode(&raw.walk(1, 5, &["dir"])), EMFILE);
    raw.clunk(4);
    assert!(matches!(raw.walk(1, 5, &["dir"]), Rmessage::Rwalk(_)));
    // Another connection has its own table.
    let root = s.client().attach("t", "").unwrap();
    let held: Vec<_> = (0..5).map(|_| root.walk("/dir")).collect();
    let err = held.into_iter().find_map(Result::err).expect("limit hit");
    assert_eq!(err.errno(), Some(EMFILE));
    assert!(err.to_string().contains("fid limit"), "{err}");
}

#[test]
fn max_in_flight_per_connection() {
    let (tree, stream) = Counting::sample();
    let s = serve(tree, ServerConfig::default().max_in_flight(2), Via::Unix);
    let mut raw = s.raw_session(8192);
    raw.attach(1);
    for fid in [2, 3] {
        raw.walk(1, fid, &["stream"]);
        raw.lopen(fid, LOpenFlags::RDONLY);
    }
    raw.send(
        10,
        Tread {
            fid: 2,
            offset: 0,
            count: 10,
        },
    );
    raw.send(
        11,
        Tread {
            fid: 3,
            offset: 0,
            count: 10,
        },
    );
    assert!(wait_for(|| s.server.stats().in_flight == 2));
    let r = raw.rpc(
        12,
        Tgetattr {
            fid: 1,
            request_mask: GetattrMask::ALL,
        },
    );
    assert_eq!(ecode(&r), EAGAIN);
    // Flush is never refused, and frees a slot.
    assert!(matches!(
        raw.rpc(13, Tflush { oldtag: 10 }),
        Rmessage::Rflush(_)
    ));
    let r = raw.rpc(
        12,
        Tgetattr {
            fid: 1,
            request_mask: GetattrMask::ALL,
        },
    );
    assert!(matches!(r, Rmessage::Rgetattr(_)));
    stream.push(b"go");
    assert_eq!(raw.recv().tag, 11);
}

#[test]
fn max_clients() {
    let (tree, _) = Counting::sample();
    // Attached clients that spoke within `evict_idle_after` (an hour here) are not
    // idle: neither gives its slot up.
    let limits = ServerConfig::default()
        .max_clients(2)
        .evict_idle_after(Duration::from_secs(3600));
    let s = serve(tree, limits, Via::Tcp);
    let a = s.client();
    let b = s.client();
    let (_ra, _rb) = (a.attach("a", "").unwrap(), b.attach("b", "").unwrap());
    let addr = s.listener.as_ref().unwrap().tcp_addr().unwrap();
    let err = nf_ninep_client::Client::connect_tcp(addr).unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Remote {
                op: "version",
                errno: EAGAIN,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("limit"), "{err}");
    assert_eq!(s.server.stats().refused_clients, 1);
    drop((a, _ra));
    assert!(wait_for(|| s.server.stats().clients == 1));
    let c = s.client();
    assert!(c.attach("t", "").is_ok());
    drop(b);
}

/// At the limit, a connection that holds no fid (connected, never attached) gives its
/// slot to a new one instead of locking it out.
#[test]
fn a_connection_holding_nothing_gives_its_slot_up() {
    let (tree, _) = Counting::sample();
    let s = serve(tree, ServerConfig::default().max_clients(2), Via::Tcp);
    let a = s.client();
    let _ra = a.attach("a", "").unwrap();
    let idle = s.client();
    let c = s.client();
    assert!(c.attach("c", "").is_ok(), "the idle connection made room");
    assert!(
        idle.attach("idle", "").is_err(),
        "the idle connection was closed"
    );
    assert_eq!(s.server.stats().refused_clients, 0);
}

#[test]
fn max_msize_caps_the_negotiation() {
    let (tree, _) = Counting::sample();
    let s = serve(tree, ServerConfig::default().max_msize(16384), Via::Tcp);
    let client = s.client_with(ClientConfig {
        msize: 1 << 20,
        ..ClientConfig::default()
    });
    assert_eq!(client.msize(), 16384);
    // A client asking below the protocol floor is refused.
    let addr = s.listener.as_ref().unwrap().tcp_addr().unwrap();
    let err = nf_ninep_client::Client::connect_tcp_with(
        addr,
        ClientConfig {
            msize: 1024,
            ..ClientConfig::default()
        },
    )
    .unwrap_err();
    assert!(matches!(err, ClientError::VersionRefused { .. }), "{err}");
}
