//! 100 clients × 100 operations at once, over TCP and unix sockets, with blocked
//! stream readers among them; everything finishes and every fid is released.

mod counting;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use counting::Counting;
use nf_ninep::*;
use nf_ninep_client::Client;
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::synthetic::DynamicFile;
use nf_testkit::ninep::{serve, wait_for, Via};

const CLIENTS: usize = 100;
const OPS: usize = 100;

#[test]
fn hundred_clients_hundred_ops_with_blocked_readers() {
    let started = Instant::now();
    let (tree, stream) = Counting::sample();
    let writes = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&writes);
    tree.tree
        .add_file(
            "/counter",
            DynamicFile::new(|| b"n".to_vec()).with_write(move |data| {
                counter.fetch_add(data.len() as u64, Ordering::SeqCst);
                Ok(())
            }),
        )
        .unwrap();
    // All clients are this process's user: let them all in.
    let s = serve(
        tree,
        ServerConfig::default().max_clients_per_user(CLIENTS),
        Via::Tcp,
    );
    let sockdir = tempfile::tempdir().unwrap();
    let unix = s.server.listen_unix(sockdir.path().join("s")).unwrap();
    let tcp_addr = s.listener.as_ref().unwrap().tcp_addr().unwrap();
    let unix_path = sockdir.path().join("s");
    // Clients count themselves done, then wait for `go` (bounded: a failing client
    // must make the test fail, not hang it).
    let done = Arc::new(AtomicUsize::new(0));
    let go = Arc::new(AtomicBool::new(false));
    let flushed = Arc::new(AtomicUsize::new(0));

    let handles: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let unix_path = unix_path.clone();
            let done = Arc::clone(&done);
            let go = Arc::clone(&go);
            let flushed = Arc::clone(&flushed);
            thread::spawn(move || {
                let client = if i % 2 == 0 {
                    Client::connect_tcp(tcp_addr)
                } else {
                    Client::connect_unix(&unix_path)
                }
                .expect("connect");
                let root = client.attach(&format!("u{i}"), "").unwrap();
                // Every tenth client keeps a read blocked on the stream throughout.
                let blocked = (i % 10 == 0).then(|| {
                    let f = root.open("/stream", LOpenFlags::RDONLY).unwrap();
                    let call = client
                        .start(Tread {
                            fid: f.number(),
                            offset: 0,
                            count: 64,
                        })
                        .unwrap();
                    (f, call)
                });
                for op in 0..OPS {
                    match (i + op) % 5 {
                        0 => assert_eq!(root.read_file("/hello").unwrap(), b"hello, world\n"),
                        1 => assert!(root.stat("/dir/sub").unwrap().is_dir()),
                        2 => assert_eq!(root.readdir("/").unwrap().len(), 4),
                        3 => drop(root.walk("/dir/sub/..").unwrap()),
                        _ => {
                            let mut f = root.open("/counter", LOpenFlags::WRONLY).unwrap();
                            f.write_all(b"x").unwrap();
                        }
                    }
                }
                done.fetch_add(1, Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(20);
                while !go.load(Ordering::SeqCst) {
                    assert!(Instant::now() < deadline, "client {i}: no go");
                    thread::sleep(Duration::from_millis(2));
                }
                if let Some((_file, call)) = blocked {
                    if i % 20 == 0 {
                        assert_eq!(call.flush().unwrap(), None);
                        flushed.fetch_add(1, Ordering::SeqCst);
                    } else {
                        match call.wait_timeout(Duration::from_secs(10)).unwrap() {
                            Some(Rmessage::Rread(r)) => assert_eq!(r.data.as_slice(), b"wake"),
                            other => panic!("client {i}: {other:?}"),
                        }
                    }
                }
            })
        })
        .collect();

    let deadline = Instant::now() + Duration::from_secs(20);
    while done.load(Ordering::SeqCst) < CLIENTS {
        assert!(
            Instant::now() < deadline,
            "only {} clients finished",
            done.load(Ordering::SeqCst)
        );
        assert!(
            handles.iter().all(|h| !h.is_finished()),
            "a client thread failed"
        );
        thread::sleep(Duration::from_millis(5));
    }
    // Every client finished its operations while the blocked reads were still pending.
    assert_eq!(s.server.stats().in_flight, CLIENTS / 10);
    go.store(true, Ordering::SeqCst);
    assert!(wait_for(|| flushed.load(Ordering::SeqCst) == CLIENTS / 20));
    stream.push(b"wake");
    for h in handles {
        h.join().expect("client thread");
    }
    let writes_expected = (0..CLIENTS)
        .map(|i| (0..OPS).filter(|op| (i + op) % 5 == 4).count() as u64)
        .sum::<u64>();
    assert_eq!(writes.load(Ordering::SeqCst), writes_expected);
    assert!(wait_for(|| s.server.stats().clients == 0));
    assert_eq!(s.server.fs().live(), 0, "every fid released");
    drop(unix);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}
