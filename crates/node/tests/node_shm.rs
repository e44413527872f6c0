//! 9P over the shared-memory byte channel, with the real client: set-up through the shm
//! socket, large transfers through rings smaller than a message, blocked reads and
//! flushes, and both ways of ending (client leaves, server stops).

mod support;

use std::time::Duration;

use nf_ninep::{LOpenFlags, Rmessage, Tread};
use nf_ninep_client::{Client, ClientConfig};
use support::Node;

fn shm_root(node: &Node) -> nf_ninep_client::Root {
    Client::connect_shm_with(node.shm_socket(), ClientConfig::default())
        .expect("shm connect")
        .attach("root", "")
        .expect("attach")
}

#[test]
fn files_move_through_shared_memory() {
    let node = Node::start();
    let root = shm_root(&node);
    assert!(root.read_file("/status").unwrap().starts_with(b"host "));
    // 3 MiB through 1 MiB rings in 1 MiB messages, both ways.
    let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 253) as u8).collect();
    root.write_file("/fs/big", &big).unwrap();
    assert_eq!(std::fs::read(node.export.join("big")).unwrap(), big);
    assert_eq!(root.read_file("/fs/big").unwrap(), big);
    assert_eq!(root.client().msize(), nf_ninep::DEFAULT_MAX_MSIZE);
}

#[test]
fn a_blocked_read_over_shm_is_woken_and_flushable() {
    let node = Node::start();
    let root = shm_root(&node);
    let log = root
        .open("/log", LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
        .unwrap();
    let _ = log.read_chunk(0, 4096);
    let f = root.open("/log", LOpenFlags::RDONLY).unwrap();
    node.root().write_file("/log", b"seen\n").unwrap();
    let read = |fid| Tread {
        fid,
        offset: 0,
        count: 4096,
    };
    let client = root.client().clone();
    assert!(
        matches!(client.call(read(f.number())).unwrap(), Rmessage::Rread(r) if r.data.as_slice().ends_with(b"seen\n"))
    );
    let call = client.start(read(f.number())).unwrap();
    assert!(call
        .wait_timeout(Duration::from_millis(200))
        .unwrap()
        .is_none());
    node.root().write_file("/log", b"woken\n").unwrap();
    assert!(matches!(call.wait().unwrap(), Rmessage::Rread(r) if r.data.as_slice() == b"woken\n"));
    let call = client.start(read(f.number())).unwrap();
    assert!(call
        .wait_timeout(Duration::from_millis(200))
        .unwrap()
        .is_none());
    assert!(call.flush().unwrap().is_none());
}

#[test]
fn a_leaving_client_releases_everything_and_a_stopping_server_ends_clients() {
    let mut node = Node::start();
    {
        let root = shm_root(&node);
        let _open = root.open("/status", LOpenFlags::RDONLY).unwrap();
        assert_eq!(node.daemon().server().stats().clients, 1);
    }
    support::eventually("the shm client to be gone", || {
        node.daemon().server().stats().clients == 0
    });
    let root = shm_root(&node);
    node.restart_with(Default::default());
    // The old connection is gone: a call fails instead of hanging.
    assert!(root.read_file("/status").is_err());
    // The new server answers on the same socket.
    assert!(shm_root(&node).read_file("/status").is_ok());
}
