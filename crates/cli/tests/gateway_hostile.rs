//! The gateway (`nf gateway`, unix sockets, in front of two `nf serve`) under a member
//! that stops answering and under a crowd of short, abrupt and garbled connections:
//! the real processes, as a hostile local user or a faulty node would treat them.
//!
//! - A member paused with `SIGSTOP` while clients read through the gateway and
//!   directly: every call through the gateway ends (an error once the gateway gives
//!   the member up, within its probe timeout) while the other member stays served;
//!   the direct client's call completes after `SIGCONT` with nothing lost, and the
//!   gateway serves the member again.
//! - Hundreds of connections that attach and read, or stop mid-request, or send
//!   garbage, while one client works steadily: the steady client sees no error, and
//!   the gateway is left with no more descriptors or threads than before.

mod serve_support;

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use nf_gateway::member::{PROBE_INTERVAL, PROBE_TIMEOUT};
use nf_ninep::frame::encode_frame;
use nf_ninep::message::{Tattach, Tlopen, Tmessage, Tread, Tversion, Twalk};
use nf_ninep::types::{NOFID, NOTAG};
use nf_ninep::{LOpenFlags, NONUNAME};
use nf_ninep_client::{Client, Root};
use serve_support::{nf, signal, Served};

/// Every wait here ends in seconds; this only keeps a broken run from hanging.
const BOUND: Duration = Duration::from_secs(60);

/// `nf gateway -f` on a unix socket in front of `members`, killed when dropped.
struct Gateway {
    child: Child,
    _dir: tempfile::TempDir,
    socket: PathBuf,
}

impl Gateway {
    fn start(members: &[(&str, &Served)]) -> Gateway {
        let dir = tempfile::tempdir().unwrap();
        let mut toml = String::new();
        for (name, s) in members {
            toml.push_str(&format!(
                "[[member]]\nname = {name:?}\naddr = {:?}\n",
                s.addr()
            ));
        }
        let config = dir.path().join("gw.toml");
        std::fs::write(&config, toml).unwrap();
        let socket = dir.path().join("gw.sock");
        let mut child = nf()
            .args(["gateway", "-f", "--unix"])
            .arg(&socket)
            .arg("--config")
            .arg(&config)
            .env("NF_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start nf gateway");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.starts_with("nf gateway: ready") {
                    let _ = tx.send(());
                }
            }
        });
        let gw = Gateway {
            child,
            _dir: dir,
            socket,
        };
        rx.recv_timeout(BOUND)
            .expect("nf gateway never said it was ready");
        let up = format!("members {} up {}", members.len(), members.len());
        let root = gw.root();
        wait_until("every member up", || {
            String::from_utf8_lossy(&root.read_file("/status").unwrap()).contains(&up)
        });
        gw
    }

    fn root(&self) -> Root {
        Client::connect_unix(&self.socket)
            .unwrap()
            .attach("root", "")
            .unwrap()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls every 50 ms. With `nf_testkit::eventually`'s growing pauses instead, the pause
/// test failed once (the direct call was not in flight at its check; not understood),
/// so this keeps the poll it was written and checked with.
fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < BOUND, "{what}: not within {BOUND:?}");
        thread::sleep(Duration::from_millis(50));
    }
}

fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| rest.starts_with('T')))
        .unwrap_or(false)
}

/// Milliseconds since `epoch`, never 0 (0 means "no call in flight").
fn stamp(epoch: Instant) -> u64 {
    epoch.elapsed().as_millis() as u64 + 1
}

/// A client reading `path` of `root` over and over until `stop`: when its call in
/// flight began ([`stamp`], 0 between calls), its successes and its errors.
#[derive(Default)]
struct Reader {
    since: AtomicU64,
    ok: AtomicUsize,
    errors: AtomicUsize,
}

fn read_loop(
    root: Root,
    path: &'static str,
    want: Vec<u8>,
    stop: Arc<AtomicBool>,
    epoch: Instant,
) -> (Arc<Reader>, thread::JoinHandle<Vec<String>>) {
    let r = Arc::new(Reader::default());
    let me = Arc::clone(&r);
    let t = thread::spawn(move || {
        let mut errors = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            me.since.store(stamp(epoch), Ordering::SeqCst);
            let got = root.read_file(path);
            me.since.store(0, Ordering::SeqCst);
            match got {
                Ok(bytes) => {
                    assert_eq!(bytes, want, "{path}: wrong bytes");
                    me.ok.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) => {
                    me.errors.fetch_add(1, Ordering::SeqCst);
                    if errors.len() < 8 {
                        errors.push(e.to_string());
                    }
                    thread::sleep(Duration::from_millis(50));
                }
            }
        }
        errors
    });
    (r, t)
}

