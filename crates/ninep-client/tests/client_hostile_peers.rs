//! The client against peers that misbehave, and its own callers racing: a server that
//! completes the version exchange and then says nothing, one that sends half a reply
//! and stops, one that closes while the connection is idle; and many threads sharing
//! one connection that drop or flush their calls while one of them receives for the
//! others (the `rpc` module's leader hand-off). Every call ends: with its reply, or an
//! error within the bounds the client was given.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use nf_ninep::frame::{encode_frame, FrameDecoder};
use nf_ninep::message::{Rattach, Rmessage, Rversion, Tmessage, Tread, Tstatfs};
use nf_ninep::types::{Qid, QidType};
use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, ClientConfig, ClientError};
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::PassthroughFs;
use nf_testkit::ninep::{serve, Via};

/// Everything here ends in a second or two; this only turns a hang into a failure.
const BOUND: Duration = Duration::from_secs(30);
/// The reply timeout the clients here are given.
const PATIENCE: Duration = Duration::from_millis(400);
const MSIZE: u32 = 8192;

/// What the peer does after the version exchange.
#[derive(Clone, Copy)]
enum Peer {
    /// Reads every request and answers none.
    Silent,
    /// Answers the first request with the first half of its reply, then nothing.
    HalfReply,
    /// Closes the connection.
    Closes,
}

/// Reads one whole request from `s`.
fn read_request(s: &mut UnixStream, buf: &mut Vec<u8>) -> Option<(u16, Tmessage)> {
    let decoder = FrameDecoder::new(MSIZE);
    loop {
        if let Some((frame, used)) = decoder.decode::<Tmessage>(buf).unwrap() {
            buf.drain(..used);
            return Some((frame.tag, frame.body));
        }
        let mut chunk = [0u8; 4096];
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn frame(tag: u16, reply: Rmessage) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(tag, &reply, MSIZE, &mut out).unwrap();
    out
}

/// A peer behaving as `how` on one connection, at the returned socket path; its
/// thread ends when the client closes.
fn peer(how: Peer) -> (tempfile::TempDir, PathBuf, thread::JoinHandle<()>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("peer.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let serving = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        let Some((tag, Tmessage::Tversion(_))) = read_request(&mut s, &mut buf) else {
            panic!("the client did not start with Tversion");
        };
        let version = Rversion {
            msize: MSIZE,
            version: String::from("9P2000.L"),
        };
        s.write_all(&frame(tag, version.into())).unwrap();
        match how {
            Peer::Closes => return,
            Peer::HalfReply => {
                if let Some((tag, _)) = read_request(&mut s, &mut buf) {
                    let qid = Qid {
                        ty: QidType::DIR,
                        version: 0,
                        path: 1,
                    };
                    let whole = frame(tag, Rattach { qid }.into());
                    s.write_all(&whole[..whole.len() / 2]).unwrap();
                }
            }
            Peer::Silent => {}
        }
        while read_request(&mut s, &mut buf).is_some() {}
    });
    (dir, path, serving)
}

/// Runs `f` on a thread of its own; fails the test if it has not returned within
/// [`BOUND`] (the thread is then left behind, the test failing anyway).
fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(BOUND)
        .unwrap_or_else(|_| panic!("{what}: still waiting after {BOUND:?}"))
}

fn patient() -> ClientConfig {
    ClientConfig {
        msize: MSIZE,
        connect_timeout: PATIENCE,
        reply_timeout: Some(PATIENCE),
    }
}

/// A lone call, then calls of several threads at once, on connections to `how`: each
/// ends with an error, none hangs. (A lone call receives its reply itself, with
/// nobody else's timeout to end its wait.)
fn calls_end(how: Peer) -> Vec<ClientError> {
    [1, 4].into_iter().flat_map(|n| calls_of(n, how)).collect()
}

fn calls_of(n: usize, how: Peer) -> Vec<ClientError> {
    let (_dir, path, serving) = peer(how);
    let client = Client::connect_unix_with(&path, patient()).unwrap();
    let errors = bounded("calls to a peer that stopped", move || {
        let callers: Vec<_> = (0..n)
            .map(|k| {
                let client = client.clone();
                thread::spawn(move || client.attach(&format!("u{k}"), "").unwrap_err())
            })
            .collect();
        callers.into_iter().map(|c| c.join().unwrap()).collect()
    });
    serving.join().unwrap();
    errors
}

/// Every call to `how` ends timed out or disconnected.
fn every_call_times_out(how: Peer) {
    for e in calls_end(how) {
        assert!(
            matches!(
                e,
                ClientError::TimedOut { .. } | ClientError::Disconnected { .. }
            ),
            "{e}"
        );
    }
}

#[test]
fn a_silent_peer_times_every_call_out() {
    every_call_times_out(Peer::Silent);
}

#[test]
fn a_peer_that_stops_halfway_through_a_reply_times_every_call_out() {
    every_call_times_out(Peer::HalfReply);
}

/// Without a reply timeout a call waits as long as it takes; closing the client (a
/// watchdog's answer, as the gateway's monitor gives a member that stopped answering)
/// ends it.
#[test]
fn closing_the_client_ends_a_call_to_a_silent_peer() {
    let (_dir, path, serving) = peer(Peer::Silent);
    let config = ClientConfig {
        reply_timeout: None,
        ..patient()
    };
    let client = Client::connect_unix_with(&path, config).unwrap();
    let call = client.start(Tstatfs { fid: 0 }).unwrap();
    let waiting = {
        let client = client.clone();
        thread::spawn(move || {
            // A second call, waiting on its channel while the first receives.
            client.start(Tstatfs { fid: 1 }).unwrap().wait()
        })
    };
    let watchdog = {
        let client = client.clone();
        thread::spawn(move || {
            thread::sleep(PATIENCE);
            client.close();
        })
    };
    let first = bounded("a call on a closed client", move || call.wait());
    assert!(
        matches!(first, Err(ClientError::Disconnected { .. })),
        "{first:?}"
    );
    let second = bounded("the other call", move || waiting.join().unwrap());
    assert!(
        matches!(second, Err(ClientError::Disconnected { .. })),
        "{second:?}"
    );
    watchdog.join().unwrap();
    drop(client);
    serving.join().unwrap();
}

