//! The PMI server and clients over a real unix socket, ranks as threads of this process.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use nf_pmi::{
    Client, JobEnv, PmiAddr, PmiError, Server, ServerEvent, MAX_KEY_LEN, MAX_LINE_LEN,
    MAX_VALUE_LEN,
};

/// A server for one test job.
struct Job {
    server: Server,
    events: Receiver<ServerEvent>,
    id: String,
    size: usize,
}

impl Job {
    fn new(size: usize) -> Job {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let id = format!(
            "test{}x{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let (tx, events) = mpsc::channel();
        let server =
            Server::start(&std::env::temp_dir(), &id, size, tx).expect("start a PMI server");
        Job {
            server,
            events,
            id,
            size,
        }
    }

    fn env(&self, rank: usize, timeout: Duration) -> JobEnv {
        JobEnv {
            rank,
            size: self.size,
            local_rank: rank,
            local_size: self.size,
            job_id: self.id.clone(),
            pmi_addr: self.server.addr().clone(),
            secret: None,
            host: None,
            timeout,
        }
    }

    fn client(&self, rank: usize) -> Client {
        Client::connect(self.env(rank, Duration::from_secs(20))).expect("connect")
    }

    /// A raw connection for sending hand-made lines.
    fn raw(&self) -> (UnixStream, BufReader<UnixStream>) {
        let PmiAddr::Unix(path) = self.server.addr() else {
            panic!("a unix server has a unix address");
        };
        let s = UnixStream::connect(path).expect("connect raw");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let r = BufReader::new(s.try_clone().unwrap());
        (s, r)
    }
}

fn read_response(r: &mut BufReader<UnixStream>) -> serde_json::Value {
    let mut line = String::new();
    r.read_line(&mut line).expect("a response line");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("response {line:?} is not JSON: {e}"))
}

#[test]
fn four_ranks_see_each_others_puts_after_each_fence() {
    let job = Job::new(4);
    thread::scope(|s| {
        for rank in 0..4 {
            let mut c = job.client(rank);
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
                assert_eq!(c.epoch(), 3);
                c.finalize().unwrap();
                c.finalize().unwrap();
                assert!(matches!(
                    c.get("0/0"),
                    Err(PmiError::Finalized { op: "get" })
                ));
            });
        }
    });
}

#[test]
fn missing_key_error_names_the_key() {
    let job = Job::new(1);
    let mut c = job.client(0);
    c.fence().unwrap();
    match c.get("no-such-key") {
        Err(e @ PmiError::KeyNotFound { .. }) => {
            assert!(e.to_string().contains("no-such-key"), "{e}")
        }
        other => panic!("expected KeyNotFound, got {other:?}"),
    }
    // The connection is still usable after an ordinary error.
    c.put("k", "v").unwrap();
    assert_eq!(c.get("k").unwrap(), "v");
}

#[test]
fn client_checks_sizes_before_sending() {
    let job = Job::new(1);
    let mut c = job.client(0);
    assert!(matches!(c.put("", "v"), Err(PmiError::BadKey { .. })));
    assert!(matches!(
        c.put(&"k".repeat(MAX_KEY_LEN + 1), "v"),
        Err(PmiError::BadKey { .. })
    ));
    let err = c.put("big", &"v".repeat(MAX_VALUE_LEN + 1)).unwrap_err();
    assert!(
        matches!(err, PmiError::ValueTooLong { .. }) && err.to_string().contains("big"),
        "{err}"
    );
    c.put(&"k".repeat(MAX_KEY_LEN), &"\u{1}".repeat(MAX_VALUE_LEN))
        .unwrap();
    assert_eq!(
        c.get(&"k".repeat(MAX_KEY_LEN)).unwrap().len(),
        MAX_VALUE_LEN
    );
}

