//! TLS with client certificates over real loopback tcp: the server side learns the user
//! its client certificate names (a node's and a gateway's told apart), bytes cross both
//! ways, and a client whose certificate another CA signed is refused at the handshake.

#[path = "../../node/tests/support/certs.rs"]
mod certs;

use std::net::{TcpListener, TcpStream};
use std::thread;

use certs::Ca;
use nf_link::tls::{client_config, server_config, TlsError, TlsFiles, TlsTransport, NODE_UNIT};
use nf_link::Transport;

/// Runs one handshake: the server accepts with `server`, the client connects with
/// `client`; the server side's transport or error, and the client's.
fn handshake(
    server: &TlsFiles,
    client: &TlsFiles,
) -> (
    Result<TlsTransport, TlsError>,
    Result<TlsTransport, TlsError>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let config = server_config(server).unwrap();
    let accepting = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        TlsTransport::accept(sock, config)
    });
    let sock = TcpStream::connect(addr).unwrap();
    let connected = TlsTransport::connect(sock, client_config(client).unwrap(), "127.0.0.1");
    if let Ok(c) = &connected {
        // A refused server-side handshake may still have let the client finish its own.
        c.close();
    }
    (accepting.join().unwrap(), connected)
}

#[test]
fn the_server_side_learns_who_the_client_certificate_names() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "cluster");
    let server = ca.issue("server", Some("node"), &["127.0.0.1"], &ca.ca_file());
    let ann = ca.issue("ann", Some("ann"), &[], &ca.ca_file());
    let node = ca.issue_in_unit("n1", Some("n1"), Some(NODE_UNIT), &[], &ca.ca_file());

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let config = server_config(&server).unwrap();
    let echo = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let t = TlsTransport::accept(sock, config).unwrap();
        let mut buf = [0u8; 5];
        let mut got = 0;
        while got < buf.len() {
            got += t.recv(&mut buf[got..]).unwrap();
        }
        t.send(&buf).unwrap();
        t.authenticated_user()
    });
    let sock = TcpStream::connect(addr).unwrap();
    let client = TlsTransport::connect(sock, client_config(&ann).unwrap(), "127.0.0.1").unwrap();
    client.send(b"hello").unwrap();
    let mut back = [0u8; 5];
    let mut got = 0;
    while got < back.len() {
        got += client.recv(&mut back[got..]).unwrap();
    }
    assert_eq!(&back, b"hello");
    assert_eq!(echo.join().unwrap().as_deref(), Some("ann"));
    // The client authenticated nobody: the server's name was checked, not handed up.
    assert_eq!(client.authenticated_user(), None);

    let (accepted, _) = handshake(&server, &node);
    assert_eq!(
        accepted.unwrap().authenticated_user().as_deref(),
        Some("node:n1")
    );
}

#[test]
fn a_client_certificate_from_another_ca_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "cluster");
    let other = Ca::new(dir.path(), "stranger");
    let server = ca.issue("server", Some("node"), &["127.0.0.1"], &ca.ca_file());
    let stranger = other.issue("stranger", Some("ann"), &[], &ca.ca_file());
    let (accepted, _) = handshake(&server, &stranger);
    let e = accepted.err().expect("refused");
    assert!(e.to_string().contains("TLS handshake"), "{e}");
}
