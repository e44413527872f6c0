//! Connecting by address (`nf_ninep_client::connect`) against a real server: a unix
//! address attaches, an shm address whose socket offers no channel (a plain 9P socket)
//! is given up on as a time-out naming the offer, and a tls address without
//! certificate files says which flags to give.

use std::time::{Duration, Instant};

use nf_link::addr::Addr;
use nf_ninep_client::connect::{attach, connect, ConnectError, ConnectOptions};
use nf_ninep_client::ClientError;
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::PassthroughFs;
use nf_testkit::ninep::{serve, Via};

fn options(timeout: Duration) -> ConnectOptions {
    ConnectOptions::new(Some("t".into()), None, Some(timeout))
}

#[test]
fn a_unix_address_attaches_and_an_shm_one_on_a_plain_socket_times_out() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), "hello").unwrap();
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let path = served.unix_path();
    let root = attach(&Addr::Unix(path.clone()), &options(Duration::from_secs(10))).unwrap();
    assert_eq!(root.read_file("/f").unwrap(), b"hello");

    let start = Instant::now();
    let e = connect(&Addr::Shm(path), &options(Duration::from_millis(300)))
        .expect_err("a plain 9P socket offers no channel");
    assert!(
        matches!(
            e,
            ConnectError::Client(ClientError::TimedOut {
                what: "shared-memory channel offer",
                ..
            })
        ),
        "{e}"
    );
    // Generous bound: the wait is the limit's, not the server's.
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_tls_address_without_certificates_names_the_flags() {
    let e = connect(
        &Addr::Tls("127.0.0.1:1".into()),
        &options(Duration::from_secs(1)),
    )
    .expect_err("no certificate files");
    assert!(matches!(e, ConnectError::NoCertificate { .. }), "{e}");
    assert!(
        e.names_address() && e.to_string().contains("--cert FILE"),
        "{e}"
    );
}
