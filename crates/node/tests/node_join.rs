//! Registering with a gateway (`nf serve --join`) against a fake gateway: a TLS 9P
//! server whose `/join` records what each open wrote and who wrote it. The node
//! registers at once and again every interval, as itself, with the address the
//! gateway should dial; what it needs is checked at start-up; a gateway that never
//! answers holds up neither start-up nor shutdown.

mod support;

use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nf_link::addr::Addr;
use nf_link::tls::{server_config, TlsFiles, GATEWAY_UNIT, NODE_UNIT};
use nf_ninep::LOpenFlags;
use nf_ninep_client::Client;
use nf_ninep_server::{Ctx, FsResult, Server};
use nf_ninep_trees::synthetic::{FileNode, OpenFile};
use nf_ninep_trees::SyntheticTree;
use nf_node::join::{JoinConfig, JoinError};
use nf_node::listen::TlsListener;
use nf_node::{Daemon, ServeConfig, ServeError};
use support::certs::Ca;

/// One registration as the gateway saw it: the peer's identity and the bytes written.
type Seen = (Option<String>, String);

/// The gateway's `/join`: each open reports what was written through it when clunked.
struct JoinFile(Sender<Seen>);

struct JoinOpen {
    report: Sender<Seen>,
    seen: Mutex<(Option<String>, Vec<u8>)>,
}

impl FileNode for JoinFile {
    fn mode(&self) -> u32 {
        0o222
    }

    fn open(&self, _: &Ctx, _: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        Ok(Box::new(JoinOpen {
            report: self.0.clone(),
            seen: Mutex::default(),
        }))
    }
}

impl OpenFile for JoinOpen {
    fn write(&self, ctx: &Ctx, _: u64, data: &[u8]) -> FsResult<u32> {
        let mut seen = self.seen.lock().unwrap();
        seen.0 = ctx.user().map(str::to_string);
        seen.1.extend_from_slice(data);
        Ok(data.len() as u32)
    }
}

impl Drop for JoinOpen {
    fn drop(&mut self) {
        let (user, bytes) = std::mem::take(&mut *self.seen.lock().unwrap());
        let _ = self
            .report
            .send((user, String::from_utf8_lossy(&bytes).into()));
    }
}

struct Pki {
    _dir: tempfile::TempDir,
    dir: PathBuf,
    gateway: TlsFiles,
    node: TlsFiles,
    user: TlsFiles,
}

fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let ca = Ca::new(dir.path(), "cluster");
    let sans = ["localhost", "127.0.0.1"];
    let issue = |file, cn, unit| ca.issue_in_unit(file, Some(cn), unit, &sans, &ca.ca_file());
    Pki {
        gateway: issue("gw", "gw1", Some(GATEWAY_UNIT)),
        node: issue("n1", "n1", Some(NODE_UNIT)),
        user: issue("ann", "ann", None),
        dir: dir.path().to_path_buf(),
        _dir: dir,
    }
}

/// A fake gateway on loopback: its address and the registrations it sees.
fn gateway(files: &TlsFiles) -> (TlsListener, Receiver<Seen>) {
    let (tx, rx) = mpsc::channel();
    let tree = SyntheticTree::new();
    tree.add_file("/join", JoinFile(tx)).unwrap();
    let listener = TlsListener::start(
        Server::new(tree),
        "127.0.0.1:0".parse().unwrap(),
        server_config(files).unwrap(),
    )
    .unwrap();
    (listener, rx)
}

fn join_config(gateway: SocketAddr) -> JoinConfig {
    JoinConfig {
        interval: Duration::from_millis(100),
        ..JoinConfig::new(Addr::Tls(gateway.to_string()))
    }
}

fn serve(
    pki: &Pki,
    tls: Option<TlsFiles>,
    tcp: bool,
    join: JoinConfig,
) -> Result<Daemon, ServeError> {
    Daemon::start(&ServeConfig {
        unix: Some(pki.dir.join("nf.sock")),
        tcp: if tcp {
            vec!["127.0.0.1:0".parse().unwrap()]
        } else {
            Vec::new()
        },
        tls,
        join: Some(join),
        ..ServeConfig::default()
    })
}

