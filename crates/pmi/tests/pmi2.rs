//! The PMI-2 client against small servers speaking the real wire protocol over a
//! socket pair, as `srun --mpi=pmi2` or hydra would: a well-behaved key-value server
//! for a 3-rank job, and misbehaving ones (garbage, oversized lengths, a truncated
//! answer, an error code, silence) that must each give a clear error and never hang.
//! (The path through a real launcher, MPICH's hydra, is tested in nf-core.)

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nf_pmi::pmi2::{wire, Client};
use nf_pmi::{Bootstrap, PmiError};

const TIMEOUT: Duration = Duration::from_secs(5);
/// The deadline of a client talking to a misbehaving server (one of them stays silent).
const SHORT: Duration = Duration::from_secs(1);

/// What a test server does with one command.
enum Reply {
    /// Write these bytes and carry on.
    Send(Vec<u8>),
    /// Write these bytes and close the connection.
    SendAndClose(Vec<u8>),
    /// Close without answering.
    Close,
}

/// Reads the init line and one length-prefixed command after another from `s`,
/// answering each with `answer(cmd)`; stops when the client closes.
fn serve(mut s: UnixStream, mut answer: impl FnMut(&wire::Command) -> Reply) {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while b[0] != b'\n' {
        if s.read_exact(&mut b).is_err() {
            return;
        }
        line.push(b[0]);
    }
    let init = wire::decode_line(String::from_utf8_lossy(&line).trim()).unwrap();
    assert_eq!(
        (init.name.as_str(), init.get("pmi_version")),
        ("init", Some("2"))
    );
    s.write_all(b"cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n")
        .unwrap();
    loop {
        let mut prefix = [0u8; wire::LEN_DIGITS];
        if s.read_exact(&mut prefix).is_err() {
            return;
        }
        let mut body = vec![0u8; wire::decode_len(&prefix).unwrap()];
        s.read_exact(&mut body).unwrap();
        let cmd = wire::decode(&body).unwrap();
        match answer(&cmd) {
            Reply::Send(bytes) => {
                if s.write_all(&bytes).is_err() {
                    return;
                }
            }
            Reply::SendAndClose(bytes) => {
                let _ = s.write_all(&bytes);
                return;
            }
            Reply::Close => return,
        }
    }
}

/// The answers every job needs before the key-value exchange.
fn startup(cmd: &wire::Command, size: usize) -> Option<Reply> {
    let rank = cmd.get("pmirank").unwrap_or("0").to_owned();
    let size = size.to_string();
    let bytes = match cmd.name.as_str() {
        "fullinit" => wire::encode(
            "fullinit-response",
            &[
                ("rc", "0"),
                ("rank", &rank),
                ("size", &size),
                ("appnum", "0"),
            ],
        ),
        "job-getid" => wire::encode("job-getid-response", &[("rc", "0"), ("jobid", "kvs;42")]),
        "info-getjobattr" => wire::encode(
            "info-getjobattr-response",
            &[
                ("rc", "0"),
                ("found", "TRUE"),
                ("value", "(vector,(0,1,2),(1,1,1))"),
            ],
        ),
        _ => return None,
    };
    Some(Reply::Send(bytes))
}

