//! The shared-memory byte channel as a 9P transport, with real memfd rings and a real
//! set-up socket: bytes both ways, the offering side knows who joined, a socket that
//! offers nothing is given up on, and a close wakes the other side.

use std::os::unix::net::UnixListener;
use std::thread;
use std::time::{Duration, Instant};

use nf_link::shm;
use nf_link::Transport;

/// A listener on a fresh socket in a temporary directory, and the socket's path.
fn socket() -> (tempfile::TempDir, UnixListener, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nf.sock.shm");
    let listener = UnixListener::bind(&path).unwrap();
    (dir, listener, path)
}

/// Reads exactly `n` bytes.
fn recv_exact(t: &dyn Transport, n: usize) -> Vec<u8> {
    let mut out = vec![0u8; n];
    let mut got = 0;
    while got < n {
        let k = t.recv(&mut out[got..]).unwrap();
        assert_ne!(k, 0, "closed after {got} of {n} bytes");
        got += k;
    }
    out
}

#[test]
fn bytes_cross_both_ways_and_the_server_side_knows_the_joiner() {
    let (_dir, listener, path) = socket();
    let server = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        // Rings of 4 KiB: the 64 KiB message below crosses them many times over.
        let t = shm::offer(sock, 4096).unwrap();
        let request = recv_exact(&t, 64 << 10);
        t.send(&request.iter().rev().copied().collect::<Vec<_>>())
            .unwrap();
        (t.peer_uid(), t.peer())
    });
    let client = shm::join(&path, Duration::from_secs(10)).unwrap();
    let request: Vec<u8> = (0..64u32 << 10).map(|i| (i % 251) as u8).collect();
    client.send(&request).unwrap();
    let reply = recv_exact(&client, request.len());
    assert!(reply.iter().rev().eq(request.iter()));
    let (uid, peer) = server.join().unwrap();
    let me = rustix::process::geteuid().as_raw();
    assert_eq!(uid, Some(me), "the joiner's uid, from SO_PEERCRED");
    assert!(peer.contains(&format!("uid {me}")), "{peer}");
    // The joining side learns nobody's credentials through the channel.
    assert_eq!(client.peer_uid(), None);
}

#[test]
fn a_socket_that_offers_no_channel_is_given_up_on() {
    let (_dir, listener, path) = socket();
    // Accepts and holds the connection, but offers nothing (a plain 9P socket).
    let held = thread::spawn(move || listener.accept().map(|(s, _)| s));
    let start = Instant::now();
    let e = shm::join(&path, Duration::from_millis(200)).expect_err("no offer came");
    assert!(
        matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
        "{e}"
    );
    // Generous: the wait is bounded by the limit, not by the peer.
    assert!(start.elapsed() < Duration::from_secs(5));
    drop(held.join().unwrap());
}

#[test]
fn closing_one_side_ends_a_blocked_receive_on_the_other() {
    let (_dir, listener, path) = socket();
    let server = thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let t = shm::offer(sock, shm::DEFAULT_CAPACITY).unwrap();
        let mut buf = [0u8; 16];
        // Blocks until the client closes: end of stream.
        t.recv(&mut buf).unwrap()
    });
    let client = shm::join(&path, Duration::from_secs(10)).unwrap();
    client.close();
    assert_eq!(server.join().unwrap(), 0);
}
