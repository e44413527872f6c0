//! Listeners: loopback by default, unix sockets that replace only stale sockets,
//! stopping that really stops.

use std::os::unix::net::{UnixListener, UnixStream};

use nf_ninep_client::Client;
use nf_ninep_server::{Server, ServerError};
use nf_ninep_trees::synthetic::SyntheticTree;

#[test]
fn loopback_listener_binds_127_0_0_1() {
    let server = Server::new(SyntheticTree::new());
    let l = server.listen_tcp_loopback(0).unwrap();
    let addr = l.tcp_addr().unwrap();
    assert!(addr.ip().is_loopback());
    assert!(l.addr().to_string().starts_with("tcp:127.0.0.1:"));
    Client::connect_tcp(addr).unwrap().attach("t", "").unwrap();
    l.stop();
    assert!(
        Client::connect_tcp(addr).is_err(),
        "stopped listener still accepts"
    );
    server.shutdown(nf_testkit::ninep::LIMIT);
}

#[test]
fn unix_sockets_replace_only_stale_sockets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("9p.sock");
    // A stale socket file (its listener is gone) is replaced.
    drop(UnixListener::bind(&path).unwrap());
    assert!(path.exists());
    let server = Server::new(SyntheticTree::new());
    let l = server.listen_unix(&path).unwrap();
    // A live one is not.
    let again = server.listen_unix(&path).unwrap_err();
    assert!(matches!(again, ServerError::SocketInUse { .. }), "{again}");
    assert!(again.to_string().contains("in use"), "{again}");
    Client::connect_unix(&path)
        .unwrap()
        .attach("t", "")
        .unwrap();
    l.stop();
    assert!(!path.exists(), "socket file removed on stop");
    assert!(UnixStream::connect(&path).is_err());
    // A file that is not a socket is never removed.
    std::fs::write(&path, "precious").unwrap();
    let err = server.listen_unix(&path).unwrap_err();
    assert!(matches!(err, ServerError::BindUnix { .. }), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), b"precious");
    server.shutdown(nf_testkit::ninep::LIMIT);
}

/// A listener bound inside a network namespace, stopped from a thread outside it (where
/// its address does not exist): stopping must neither hang nor leave it accepting.
#[test]
fn listener_inside_a_namespace_stops_from_outside() {
    let net = nf_testkit::Netns::create(2).expect("network namespaces (needs root and ip)");
    let server = Server::new(SyntheticTree::new());
    let bind = std::net::SocketAddr::new(net.addr(0), 0);
    let listener = net.within(0, || server.listen_tcp(bind).unwrap()).unwrap();
    let addr = listener.tcp_addr().unwrap();
    let connect = || net.within(1, || Client::connect_tcp(addr).map(|c| c.attach("t", "")));
    assert!(
        matches!(connect().unwrap(), Ok(Ok(_))),
        "host 1 reaches the listener on host 0"
    );
    let stopper = std::thread::spawn(move || listener.stop());
    let deadline = std::time::Instant::now() + nf_testkit::ninep::LIMIT;
    while !stopper.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "stopping the listener hangs"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    stopper.join().unwrap();
    // Not even the tcp handshake: nothing listens there any more.
    let raw = net
        .within(1, || {
            std::net::TcpStream::connect_timeout(&addr, nf_testkit::ninep::LIMIT)
        })
        .unwrap();
    assert!(raw.is_err(), "a stopped listener still accepts connections");
    server.shutdown(nf_testkit::ninep::LIMIT);
}
