//! The tcp fixture: endpoints on loopback; a raw socket that completes a hello as
//! rank 0 and then sends a broken frame header is the hostile rank.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use nf_transport::tcp::wire::{Hello, HELLO_LEN};
use nf_transport::tcp::{TcpConfig, TcpTransport};

use crate::cases::{Fixture, Job};

/// The tcp transport.
pub struct Tcp;

const COOKIE: u64 = 0x9f00_c0ff_ee00_0003;

fn config() -> TcpConfig {
    TcpConfig {
        cookie: COOKIE,
        max_payload: 16 * 1024,
        queue_limit: 16 * 1024,
        recv_limit: 128 * 1024,
        connect_timeout: Duration::from_secs(5),
        linger: Duration::from_secs(2),
        ..TcpConfig::default()
    }
}

/// Listens ranks `present` of a job of `n`, then connects them to each other, lower
/// ranks first (a rank's `connect` returns once the lower ones have dialled it).
fn job(n: usize, present: &[usize]) -> Job<TcpTransport> {
    let mut eps: Vec<Option<TcpTransport>> = (0..n)
        .map(|r| {
            present
                .contains(&r)
                .then(|| TcpTransport::listen(config(), r, n).unwrap())
        })
        .collect();
    let addrs: Vec<_> = eps
        .iter()
        .map(|e| e.as_ref().map(|e| e.local_addr()))
        .collect();
    for (r, ep) in eps.iter_mut().enumerate() {
        if let Some(ep) = ep {
            let mut table = addrs.clone();
            table[r] = None;
            ep.connect(&table).unwrap();
        }
    }
    Job {
        eps,
        keep: Box::new(None::<TcpStream>),
    }
}

impl Fixture for Tcp {
    type T = TcpTransport;

    fn job(n: usize) -> Job<TcpTransport> {
        job(n, &(0..n).collect::<Vec<_>>())
    }

    fn hostile_job() -> Job<TcpTransport> {
        job(3, &[1, 2])
    }

    /// Dials rank 2 as rank 0, exchanges hellos, then sends a frame header that fails
    /// its check byte.
    fn inject_bad(job: &mut Job<TcpTransport>) {
        let addr = job.ep(2).local_addr();
        let mut raw = TcpStream::connect(addr).unwrap();
        raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let hello = Hello {
            cookie: COOKIE,
            rank: 0,
            size: 3,
            max_payload: config().max_payload as u32,
        };
        raw.write_all(&hello.encode()).unwrap();
        let mut answer = [0u8; HELLO_LEN];
        raw.read_exact(&mut answer).unwrap();
        raw.write_all(&[0xA9, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        // Kept open: the transport, not the socket's end, must notice the frame.
        job.keep = Box::new(Some(raw));
    }

    fn crash(ep: TcpTransport) {
        ep.abort();
    }
}