#[test]
fn a_paused_member_fails_calls_through_the_gateway_and_holds_up_no_one_else() {
    let node1 = Served::start(&[]);
    let node2 = Served::start(&[]);
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(node1.export.join("big"), &big).unwrap();
    let gw = Gateway::start(&[("node1", &node1), ("node2", &node2)]);
    let epoch = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let hello = b"hello\n".to_vec();
    // Through the gateway: three clients of the paused member, two of the other (one
    // as another user); and one client of the paused member directly.
    let via_paused: Vec<_> = (0..3)
        .map(|_| {
            read_loop(
                gw.root(),
                "/n/node1/fs/big",
                big.clone(),
                Arc::clone(&stop),
                epoch,
            )
        })
        .collect();
    let other_user = Client::connect_unix(&gw.socket)
        .unwrap()
        .attach("nobody", "")
        .unwrap();
    let via_other = [
        read_loop(
            gw.root(),
            "/n/node2/fs/hello.txt",
            hello.clone(),
            Arc::clone(&stop),
            epoch,
        ),
        read_loop(
            other_user,
            "/n/node2/fs/hello.txt",
            hello.clone(),
            Arc::clone(&stop),
            epoch,
        ),
    ];
    let direct_root = Client::connect_unix(&node1.socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    let direct = read_loop(
        direct_root,
        "/fs/big",
        big.clone(),
        Arc::clone(&stop),
        epoch,
    );
    wait_until("every client under way", || {
        via_paused
            .iter()
            .chain(&via_other)
            .all(|(r, _)| r.ok.load(Ordering::SeqCst) > 0)
            && direct.0.ok.load(Ordering::SeqCst) > 0
    });

    signal(node1.child.id(), "STOP");
    wait_until("the member stopped", || stopped(node1.child.id()));
    let paused_at = stamp(epoch);
    // The gateway gives a member up once a probe takes PROBE_TIMEOUT, read every
    // PROBE_INTERVAL: by then every call to it has ended. Paused for twice that, and a
    // call is only required to end before the member comes back (no timing beyond
    // "it did not wait for SIGCONT").
    let gives_up = PROBE_TIMEOUT + PROBE_INTERVAL;
    let pause = 2 * gives_up;
    thread::sleep(PROBE_INTERVAL);
    let other_before: usize = via_other
        .iter()
        .map(|(r, _)| r.ok.load(Ordering::SeqCst))
        .sum();
    thread::sleep(pause - PROBE_INTERVAL);
    let now = stamp(epoch);
    let waited_out = (pause - Duration::from_secs(1)).as_millis() as u64;
    for (r, _) in &via_paused {
        let since = r.since.load(Ordering::SeqCst);
        assert!(
            since == 0 || now - since < waited_out,
            "a call through the gateway to the paused member has waited {} ms",
            now - since
        );
        assert!(
            r.errors.load(Ordering::SeqCst) > 0,
            "no call to the paused member failed"
        );
    }
    let other_after: usize = via_other
        .iter()
        .map(|(r, _)| r.ok.load(Ordering::SeqCst))
        .sum();
    assert!(
        other_after > other_before,
        "the other member was not served while one was paused"
    );
    // The direct client waits, its call still in flight since before the pause.
    let direct_ok = direct.0.ok.load(Ordering::SeqCst);
    let direct_since = direct.0.since.load(Ordering::SeqCst);
    assert!(direct_since != 0 && direct_since <= paused_at);

    signal(node1.child.id(), "CONT");
    wait_until("the direct call completed", || {
        direct.0.ok.load(Ordering::SeqCst) > direct_ok
    });
    let failed_before = via_paused
        .iter()
        .map(|(r, _)| r.ok.load(Ordering::SeqCst))
        .collect::<Vec<_>>();
    wait_until("the member served through the gateway again", || {
        via_paused
            .iter()
            .zip(&failed_before)
            .all(|((r, _), &n)| r.ok.load(Ordering::SeqCst) > n)
    });
    stop.store(true, Ordering::SeqCst);
    for (_, t) in via_other {
        let errors = t.join().unwrap();
        assert!(
            errors.is_empty(),
            "the other member's clients saw {errors:?}"
        );
    }
    let errors = direct.1.join().unwrap();
    assert!(errors.is_empty(), "the direct client saw {errors:?}");
    for (_, t) in via_paused {
        for e in t.join().unwrap() {
            // The member down (EHOSTDOWN), or back on new connections (ESTALE).
            assert!(
                e.contains("down") || e.contains("stale") || e.contains("Stale"),
                "{e}"
            );
        }
    }
}

/// The names of the threads of process `pid`.
fn thread_names(pid: u32) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim_end().to_string())
        .collect();
    names.sort();
    names
}

