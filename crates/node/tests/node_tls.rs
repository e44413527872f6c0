//! Remote access: TLS with client certificates. Unauthenticated or untrusted clients are
//! refused, a user may attach only as its certificate's name, unknown users are refused,
//! a trusted gateway attaches for users (never root) and any other gateway not at all,
//! and a node in one network namespace serves another over TLS (pipes between nodes).

mod support;

use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use nf_link::tls::{client_config, TlsFiles, TlsTransport, GATEWAY_UNIT};
use nf_ninep::errno::EACCES;
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, ClientConfig};
use nf_node::{Daemon, NodeConfig, ServeConfig, ServeError};
use support::certs::Ca;

struct Pki {
    dir: tempfile::TempDir,
    ca: Ca,
    server: TlsFiles,
    root: TlsFiles,
    ghost: TlsFiles,
    stranger: TlsFiles,
}

/// A CA, a server certificate for `sans`, client certificates for `root` (an account
/// everywhere) and `nf-no-such-user`, and a `root` certificate from another CA.
fn pki(sans: &[&str]) -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "cluster");
    let other = Ca::new(dir.path(), "stranger");
    let server = ca.issue("server", Some("node"), sans, &ca.ca_file());
    let root = ca.issue("root", Some("root"), &[], &ca.ca_file());
    let ghost = ca.issue("ghost", Some("nf-no-such-user"), &[], &ca.ca_file());
    let stranger = other.issue("stranger", Some("root"), &[], &ca.ca_file());
    Pki {
        dir,
        ca,
        server,
        root,
        ghost,
        stranger,
    }
}

fn start(tls: Option<TlsFiles>, addr: SocketAddr) -> Result<Daemon, ServeError> {
    start_with(tls, addr, NodeConfig::default())
}

fn start_with(
    tls: Option<TlsFiles>,
    addr: SocketAddr,
    node: NodeConfig,
) -> Result<Daemon, ServeError> {
    Daemon::start(&ServeConfig {
        unix: None,
        shm: None,
        tcp: vec![addr],
        tls,
        node,
        limits: Default::default(),
        ..ServeConfig::default()
    })
}

fn tls_client(addr: SocketAddr, host: &str, files: &TlsFiles) -> Result<Client, String> {
    let sock = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    let config = client_config(files).map_err(|e| e.to_string())?;
    let t = TlsTransport::connect(sock, config, host).map_err(|e| e.to_string())?;
    Client::with_transport(t, ClientConfig::default()).map_err(|e| e.to_string())
}

