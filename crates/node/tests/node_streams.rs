//! `/log` and `/pipe` through real clients on a real unix socket: history, blocked
//! readers woken by writes, flushes, end of file, back-pressure, two clients.

mod support;

use std::thread;
use std::time::Duration;

use nf_ninep::errno::{EAGAIN, EPIPE};
use nf_ninep::{LOpenFlags, Rmessage, Tread};
use support::Node;

/// Long enough that a read which should block has had every chance to return.
const QUIET: Duration = Duration::from_millis(300);

fn read_msg(fid: u32) -> Tread {
    Tread {
        fid,
        offset: 0,
        count: 4096,
    }
}

fn data(reply: Rmessage) -> Vec<u8> {
    match reply {
        Rmessage::Rread(r) => r.data.0,
        other => panic!("expected Rread, got {other:?}"),
    }
}

#[test]
fn log_reader_gets_history_then_blocks_until_a_write() {
    let node = Node::start();
    let writer = node.root();
    writer.write_file("/log", b"one\n").unwrap();
    writer.write_file("/log", b"two\n").unwrap();

    let reader = node.root();
    let file = reader.open("/log", LOpenFlags::RDONLY).unwrap();
    let client = file.client().clone();
    let history = data(client.call(read_msg(file.number())).unwrap());
    assert!(history.ends_with(b"one\ntwo\n"), "{history:?}");

    // Caught up: the next read blocks…
    let call = client.start(read_msg(file.number())).unwrap();
    assert!(
        call.wait_timeout(QUIET).unwrap().is_none(),
        "read should block"
    );
    // …until another client writes.
    writer.write_file("/log", b"three\n").unwrap();
    assert_eq!(data(call.wait().unwrap()), b"three\n");
}

#[test]
fn flushing_a_blocked_log_read_unblocks_it_and_loses_nothing() {
    let node = Node::start();
    let root = node.root();
    let file = root.open("/log", LOpenFlags::RDONLY).unwrap();
    let client = file.client().clone();
    node.root().write_file("/log", b"before\n").unwrap();
    assert_eq!(
        data(client.call(read_msg(file.number())).unwrap()),
        b"before\n"
    );
    let call = client.start(read_msg(file.number())).unwrap();
    assert!(call.wait_timeout(QUIET).unwrap().is_none());
    assert!(
        call.flush().unwrap().is_none(),
        "flushed read is not answered"
    );
    assert_eq!(node.daemon().server().stats().in_flight, 0);
    // The flushed read consumed nothing: the next one gets the write.
    node.root().write_file("/log", b"after flush\n").unwrap();
    assert_eq!(
        data(client.call(read_msg(file.number())).unwrap()),
        b"after flush\n"
    );
}