/// A peer that closes an idle connection is noticed by the reader's idle check, and
/// the next call is told so at once.
#[test]
fn a_peer_closing_an_idle_connection_is_noticed() {
    let (_dir, path, serving) = peer(Peer::Closes);
    let client = Client::connect_unix_with(&path, ClientConfig::default()).unwrap();
    serving.join().unwrap();
    let c = client.clone();
    bounded("noticing the close", move || {
        while !c.is_closed() {
            thread::sleep(Duration::from_millis(10));
        }
    });
    let next = bounded("a call after the close", move || client.attach("u", ""));
    assert!(
        matches!(next, Err(ClientError::Disconnected { .. })),
        "{next:?}"
    );
}

/// Nor does a call made before the close is noticed hang, even without a timeout.
#[test]
fn a_call_racing_the_close_of_an_idle_connection_ends() {
    for _ in 0..20 {
        let (_dir, path, serving) = peer(Peer::Closes);
        let config = ClientConfig {
            reply_timeout: None,
            ..ClientConfig::default()
        };
        let client = Client::connect_unix_with(&path, config).unwrap();
        serving.join().unwrap();
        let r = bounded("a call racing the close", move || {
            client.start(Tstatfs { fid: 0 }).and_then(|c| c.wait())
        });
        assert!(
            matches!(
                r,
                Err(ClientError::Disconnected { .. } | ClientError::Io(_))
            ),
            "{r:?}"
        );
    }
}

/// Many threads share one connection to a real server; each call is waited for,
/// dropped unwaited, flushed at once, or flushed after a short wait, in a pattern
/// that differs per thread, while whoever receives hands replies to the others. Every
/// call that is waited for is answered, and the connection serves on afterwards.
#[test]
fn callers_dropping_and_flushing_while_another_receives_leave_every_waited_call_answered() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f"), vec![7u8; 3000]).unwrap();
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let client = Client::connect_unix(served.unix_path()).unwrap();
    let root = client.attach("t", "").unwrap();
    let file = root.open("/f", LOpenFlags::RDONLY).unwrap();
    let (rootfid, filefid) = (root.number(), file.number());
    let threads = 8;
    let rounds = 300;
    let answered = bounded("the callers", move || {
        let callers: Vec<_> = (0..threads)
            .map(|k| {
                let client = client.clone();
                thread::spawn(move || {
                    let mut answered = 0;
                    for i in 0..rounds {
                        let statfs = (i + k) % 2 == 0;
                        // Its own reply, not another call's.
                        let own = |r: &Rmessage| match r {
                            Rmessage::Rstatfs(_) => statfs,
                            Rmessage::Rread(r) => !statfs && r.data.0.len() == 3000,
                            _ => false,
                        };
                        let msg: Tmessage = if statfs {
                            Tstatfs { fid: rootfid }.into()
                        } else {
                            Tread {
                                fid: filefid,
                                offset: 0,
                                count: 3000,
                            }
                            .into()
                        };
                        let call = client.start(msg).unwrap();
                        match (i * 7 + k * 3) % 5 {
                            0 => drop(call),
                            1 => {
                                // Answered before the flush or not at all.
                                if let Some(r) = call.flush().unwrap() {
                                    assert!(own(&r), "{r:?}");
                                }
                            }
                            2 => match call.wait_timeout(Duration::ZERO).unwrap() {
                                Some(r) => assert!(own(&r), "{r:?}"),
                                None => {
                                    if let Some(r) = call.flush().unwrap() {
                                        assert!(own(&r), "{r:?}");
                                    }
                                }
                            },
                            3 => loop {
                                if let Some(r) =
                                    call.wait_timeout(Duration::from_micros(200)).unwrap()
                                {
                                    assert!(own(&r), "{r:?}");
                                    answered += 1;
                                    break;
                                }
                            },
                            _ => {
                                let r = call.wait().unwrap();
                                assert!(own(&r), "{r:?}");
                                answered += 1;
                            }
                        }
                    }
                    answered
                })
            })
            .collect();
        let answered: usize = callers.into_iter().map(|c| c.join().unwrap()).sum();
        (answered, root, file)
    });
    let (answered, root, file) = answered;
    assert!(answered > 0);
    drop(file);
    // The connection is sound: no tag or receiver left stuck.
    for _ in 0..50 {
        assert_eq!(root.read_file("/f").unwrap().len(), 3000);
    }
}

/// A call whose reply another caller (or the reader thread) received while it was not
/// waiting finds it when it comes to wait, though nothing more arrives: it must not
/// become the receiver and wait on a silent connection.
#[test]
fn a_reply_received_by_another_is_found_by_its_caller() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let client = Client::connect_unix(served.unix_path()).unwrap();
    let root = client.attach("t", "").unwrap();
    let fid = root.number();
    for _ in 0..5 {
        let first = client.start(Tstatfs { fid }).unwrap();
        // Another caller receives, the first's reply with its own; the reader thread
        // takes whatever is left.
        client.start(Tstatfs { fid }).unwrap().wait().unwrap();
        thread::sleep(Duration::from_millis(50));
        let r = bounded("a reply already received", move || first.wait());
        assert!(matches!(r, Ok(Rmessage::Rstatfs(_))), "{r:?}");
    }
}
