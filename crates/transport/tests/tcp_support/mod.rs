//! Helpers shared by the tcp test binaries (`tcp.rs`, `tcp_handoff.rs`): a job of
//! connected endpoints on loopback, captured logs. Each binary uses a different subset, hence `allow(dead_code)`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use nf_transport::tcp::{TcpConfig, TcpTransport};
use nf_transport::{Messaging, TransportError};

pub const COOKIE: u64 = 0x9f00_c0ff_ee00_0001;

pub fn config() -> TcpConfig {
    TcpConfig {
        cookie: COOKIE,
        max_payload: 64 * 1024,
        connect_timeout: Duration::from_secs(5),
        hello_timeout: Duration::from_millis(300),
        linger: Duration::from_secs(2),
        ..TcpConfig::default()
    }
}

/// Listens `cfg.len()` endpoints, then connects them all to each other at once.
pub fn job(cfgs: Vec<TcpConfig>) -> Vec<TcpTransport> {
    let n = cfgs.len();
    let mut eps: Vec<_> = cfgs
        .into_iter()
        .enumerate()
        .map(|(r, c)| TcpTransport::listen(c, r, n).unwrap())
        .collect();
    let addrs: Vec<_> = eps.iter().map(|e| Some(e.local_addr())).collect();
    std::thread::scope(|s| {
        for ep in &mut eps {
            let mut table = addrs.clone();
            table[ep.rank()] = None;
            s.spawn(move || ep.connect(&table).unwrap());
        }
    });
    eps
}

/// Collects everything logged (warnings and up) by every thread of this process.
pub fn logs() -> String {
    static BUF: Mutex<Vec<u8>> = Mutex::new(Vec::new());
    static INIT: OnceLock<()> = OnceLock::new();
    struct W;
    impl Write for W {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            BUF.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    INIT.get_or_init(|| {
        let sub = tracing_subscriber::fmt()
            .with_writer(|| W)
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .finish();
        tracing::subscriber::set_global_default(sub).unwrap();
    });
    String::from_utf8_lossy(&BUF.lock().unwrap()).into_owned()
}

/// Waits until the log has a line containing every one of `parts`.
pub fn wait_for_log(parts: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = logs();
        if log.lines().any(|l| parts.iter().all(|p| l.contains(p))) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no log line with {parts:?} in:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Polls `ep` until it returns something other than `Ok(None)`, for at most 5 s.
pub fn poll_one(ep: &mut TcpTransport) -> Result<nf_transport::tcp::TcpPacket, TransportError> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(p) = ep.poll().transpose() {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "nothing arrived at rank {}",
            ep.rank()
        );
        std::thread::yield_now();
    }
}

/// Asserts that the other end closed `raw` (EOF or reset), within 5 s.
pub fn assert_closed_by_peer(raw: &mut TcpStream) {
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 256];
    loop {
        match raw.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return,
            Err(e) => panic!("connection not closed by the transport: {e}"),
        }
    }
}
