//! The server's limits, hit through the node tree: each answers with a clear error and
//! the server goes on serving.

mod support;

use nf_ninep::errno::{EAGAIN, EMFILE};
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, ClientConfig};
use nf_ninep_server::ServerConfig;
use std::time::Duration;
use support::Node;

#[test]
fn fid_limit_answers_emfile_and_says_what_to_do() {
    let node = Node::with_limits(ServerConfig::default().max_fids(8));
    let root = node.root();
    let mut held = Vec::new();
    let err = loop {
        match root.walk("/status") {
            Ok(f) => held.push(f),
            Err(e) => break e,
        }
        assert!(held.len() <= 8, "limit not enforced");
    };
    assert_eq!(err.errno(), Some(EMFILE));
    assert!(err.to_string().contains("fid limit"), "{err}");
    held.clear();
    assert!(
        root.read_file("/status").is_ok(),
        "usable again once fids are clunked"
    );
}

#[test]
fn client_limit_answers_eagain() {
    // Attached within the hour: neither connection is idle enough to give way.
    let limits = ServerConfig::default()
        .max_clients(2)
        .evict_idle_after(Duration::from_secs(3600));
    let node = Node::with_limits(limits);
    let _a = node.root();
    let _b = node.root();
    let err = Client::connect_unix(&node.socket).unwrap_err();
    assert_eq!(err.errno(), Some(EAGAIN), "{err}");
    assert!(err.to_string().contains("limit"), "{err}");
}

#[test]
fn in_flight_limit_answers_eagain() {
    let node = Node::with_limits(ServerConfig::default().max_in_flight(2));
    let root = node.root();
    root.create("/pipe/w", LOpenFlags::RDONLY, 0o644)
        .unwrap()
        .close()
        .unwrap();
    let r = root.open("/pipe/w", LOpenFlags::RDONLY).unwrap();
    let read = || nf_ninep::Tread {
        fid: r.number(),
        offset: 0,
        count: 10,
    };
    let c = root.client().clone();
    let _one = c.start(read()).unwrap();
    let _two = c.start(read()).unwrap();
    support::eventually("two reads in flight", || {
        node.daemon().server().stats().in_flight == 2
    });
    match c.call(read()).unwrap() {
        nf_ninep::Rmessage::Rlerror(e) => assert_eq!(e.ecode, EAGAIN),
        other => panic!("{other:?}"),
    }
}

#[test]
fn msize_is_capped_by_the_server() {
    let node = Node::with_limits(ServerConfig::default().max_msize(16384));
    let client = Client::connect_unix_with(
        &node.socket,
        ClientConfig {
            msize: 1 << 20,
            ..ClientConfig::default()
        },
    )
    .unwrap();
    assert_eq!(client.msize(), 16384);
    let root = client.attach("root", "").unwrap();
    let big = vec![1u8; 100_000];
    root.write_file("/fs/big", &big).unwrap();
    assert_eq!(root.read_file("/fs/big").unwrap(), big);
}
