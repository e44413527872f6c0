//! TLS with client certificates over real loopback tcp: the server side learns the user
//! its client certificate names (a node's and a gateway's told apart), bytes cross both
//! ways, and a client whose certificate another CA signed is refused at the handshake.

#[path = "../../node/tests/support/certs.rs"]
mod certs;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

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

/// Copies `from` to `to` until either ends; while `hold` is set, passes only the first
/// `HALF` bytes that arrive (a record cut in two, as by a peer that stopped halfway)
/// and keeps the rest, sent once `hold` is cleared.
fn relay(from: TcpStream, mut to: TcpStream, hold: Arc<AtomicBool>) -> thread::JoinHandle<()> {
    const HALF: usize = 8;
    thread::spawn(move || {
        let mut from = from;
        from.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let (mut kept, mut passed) = (Vec::new(), 0);
        let mut buf = [0u8; 4096];
        loop {
            if !hold.load(Ordering::SeqCst) {
                to.write_all(&std::mem::take(&mut kept)).unwrap();
                passed = 0;
            }
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    continue
                }
                Err(_) => break,
            };
            let pass = if hold.load(Ordering::SeqCst) {
                (HALF - passed).min(n)
            } else {
                n
            };
            to.write_all(&buf[..pass]).unwrap();
            passed += pass;
            kept.extend_from_slice(&buf[pass..n]);
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    })
}

/// A caller that receives its own reply waits until the transport is readable with a
/// deadline, then receives. Half a record on the socket is not readable: `recv`
/// would block for the rest, past the caller's deadline (for ever if the peer never
/// sends it). Once the rest is in, it is.
#[test]
fn half_a_record_is_not_readable() {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "cluster");
    let server = ca.issue("server", Some("node"), &["127.0.0.1"], &ca.ca_file());
    let ann = ca.issue("ann", Some("ann"), &[], &ca.ca_file());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let config = server_config(&server).unwrap();
    let addr = listener.local_addr().unwrap();
    let (to_server, from_server) = std::sync::mpsc::channel::<Vec<u8>>();
    let serving = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let t = TlsTransport::accept(sock, config).unwrap();
        for bytes in from_server {
            t.send(&bytes).unwrap();
        }
        t.close();
    });
    let front = TcpListener::bind("127.0.0.1:0").unwrap();
    let client_sock = TcpStream::connect(front.local_addr().unwrap()).unwrap();
    let (inner, _) = front.accept().unwrap();
    let outer = TcpStream::connect(addr).unwrap();
    let hold = Arc::new(AtomicBool::new(false));
    let up = relay(
        inner.try_clone().unwrap(),
        outer.try_clone().unwrap(),
        Arc::default(),
    );
    let down = relay(outer, inner, Arc::clone(&hold));
    let client =
        TlsTransport::connect(client_sock, client_config(&ann).unwrap(), "127.0.0.1").unwrap();
    // Whatever the server sends after its handshake (session tickets) carries no data.
    assert!(!client
        .wait_readable(Some(Duration::from_millis(200)))
        .unwrap());
    hold.store(true, Ordering::SeqCst);
    to_server.send(b"hello".to_vec()).unwrap();
    assert!(
        !client
            .wait_readable(Some(Duration::from_millis(300)))
            .unwrap(),
        "half a record counted as readable"
    );
    hold.store(false, Ordering::SeqCst);
    assert!(client.wait_readable(None).unwrap());
    let mut got = [0u8; 5];
    let mut n = 0;
    while n < got.len() {
        n += client.recv(&mut got[n..]).unwrap();
    }
    assert_eq!(&got, b"hello");
    drop(to_server);
    serving.join().unwrap();
    client.close();
    up.join().unwrap();
    down.join().unwrap();
}
