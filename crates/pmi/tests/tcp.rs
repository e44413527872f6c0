//! The PMI server over TCP on loopback: the same protocol as over a unix socket, and
//! strangers (garbage, wrong secrets, silence) refused without disturbing the job.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use nf_pmi::{Client, JobEnv, PmiAddr, PmiError, Server, MAX_HELLO_LEN};

/// Every exchange here takes milliseconds; this only keeps a broken server from hanging.
const BOUND: Duration = Duration::from_secs(20);

struct Job {
    server: Server,
    _events: mpsc::Receiver<nf_pmi::ServerEvent>,
    id: String,
    size: usize,
}

impl Job {
    fn new(size: usize) -> Job {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let id = format!(
            "tcp{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, events) = mpsc::channel();
        let server = Server::start_tcp("127.0.0.1:0".parse().unwrap(), &id, size, tx)
            .expect("start a TCP PMI server on loopback");
        Job {
            server,
            _events: events,
            id,
            size,
        }
    }

    fn sock(&self) -> SocketAddr {
        match self.server.addr() {
            PmiAddr::Tcp(sa) => *sa,
            other => panic!("a TCP server has a TCP address, got {other}"),
        }
    }

    fn env(&self, rank: usize) -> JobEnv {
        JobEnv {
            rank,
            size: self.size,
            local_rank: rank,
            local_size: self.size,
            job_id: self.id.clone(),
            pmi_addr: self.server.addr().clone(),
            secret: self.server.secret().map(str::to_owned),
            host: None,
            timeout: BOUND,
        }
    }

    /// A raw connection, for hand-made lines.
    fn raw(&self) -> (TcpStream, BufReader<TcpStream>) {
        let s = TcpStream::connect(self.sock()).expect("connect raw");
        s.set_read_timeout(Some(BOUND)).unwrap();
        let r = BufReader::new(s.try_clone().unwrap());
        (s, r)
    }

    /// Waits until the server has refused `n` connections in all.
    fn wait_refused(&self, n: usize) {
        let start = Instant::now();
        while self.server.refused() < n {
            assert!(
                start.elapsed() < BOUND,
                "refused {} of {n}",
                self.server.refused()
            );
            thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Reads what the server says before it closes: one error line, then the end.
fn refused_and_closed(r: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    r.read_line(&mut line).expect("an answer");
    let v: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?} is not JSON: {e}"));
    assert_eq!(v["status"], "error", "{line}");
    let mut rest = Vec::new();
    assert_eq!(
        r.read_to_end(&mut rest).expect("read to the end"),
        0,
        "closed"
    );
    v["message"].as_str().unwrap().to_owned()
}

#[test]
fn four_ranks_wire_up_over_tcp() {
    let job = Job::new(4);
    let addr = job.server.addr().to_string();
    assert!(addr.starts_with("tcp:127.0.0.1:"), "{addr}");
    assert!(job.server.dir().is_none());
    assert_eq!(job.server.secret().map(str::len), Some(32));
    thread::scope(|s| {
        for rank in 0..4 {
            let mut c = Client::connect(job.env(rank)).expect("connect over TCP");
            s.spawn(move || {
                for epoch in 0..3 {
                    c.put(&format!("{epoch}/{rank}"), &format!("v{epoch}.{rank}"))
                        .unwrap();
                    c.fence().unwrap();
                    for peer in 0..4 {
                        assert_eq!(
                            c.get(&format!("{epoch}/{peer}")).unwrap(),
                            format!("v{epoch}.{peer}")
                        );
                    }
                }
                c.finalize().unwrap();
            });
        }
    });
    assert_eq!(job.server.refused(), 0);
}

#[test]
fn a_wrong_or_missing_secret_is_refused_and_the_job_goes_on() {
    let job = Job::new(2);
    let mut first = Client::connect(job.env(0)).unwrap();
    first.put("k", "v").unwrap();

    let mut wrong = job.env(1);
    wrong.secret = Some("0".repeat(32));
    let err = Client::connect(wrong).unwrap_err();
    assert!(
        matches!(err, PmiError::Refused { op: "hello", .. }) && err.to_string().contains("secret"),
        "{err}"
    );
    let mut missing = job.env(1);
    missing.secret = None;
    assert!(Client::connect(missing).is_err());
    job.wait_refused(2);

    // The right secret with the wrong job is refused too, and says nothing of the job.
    let (mut w, mut r) = job.raw();
    writeln!(
        w,
        r#"{{"op":"hello","rank":1,"size":2,"job_id":"other","secret":"{}"}}"#,
        job.server.secret().unwrap()
    )
    .unwrap();
    let msg = refused_and_closed(&mut r);
    assert!(msg.contains("other"), "{msg}");
    job.wait_refused(3);

    // Rank 1 was never taken by the failed hellos: the real one joins and fences.
    let mut second = Client::connect(job.env(1)).unwrap();
    thread::scope(|s| {
        s.spawn(|| first.fence().unwrap());
        second.fence().unwrap();
    });
    assert_eq!(second.get("k").unwrap(), "v");
}

#[test]
fn garbage_and_early_requests_are_refused_and_closed() {
    let job = Job::new(1);
    let cases: [&[u8]; 4] = [
        b"GET / HTTP/1.0\r\n\r\n",
        b"\x00\x01\x02\xff\n",
        b"{\"op\":\"put\",\"key\":\"k\",\"value\":\"v\"}\n",
        b"{\"op\":\"hello\",\"rank\":0,\"size\":1,\"job_id\":\"x\"}\n",
    ];
    for (i, bytes) in cases.iter().enumerate() {
        let (mut w, mut r) = job.raw();
        w.write_all(bytes).unwrap();
        let msg = refused_and_closed(&mut r);
        assert!(msg.contains("refused"), "{msg}");
        job.wait_refused(i + 1);
    }
    let mut c = Client::connect(job.env(0)).unwrap();
    c.put("k", "v").unwrap();
    c.fence().unwrap();
    assert_eq!(c.get("k").unwrap(), "v");
}

#[test]
fn an_oversized_or_truncated_first_line_is_refused() {
    let job = Job::new(1);
    let (mut w, mut r) = job.raw();
    // Far more than a hello; the server stops reading after MAX_HELLO_LEN + 1 bytes.
    let _ = w.write_all(&vec![b'x'; 16 * MAX_HELLO_LEN]);
    let msg = refused_and_closed(&mut r);
    assert!(msg.contains("longer than"), "{msg}");

    let (mut w, r) = job.raw();
    w.write_all(b"{\"op\":\"hel").unwrap();
    w.shutdown(std::net::Shutdown::Write).unwrap();
    drop(r);
    job.wait_refused(2);
}

#[test]
fn connecting_to_a_closed_port_names_the_address() {
    let job = Job::new(1);
    let mut env = job.env(0);
    // A port that was free a moment ago: bind, note, close.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    env.pmi_addr = PmiAddr::Tcp(SocketAddr::from(([127, 0, 0, 1], port)));
    let err = Client::connect(env).unwrap_err();
    assert!(
        matches!(err, PmiError::Connect { .. }) && err.to_string().contains("tcp:127.0.0.1:"),
        "{err}"
    );
}