#[test]
fn a_user_attaches_only_as_its_certificate_says() {
    let pki = pki(&["localhost", "127.0.0.1"]);
    let d = start(Some(pki.server.clone()), "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = d.tcp_addr().unwrap();
    let c = tls_client(addr, "127.0.0.1", &pki.root).unwrap();
    let root = c.attach("root", "").unwrap();
    assert!(root.read_file("/status").unwrap().starts_with(b"host "));
    assert!(c.attach("", "").is_ok(), "empty uname: as authenticated");
    assert!(c.attach_as("root", "", 0).is_ok(), "root's uid");
    // Another name, or another uid, is refused.
    assert_eq!(c.attach("daemon", "").unwrap_err().errno(), Some(EACCES));
    assert_eq!(
        c.attach_as("root", "", 4242).unwrap_err().errno(),
        Some(EACCES)
    );
    // A certificate for a user with no account here is refused.
    let g = tls_client(addr, "localhost", &pki.ghost).unwrap();
    assert_eq!(
        g.attach("nf-no-such-user", "").unwrap_err().errno(),
        Some(EACCES)
    );
    assert!(d.shutdown(Duration::from_secs(5)));
}

#[test]
fn a_trusted_gateway_attaches_for_users_but_not_as_root_and_others_not_at_all() {
    let user = nf_testkit::users::test_account().expect("a second account");
    let pki = pki(&["127.0.0.1"]);
    let ca_file = pki.ca.ca_file();
    let gateway = |cn| {
        pki.ca
            .issue_in_unit(cn, Some(cn), Some(GATEWAY_UNIT), &[], &ca_file)
    };
    let (gw1, gw2) = (gateway("gw1"), gateway("gw2"));
    let posing = pki.ca.issue("posing", Some("gateway:gw1"), &[], &ca_file);
    let node = NodeConfig {
        trusted_gateways: vec!["gw1".into()],
        ..NodeConfig::default()
    };
    let d = start_with(
        Some(pki.server.clone()),
        "127.0.0.1:0".parse().unwrap(),
        node,
    )
    .unwrap();
    let addr = d.tcp_addr().unwrap();

    let c = tls_client(addr, "127.0.0.1", &gw1).unwrap();
    assert!(c.attach(&user.name, "").is_ok(), "for a user");
    assert!(c.attach_as("", "", user.uid).is_ok(), "for a user, by uid");
    assert_eq!(c.attach("root", "").unwrap_err().errno(), Some(EACCES));
    assert_eq!(c.attach_as("", "", 0).unwrap_err().errno(), Some(EACCES));
    assert_eq!(
        c.attach("", "").unwrap_err().errno(),
        Some(EACCES),
        "nobody"
    );

    let c = tls_client(addr, "127.0.0.1", &gw2).unwrap();
    assert_eq!(
        c.attach(&user.name, "").unwrap_err().errno(),
        Some(EACCES),
        "a gateway this node does not trust"
    );
    // A user certificate named like a gateway names nobody: refused at the handshake.
    let posing = tls_client(addr, "127.0.0.1", &posing)
        .and_then(|c| c.attach(&user.name, "").map_err(|e| e.to_string()));
    assert!(posing.is_err());
    assert!(d.shutdown(Duration::from_secs(5)));
}

#[test]
fn untrusted_missing_or_plain_clients_are_refused() {
    let pki = pki(&["127.0.0.1"]);
    let d = start(Some(pki.server.clone()), "127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = d.tcp_addr().unwrap();
    // A certificate from a CA the server does not trust.
    assert!(tls_client(addr, "127.0.0.1", &pki.stranger).is_err());
    // Plain 9P to the TLS port gets no 9P answer.
    let plain = Client::connect_tcp(addr);
    assert!(plain.is_err(), "plain 9P must not get through");
    // The client checks the server too: a name the certificate does not carry.
    assert!(tls_client(addr, "node.example", &pki.root).is_err());
    assert_eq!(d.server().stats().clients, 0);
    assert!(d.shutdown(Duration::from_secs(5)));
}

#[test]
fn remote_listening_needs_tls_and_works_across_hosts() {
    let net = nf_testkit::Netns::create(2).expect("network namespaces (needs root and ip)");
    let server_ip = net.addr(0);
    let remote: SocketAddr = (server_ip, 5640).into();
    let pki = pki(&[&server_ip.to_string()]);

    // Without TLS the server refuses to listen on a non-loopback address.
    let refused = net.within(0, || start(None, remote).map(|_| ())).unwrap();
    assert!(matches!(refused, Err(ServeError::RemoteWithoutAuth { .. })));

    let dir = pki.dir.path().to_path_buf();
    let socket = dir.join("node0.sock");
    let server_files = pki.server.clone();
    let daemon = net
        .within(0, || {
            Daemon::start(&ServeConfig {
                unix: Some(socket.clone()),
                shm: None,
                tcp: vec![remote],
                tls: Some(server_files),
                node: NodeConfig::default(),
                limits: Default::default(),
                ..ServeConfig::default()
            })
        })
        .unwrap()
        .unwrap();

    // A local reader on node 0 waits on a pipe…
    let local = Client::connect_unix(&socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    local
        .create("/pipe/between", LOpenFlags::RDONLY, 0o644)
        .unwrap()
        .close()
        .unwrap();
    let reader = Arc::new(local.open("/pipe/between", LOpenFlags::RDONLY).unwrap());
    let r = Arc::clone(&reader);
    let got = std::thread::spawn(move || r.read_chunk(0, 100).unwrap());

    // …and a client on node 1 writes to it over TLS.
    let root_files = pki.root.clone();
    let status = net
        .within(1, move || {
            let c = tls_client(remote, &server_ip.to_string(), &root_files).unwrap();
            let root = c.attach("root", "").unwrap();
            let mut w = root.open("/pipe/between", LOpenFlags::WRONLY).unwrap();
            w.write_all(b"from node 1").unwrap();
            w.close().unwrap();
            root.read_file("/status").unwrap()
        })
        .unwrap();
    assert!(status.starts_with(b"host "));
    assert_eq!(got.join().unwrap(), b"from node 1");
    drop(reader);
    drop(local);
    assert!(daemon.shutdown(Duration::from_secs(5)));
}