#[test]
fn malformed_lines_get_error_responses_and_the_connection_survives() {
    let job = Job::new(1);
    let (mut w, mut r) = job.raw();
    for bad in [
        "not json",
        "{\"op\":\"launch_missiles\"}",
        "{\"op\":\"put\"}",
        "\u{0}\u{1}",
    ] {
        writeln!(w, "{bad}").unwrap();
        let resp = read_response(&mut r);
        assert_eq!(resp["status"], "error", "{bad:?} -> {resp}");
    }
    w.write_all(&[0xff, 0xfe, b'\n']).unwrap();
    assert_eq!(read_response(&mut r)["status"], "error");
    writeln!(w, r#"{{"op":"get","key":"k"}}"#).unwrap();
    let resp = read_response(&mut r);
    assert!(
        resp["message"].as_str().unwrap().contains("before hello"),
        "{resp}"
    );
    writeln!(
        w,
        r#"{{"op":"hello","rank":0,"size":1,"job_id":"{}"}}"#,
        job.id
    )
    .unwrap();
    assert_eq!(read_response(&mut r)["status"], "ok");
    writeln!(w, r#"{{"op":"get","key":"k"}}"#).unwrap();
    assert_eq!(
        read_response(&mut r),
        serde_json::json!({"status": "not_found", "key": "k"})
    );
}

#[test]
fn oversized_line_is_refused_and_the_connection_closed() {
    let job = Job::new(1);
    let (mut w, mut r) = job.raw();
    w.write_all(&vec![b'x'; MAX_LINE_LEN + 1]).unwrap();
    let resp = read_response(&mut r);
    assert_eq!(resp["status"], "error");
    assert!(
        resp["message"].as_str().unwrap().contains("longer than"),
        "{resp}"
    );
    let mut rest = Vec::new();
    assert_eq!(r.read_to_end(&mut rest).unwrap(), 0, "connection closed");
    // The server still serves others.
    job.client(0).put("k", "v").unwrap();
}

#[test]
fn hello_must_match_the_job() {
    let job = Job::new(2);
    let mut wrong_job = job.env(0, Duration::from_secs(5));
    wrong_job.job_id = "other".into();
    let err = Client::connect(wrong_job).unwrap_err();
    assert!(
        matches!(err, PmiError::Refused { op: "hello", .. }) && err.to_string().contains("other"),
        "{err}"
    );
    let mut wrong_size = job.env(0, Duration::from_secs(5));
    wrong_size.size = 3;
    assert!(Client::connect(wrong_size).is_err());
    let _first = job.client(1);
    let err = Client::connect(job.env(1, Duration::from_secs(5))).unwrap_err();
    assert!(err.to_string().contains("already connected"), "{err}");
}

#[test]
fn a_fence_that_never_completes_times_out() {
    let job = Job::new(2);
    let mut c = Client::connect(job.env(0, Duration::from_millis(300))).unwrap();
    let start = Instant::now();
    let err = c.fence().unwrap_err();
    assert!(
        matches!(err, PmiError::Timeout { op: "fence", .. }),
        "{err}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    assert!(err.to_string().contains("NF_PMI_TIMEOUT"), "{err}");
    // The connection's state is unknown now: later calls fail at once.
    assert!(matches!(
        c.put("k", "v"),
        Err(PmiError::Broken { op: "put", .. })
    ));
}

#[test]
fn a_fence_fails_at_once_when_a_rank_has_left() {
    let job = Job::new(3);
    let mut c0 = job.client(0);
    let mut c1 = job.client(1);
    let c2 = job.client(2);
    drop(c2);
    c1.finalize().unwrap();
    let start = Instant::now();
    let err = c0.fence().unwrap_err();
    assert!(
        matches!(err, PmiError::Refused { op: "fence", .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("rank 1 finalized")
            || err.to_string().contains("rank 2 disconnected"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn fence_epochs_must_agree() {
    let job = Job::new(2);
    let (mut w, mut r) = job.raw();
    writeln!(
        w,
        r#"{{"op":"hello","rank":0,"size":2,"job_id":"{}"}}"#,
        job.id
    )
    .unwrap();
    assert_eq!(read_response(&mut r)["status"], "ok");
    writeln!(w, r#"{{"op":"fence","epoch":5}}"#).unwrap();
    let resp = read_response(&mut r);
    assert!(
        resp["message"]
            .as_str()
            .unwrap()
            .contains("same number of times"),
        "{resp}"
    );
}

#[test]
fn abort_reaches_the_launcher() {
    let job = Job::new(2);
    let mut c = job.client(1);
    c.abort("out of cheese").unwrap();
    let ev = job
        .events
        .recv_timeout(Duration::from_secs(10))
        .expect("an abort event");
    assert_eq!(
        ev,
        ServerEvent::Abort {
            rank: 1,
            message: "out of cheese".into(),
            status: None,
        }
    );
    // Ending the job on purpose carries the status the job should exit with.
    let mut c = job.client(0);
    nf_pmi::Bootstrap::end_job(&mut c, 0, "all done").unwrap();
    let ev = job
        .events
        .recv_timeout(Duration::from_secs(10))
        .expect("an end-of-job event");
    assert_eq!(
        ev,
        ServerEvent::Abort {
            rank: 0,
            message: "all done".into(),
            status: Some(0),
        }
    );
}

#[test]
fn stopping_the_server_removes_its_files_and_clients_see_it() {
    let job = Job::new(2);
    let mut c0 = job.client(0);
    let mut c1 = job.client(1);
    let waiter = thread::spawn(move || c0.fence());
    // The stop must find rank 0 inside the fence, not before it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while job.server.fence_waiters() != [0] {
        assert!(Instant::now() < deadline, "rank 0 never reached the fence");
        thread::sleep(Duration::from_millis(1));
    }
    let dir = job
        .server
        .dir()
        .expect("a unix server has a directory")
        .to_owned();
    let PmiAddr::Unix(path) = job.server.addr().clone() else {
        panic!("a unix server has a unix address");
    };
    assert!(path.exists());
    let start = Instant::now();
    job.server.stop();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(
        !path.exists() && !dir.exists(),
        "socket and directory removed"
    );
    let fence = waiter.join().unwrap().unwrap_err();
    assert!(fence.to_string().contains("shutting"), "{fence}");
    let err = c1.put("k", "v").unwrap_err();
    assert!(
        matches!(err, PmiError::Closed { .. } | PmiError::Io { .. }),
        "{err}"
    );
}

#[test]
fn connecting_to_a_missing_socket_is_a_clear_error() {
    let job = Job::new(1);
    let mut env = job.env(0, Duration::from_secs(1));
    env.pmi_addr = PmiAddr::Unix(std::env::temp_dir().join("nf-no-such-dir/pmi.sock"));
    let err = Client::connect(env).unwrap_err();
    assert!(
        matches!(err, PmiError::Connect { .. }) && err.to_string().contains("nf-no-such-dir"),
        "{err}"
    );
}

#[test]
fn server_rejects_unsafe_job_ids() {
    let (tx, _rx) = mpsc::channel();
    let err = Server::start(&std::env::temp_dir(), "../evil", 1, tx).unwrap_err();
    assert!(err.to_string().contains("../evil"), "{err}");
}