#[test]
fn log_nonblocking_reader_gets_eagain_when_caught_up() {
    let node = Node::start();
    let root = node.root();
    root.write_file("/log", b"x\n").unwrap();
    let f = root
        .open("/log", LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
        .unwrap();
    assert!(f.read_chunk(0, 4096).unwrap().ends_with(b"x\n"));
    assert_eq!(f.read_chunk(0, 4096).unwrap_err().errno(), Some(EAGAIN));
}

#[test]
fn log_history_is_bounded() {
    let node = Node::start();
    let root = node.root();
    let line = vec![b'z'; 1023];
    let mut w = root.open("/log", LOpenFlags::WRONLY).unwrap();
    for _ in 0..400 {
        w.write_all(&line).unwrap();
        w.write_all(b"\n").unwrap();
    }
    let r = root
        .open("/log", LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
        .unwrap();
    let mut total = 0;
    loop {
        match r.read_chunk(total, 65536) {
            Ok(d) if !d.is_empty() => total += d.len() as u64,
            _ => break,
        }
    }
    assert_eq!(total, nf_node::tree::DEFAULT_LOG_HISTORY as u64);
}

#[test]
fn pipe_reader_blocks_until_a_writer_of_another_client_writes_then_eof() {
    let node = Node::start();
    let a = node.root();
    let b = node.root();
    a.create("/pipe/p", LOpenFlags::RDONLY, 0o644)
        .unwrap()
        .close()
        .unwrap();
    assert!(a.stat("/pipe/p").is_ok());

    let reader = a.open("/pipe/p", LOpenFlags::RDONLY).unwrap();
    let client = reader.client().clone();
    // No writer yet: the reader waits (no premature end of file).
    let call = client.start(read_msg(reader.number())).unwrap();
    assert!(call.wait_timeout(QUIET).unwrap().is_none());

    let mut w = b.open("/pipe/p", LOpenFlags::WRONLY).unwrap();
    w.write_all(b"through the pipe").unwrap();
    assert_eq!(data(call.wait().unwrap()), b"through the pipe");

    // While the writer is open an empty pipe blocks; once it closes: end of file.
    let call = client.start(read_msg(reader.number())).unwrap();
    assert!(call.wait_timeout(QUIET).unwrap().is_none());
    w.close().unwrap();
    assert_eq!(data(call.wait().unwrap()), b"");
}

#[test]
fn pipe_eof_waits_for_the_last_of_several_writers() {
    let node = Node::start();
    let root = node.root();
    root.create("/pipe/q", LOpenFlags::RDONLY, 0o644)
        .unwrap()
        .close()
        .unwrap();
    let r = root.open("/pipe/q", LOpenFlags::RDONLY).unwrap();
    let w1 = node.root().open("/pipe/q", LOpenFlags::WRONLY).unwrap();
    let w2 = node.root().open("/pipe/q", LOpenFlags::WRONLY).unwrap();
    w1.write_at(b"1", 0).unwrap();
    w1.close().unwrap();
    assert_eq!(r.read_chunk(0, 10).unwrap(), b"1");
    let call = r.client().start(read_msg(r.number())).unwrap();
    assert!(call.wait_timeout(QUIET).unwrap().is_none(), "w2 still open");
    w2.write_at(b"2", 0).unwrap();
    assert_eq!(data(call.wait().unwrap()), b"2");
    w2.close().unwrap();
    assert_eq!(r.read_chunk(0, 10).unwrap(), b"");
}

#[test]
fn full_pipe_blocks_the_writer_until_read_and_nonblocking_gets_eagain() {
    // The support server's pipes buffer 16 bytes.
    let node = Node::start();
    let root = node.root();
    root.create("/pipe/full", LOpenFlags::RDONLY, 0o644)
        .unwrap()
        .close()
        .unwrap();
    let r = root.open("/pipe/full", LOpenFlags::RDONLY).unwrap();
    let w = node.root().open("/pipe/full", LOpenFlags::WRONLY).unwrap();
    assert_eq!(w.write_at(&[7u8; 40], 0).unwrap(), 16, "takes what fits");
    let nb = node
        .root()
        .open("/pipe/full", LOpenFlags::WRONLY | LOpenFlags::NONBLOCK)
        .unwrap();
    assert_eq!(nb.write_at(b"x", 0).unwrap_err().errno(), Some(EAGAIN));

    let writer = thread::spawn(move || {
        let mut w = w;
        w.write_all(&[8u8; 24]).unwrap();
        w.close().unwrap();
    });
    drop(nb);
    let mut got = Vec::new();
    loop {
        let d = r.read_chunk(0, 100).unwrap();
        if d.is_empty() {
            break;
        }
        got.extend(d);
    }
    writer.join().unwrap();
    assert_eq!(got.len(), 40, "nothing lost");
    assert!(got[..16].iter().all(|b| *b == 7) && got[16..].iter().all(|b| *b == 8));
}

#[test]
fn writing_to_a_pipe_whose_readers_left_is_epipe() {
    let node = Node::start();
    let root = node.root();
    root.create("/pipe/gone", LOpenFlags::RDONLY, 0o644)
        .unwrap()
        .close()
        .unwrap();
    let w = root.open("/pipe/gone", LOpenFlags::WRONLY).unwrap();
    // Before any reader, data waits in the buffer.
    assert_eq!(w.write_at(b"early", 0).unwrap(), 5);
    let r = node.root().open("/pipe/gone", LOpenFlags::RDONLY).unwrap();
    assert_eq!(r.read_chunk(0, 10).unwrap(), b"early");
    drop(r);
    assert_eq!(w.write_at(b"late", 0).unwrap_err().errno(), Some(EPIPE));
}

#[test]
fn pipes_are_listed_and_removed() {
    let node = Node::start();
    let root = node.root();
    root.create("/pipe/a", LOpenFlags::WRONLY, 0o644)
        .unwrap()
        .close()
        .unwrap();
    let names: Vec<String> = root
        .readdir("/pipe")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["a"]);
    root.remove("/pipe/a").unwrap();
    assert!(root.readdir("/pipe").unwrap().is_empty());
}

/// The node tree runs requests on the connection's reader thread unless they must wait:
/// host files, `/status` and a pipe with data need no worker; a pipe read that waits
/// moves to one, is woken by a writer, and loses nothing.
#[test]
fn only_requests_that_wait_leave_the_reader_thread() {
    let node = Node::start();
    let root = node.root();
    assert_eq!(
        root.read_file("/fs/hello.txt").unwrap(),
        b"hello from the host\n"
    );
    root.write_file("/fs/new.txt", b"x").unwrap();
    assert!(!root.read_file("/status").unwrap().is_empty());
    root.write_file("/log", b"note\n").unwrap();
    // Naming a pipe makes it: the reader may come before the writer.
    let reader = node.root().open("/pipe/p", LOpenFlags::RDONLY).unwrap();
    let writer = root
        .open("/pipe/p", LOpenFlags::WRONLY)
        .expect("the named pipe");
    writer.write_at(b"ab", 0).unwrap();
    let rc = reader.client().clone();
    assert_eq!(data(rc.call(read_msg(reader.number())).unwrap()), b"ab");
    assert_eq!(
        node.daemon().server().stats().workers,
        0,
        "a request that did not wait went to a worker"
    );

    let call = rc.start(read_msg(reader.number())).unwrap();
    assert!(
        call.wait_timeout(QUIET).unwrap().is_none(),
        "read should block"
    );
    assert!(node.daemon().server().stats().workers >= 1);
    writer.write_at(b"cd", 0).unwrap();
    assert_eq!(data(call.wait().unwrap()), b"cd");
}