fn shuts_down_promptly(daemon: Daemon) {
    let t = Instant::now();
    assert!(daemon.shutdown(Duration::from_secs(5)));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

#[test]
fn a_node_registers_at_once_and_again_as_itself() {
    let pki = pki();
    let (gw, seen) = gateway(&pki.gateway);
    let daemon = serve(&pki, Some(pki.node.clone()), true, join_config(gw.addr())).unwrap();
    let port = daemon.tcp_addr().unwrap().port();
    for n in 1..=2 {
        let (user, line) = seen
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("registration {n} arrives"));
        assert_eq!(user.as_deref(), Some("node:n1"), "the node's certificate");
        assert_eq!(line, format!("tls:n1:{port}\n"));
    }
    shuts_down_promptly(daemon);
    // Whatever was in flight has ended; then nothing more comes.
    std::thread::sleep(Duration::from_millis(300));
    while seen.try_recv().is_ok() {}
    std::thread::sleep(Duration::from_millis(300));
    assert!(seen.try_recv().is_err(), "no registration after shutdown");
}

#[test]
fn join_as_names_the_address_to_dial_and_needs_no_listener() {
    let pki = pki();
    let (gw, seen) = gateway(&pki.gateway);
    let join = JoinConfig {
        advertise: Some(Addr::Tls("node7.example:5640".into())),
        ..join_config(gw.addr())
    };
    let daemon = serve(&pki, Some(pki.node.clone()), false, join).unwrap();
    let (_, line) = seen.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(line, "tls:node7.example:5640\n");
    shuts_down_promptly(daemon);
}

#[test]
fn what_joining_needs_is_checked_at_start_up() {
    let pki = pki();
    let gw: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let refused = |tls: Option<&TlsFiles>, tcp, join| match serve(&pki, tls.cloned(), tcp, join) {
        Err(ServeError::Join(e)) => e,
        other => panic!("expected a join error, got {other:?}"),
    };
    let e = refused(None, false, join_config(gw));
    assert!(matches!(e, JoinError::NoCertificate), "{e}");
    let e = refused(Some(&pki.user), true, join_config(gw));
    assert!(
        matches!(e, JoinError::NotNodeCertificate { ref who, .. } if who == "ann"),
        "{e}"
    );
    assert!(e.to_string().contains("nf cert node"), "{e}");
    let e = refused(Some(&pki.gateway), true, join_config(gw));
    assert!(
        matches!(e, JoinError::NotNodeCertificate { ref who, .. } if who == "gateway:gw1"),
        "{e}"
    );
    let plain = JoinConfig::new(Addr::Tcp(gw.to_string()));
    let e = refused(Some(&pki.node), true, plain);
    assert!(matches!(e, JoinError::NotTls { flag: "--join", .. }), "{e}");
    let e = refused(Some(&pki.node), false, join_config(gw));
    assert!(matches!(e, JoinError::NoListener), "{e}");
}

#[test]
fn a_gateway_that_never_answers_holds_up_nothing() {
    let pki = pki();
    // Connections are queued by the kernel and never accepted: the handshake hangs.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let t = Instant::now();
    let join = JoinConfig {
        timeout: Duration::from_secs(30),
        ..join_config(silent.local_addr().unwrap())
    };
    let daemon = serve(&pki, Some(pki.node.clone()), true, join).unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "start-up waited");
    std::thread::sleep(Duration::from_millis(200));
    let client = Client::connect_unix(pki.dir.join("nf.sock")).unwrap();
    let status = client.attach("", "").unwrap().read_file("/status").unwrap();
    assert!(status.starts_with(b"host "), "the node serves meanwhile");
    drop(client);
    shuts_down_promptly(daemon);
}