#[test]
fn a_three_rank_job_exchanges_through_a_fencing_server() {
    let kv: Arc<Mutex<HashMap<String, String>>> = Arc::default();
    let barrier = Arc::new(Barrier::new(3));
    let mut threads = Vec::new();
    for rank in 0..3usize {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let (kv, barrier) = (Arc::clone(&kv), Arc::clone(&barrier));
        // Slurm's reading: kvs-fence is a barrier, and gets see what was put before it.
        threads.push(thread::spawn(move || {
            serve(theirs, |cmd| {
                if let Some(a) = startup(cmd, 3) {
                    return a;
                }
                let ok = |name: &str| wire::encode(name, &[("rc", "0")]);
                Reply::Send(match cmd.name.as_str() {
                    "kvs-put" => {
                        let (k, v) = (cmd.get("key").unwrap(), cmd.get("value").unwrap());
                        kv.lock().unwrap().insert(k.into(), v.into());
                        ok("kvs-put-response")
                    }
                    "kvs-fence" => {
                        barrier.wait();
                        ok("kvs-fence-response")
                    }
                    "kvs-get" => {
                        assert_eq!(cmd.get("jobid"), Some("kvs;42"));
                        match kv.lock().unwrap().get(cmd.get("key").unwrap()) {
                            Some(v) => wire::encode(
                                "kvs-get-response",
                                &[("rc", "0"), ("found", "TRUE"), ("value", v)],
                            ),
                            None => {
                                wire::encode("kvs-get-response", &[("rc", "0"), ("found", "FALSE")])
                            }
                        }
                    }
                    "finalize" => ok("finalize-response"),
                    other => panic!("unexpected command {other}"),
                })
            })
        }));
        threads.push(thread::spawn(move || {
            let mut c = Client::connect(ours, &rank.to_string(), None, TIMEOUT).unwrap();
            assert_eq!((c.rank(), c.size()), (rank, 3));
            // Ranks 0 and 1 on node 0, rank 2 on node 1.
            let want_local = [(0, 2), (1, 2), (0, 1)][rank];
            assert_eq!((c.local_rank(), c.local_size()), want_local);
            assert_eq!(c.job_id(), "pmi2-kvs_42");
            c.put("nf.addr", &format!("addr;of={rank}")).unwrap();
            c.fence().unwrap();
            for r in 0..3 {
                assert_eq!(c.get(r, "nf.addr").unwrap(), format!("addr;of={r}"));
            }
            assert!(matches!(
                c.get(0, "nf.never"),
                Err(PmiError::KeyNotFound { .. })
            ));
            c.finalize().unwrap();
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
}

/// Connects a client to a server that answers the start-up, then answers the first
/// kvs-put with `bad` (and closes if `close_after`), or with silence when `bad` is
/// empty; returns the put's error, the error of a later call, and how long the put took.
fn misbehave(bad: &[u8], close_after: bool) -> (PmiError, PmiError, Duration) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let bad = bad.to_vec();
    let server = thread::spawn(move || {
        serve(theirs, |cmd| {
            if let Some(a) = startup(cmd, 2) {
                return a;
            }
            if bad.is_empty() {
                thread::sleep(SHORT + Duration::from_secs(1));
                return Reply::Close;
            }
            if close_after {
                Reply::SendAndClose(bad.clone())
            } else {
                Reply::Send(bad.clone())
            }
        })
    });
    let mut c = Client::connect(ours, "1", Some("j"), SHORT).unwrap();
    let start = Instant::now();
    let first = c.put("k", "v").unwrap_err();
    let took = start.elapsed();
    let later = c.fence().unwrap_err();
    drop(c);
    server.join().unwrap();
    (first, later, took)
}

#[test]
fn garbage_and_oversized_lengths_are_protocol_errors_and_poison_the_connection() {
    for bad in [
        &b"zzzzzzcmd=kvs-put-response;rc=0;"[..],
        b"999999",
        b"     0",
    ] {
        let (first, later, _) = misbehave(bad, false);
        assert!(
            matches!(first, PmiError::Protocol { op: "kvs-put", .. }),
            "{bad:?}: {first}"
        );
        assert!(matches!(later, PmiError::Broken { .. }), "{bad:?}: {later}");
    }
}

#[test]
fn a_wrong_answer_or_an_error_code_is_reported_with_the_launchers_message() {
    let wrong = wire::encode("kvs-get-response", &[("rc", "0")]);
    let (first, _, _) = misbehave(&wrong, false);
    assert!(
        first.to_string().contains("expected kvs-put-response"),
        "{first}"
    );
    let refused = wire::encode("kvs-put-response", &[("rc", "14"), ("errmsg", "no room")]);
    let (first, _, _) = misbehave(&refused, false);
    let text = first.to_string();
    assert!(text.contains("rc=14") && text.contains("no room"), "{text}");
}

#[test]
fn a_truncated_answer_then_close_is_closed_not_a_hang() {
    let (first, later, _) = misbehave(b"    40cmd=kvs-put-resp", true);
    assert!(matches!(first, PmiError::Closed { .. }), "{first}");
    assert!(matches!(later, PmiError::Broken { .. }), "{later}");
}

#[test]
fn a_silent_launcher_is_a_timeout() {
    let (first, _, took) = misbehave(b"", false);
    assert!(matches!(first, PmiError::Timeout { .. }), "{first}");
    assert!(took < SHORT * 10, "took {took:?}");
}

#[test]
fn a_launcher_that_does_not_speak_pmi2_is_named() {
    let (ours, mut theirs) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || {
        let mut line = vec![0u8; wire::init_line().len()];
        theirs.read_exact(&mut line).unwrap();
        theirs
            .write_all(b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1\n")
            .unwrap();
    });
    let err = Client::connect(ours, "0", None, TIMEOUT).unwrap_err();
    server.join().unwrap();
    assert!(err.to_string().contains("does it speak PMI-2"), "{err}");
}