/// Descriptors and threads of process `pid`.
fn fds_and_threads(pid: u32) -> (usize, usize) {
    let count = |what: &str| {
        std::fs::read_dir(format!("/proc/{pid}/{what}"))
            .unwrap()
            .count()
    };
    (count("fd"), count("task"))
}

fn frame(tag: u16, msg: impl Into<Tmessage>) -> Vec<u8> {
    let mut out = Vec::new();
    encode_frame(tag, &msg.into(), 1 << 20, &mut out).unwrap();
    out
}

/// A connection that asks for a read and leaves before the answer (`garbage`:
/// sends bytes that are no 9P after the version instead).
fn abrupt(socket: &PathBuf, garbage: bool, seed: usize) {
    let Ok(mut s) = UnixStream::connect(socket) else {
        return;
    };
    let mut bytes = frame(
        NOTAG,
        Tversion {
            msize: 65536,
            version: "9P2000.L".into(),
        },
    );
    if garbage {
        bytes.extend((0..300).map(|i| ((i * 131 + seed * 17) % 256) as u8));
    } else {
        bytes.extend(frame(
            1,
            Tattach {
                fid: 0,
                afid: NOFID,
                uname: "root".into(),
                aname: String::new(),
                n_uname: NONUNAME,
            },
        ));
        bytes.extend(frame(
            2,
            Twalk {
                fid: 0,
                newfid: 1,
                wnames: vec!["n".into(), "node1".into(), "fs".into(), "hello.txt".into()],
            },
        ));
        bytes.extend(frame(
            3,
            Tlopen {
                fid: 1,
                flags: LOpenFlags::RDONLY,
            },
        ));
        bytes.extend(frame(
            4,
            Tread {
                fid: 1,
                offset: 0,
                count: 4096,
            },
        ));
        // Sometimes cut the last request in two.
        if seed.is_multiple_of(2) {
            bytes.truncate(bytes.len() - 5);
        }
    }
    let _ = s.write_all(&bytes);
}

#[test]
fn short_abrupt_and_garbled_connections_leave_the_gateway_as_it_was() {
    let node1 = Served::start(&[]);
    let node2 = Served::start(&[]);
    let gw = Gateway::start(&[("node1", &node1), ("node2", &node2)]);
    // Every member connection open and a client served once before counting.
    gw.root().read_file("/n/node1/fs/hello.txt").unwrap();
    let epoch = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let steady = read_loop(
        gw.root(),
        "/n/node2/fs/hello.txt",
        b"hello\n".to_vec(),
        Arc::clone(&stop),
        epoch,
    );
    wait_until("the steady client under way", || {
        steady.0.ok.load(Ordering::SeqCst) > 0
    });
    thread::sleep(Duration::from_millis(300));
    let before = fds_and_threads(gw.pid());
    let names_before = thread_names(gw.pid());
    let crowd: Vec<_> = (0..4)
        .map(|t| {
            let socket = gw.socket.clone();
            thread::spawn(move || {
                for k in 0..75 {
                    let seed = t * 75 + k;
                    match seed % 3 {
                        0 => {
                            let root = Client::connect_unix(&socket)
                                .unwrap()
                                .attach("root", "")
                                .unwrap();
                            assert_eq!(
                                root.read_file("/n/node1/fs/hello.txt").unwrap(),
                                b"hello\n"
                            );
                        }
                        1 => abrupt(&socket, false, seed),
                        _ => abrupt(&socket, true, seed),
                    }
                }
            })
        })
        .collect();
    for c in crowd {
        c.join().unwrap();
    }
    // The gateway drops each connection as it sees its end; its workers go idle.
    let start = Instant::now();
    loop {
        let after = fds_and_threads(gw.pid());
        if after.0 <= before.0 && after.1 <= before.1 {
            break;
        }
        assert!(
            start.elapsed() < BOUND,
            "the gateway holds {after:?} descriptors and threads, {before:?} before; \
             threads {:?}, before {names_before:?}",
            thread_names(gw.pid())
        );
        thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    let errors = steady.1.join().unwrap();
    assert!(errors.is_empty(), "the steady client saw {errors:?}");
    assert_eq!(steady.0.errors.load(Ordering::SeqCst), 0);
    // And it still serves.
    assert_eq!(
        gw.root().read_file("/n/node1/fs/hello.txt").unwrap(),
        b"hello\n"
    );
}
