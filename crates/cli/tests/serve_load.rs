//! 100 clients × 100 operations against one `nf serve` process, with blocked readers
//! among them: everything completes (bounded), nothing is lost, no fid leaks.

mod serve_support;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use nf_ninep::LOpenFlags;
use nf_ninep_client::Client;
use serve_support::Served;

const CLIENTS: usize = 100;
const OPS: usize = 100;
/// Every tenth client first parks a blocked read on a pipe of its own.
const BLOCKERS: usize = 10;

#[test]
fn hundred_clients_hundred_operations_with_blocked_readers() {
    let s = Served::start(&["--max-clients", "256"]);
    let socket = s.socket.clone();
    let setup = Client::connect_unix(&socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    for b in 0..BLOCKERS {
        setup
            .create(&format!("/pipe/b{b}"), LOpenFlags::RDONLY, 0o644)
            .unwrap()
            .close()
            .unwrap();
    }
    let started = Instant::now();
    let ready = Arc::new(Barrier::new(CLIENTS + 1));
    let workers: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let socket = socket.clone();
            let ready = Arc::clone(&ready);
            thread::spawn(move || {
                let client = Client::connect_unix(&socket).expect("connect");
                let root = client.attach("root", "").expect("attach");
                // A blocked reader: its read stays in flight during the whole run.
                let blocked = (c % (CLIENTS / BLOCKERS) == 0).then(|| {
                    let pipe = format!("/pipe/b{}", c / (CLIENTS / BLOCKERS));
                    let f = root.open(&pipe, LOpenFlags::RDONLY).unwrap();
                    let call = client
                        .start(nf_ninep::Tread {
                            fid: f.number(),
                            offset: 0,
                            count: 64,
                        })
                        .unwrap();
                    (f, call)
                });
                ready.wait();
                let own = format!("/fs/c{c}");
                for op in 0..OPS {
                    match op % 5 {
                        0 => assert!(root.read_file("/status").unwrap().starts_with(b"host ")),
                        1 => root
                            .write_file(&own, format!("{c}:{op}").as_bytes())
                            .unwrap(),
                        2 => assert_eq!(
                            root.read_file(&own).unwrap(),
                            format!("{c}:{}", op - 1).as_bytes()
                        ),
                        3 => assert_eq!(root.read_file("/ro/hello.txt").unwrap(), b"hello\n"),
                        _ => {
                            let fid = root.walk("/fs/../pipe").unwrap();
                            assert!(fid.stat().unwrap().is_dir());
                        }
                    }
                }
                blocked
            })
        })
        .collect();
    ready.wait();
    let blocked: Vec<_> = workers
        .into_iter()
        .filter_map(|w| w.join().expect("a client failed"))
        .collect();
    assert_eq!(blocked.len(), BLOCKERS);
    // The blocked reads are still waiting; a write to each pipe wakes exactly its reader.
    for (b, (_, call)) in blocked.iter().enumerate() {
        assert!(
            call.wait_timeout(Duration::from_millis(1))
                .unwrap()
                .is_none(),
            "b{b} ended early"
        );
    }
    for b in 0..BLOCKERS {
        let mut w = setup
            .open(&format!("/pipe/b{b}"), LOpenFlags::WRONLY)
            .unwrap();
        w.write_all(format!("wake {b}").as_bytes()).unwrap();
    }
    for (b, (_file, call)) in blocked.into_iter().enumerate() {
        match call.wait().unwrap() {
            nf_ninep::Rmessage::Rread(r) => {
                assert_eq!(r.data.as_slice(), format!("wake {b}").as_bytes())
            }
            other => panic!("{other:?}"),
        }
    }
    for c in 0..CLIENTS {
        assert!(s.export.join(format!("c{c}")).exists());
    }
    assert!(started.elapsed() < Duration::from_secs(300), "bounded run");
}
