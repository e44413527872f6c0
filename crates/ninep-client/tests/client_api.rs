//! The client library against a real server: long paths, many threads on one
//! connection, chunked I/O through `std::io`, and errors that say what happened.

use std::fs;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::thread;

use nf_ninep::LOpenFlags;
use nf_ninep_client::{Client, ClientConfig, ClientError};
use nf_ninep_server::ServerConfig;
use nf_ninep_trees::PassthroughFs;
use nf_testkit::ninep::{serve, Via, LIMIT};

#[test]
fn paths_longer_than_one_walk_message() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..40).map(|i| format!("d{i}")).collect();
    let deep = names
        .iter()
        .fold(dir.path().to_path_buf(), |p, n| p.join(n));
    fs::create_dir_all(&deep).unwrap();
    fs::write(deep.join("leaf"), "bottom").unwrap();
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let root = served.client().attach("t", "").unwrap();
    let path = format!("/{}/leaf", names.join("/"));
    assert_eq!(root.read_file(&path).unwrap(), b"bottom");
    let missing = format!("/{}/nope/x", names.join("/"));
    let err = root.stat(&missing).unwrap_err();
    assert!(err.to_string().contains("/d39/nope"), "{err}");
    // Up and down again across message boundaries.
    let back = format!("{path}/../../d39/leaf");
    assert_eq!(root.read_file(&back).unwrap(), b"bottom");
}

#[test]
fn many_threads_share_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..8 {
        fs::write(dir.path().join(format!("f{i}")), format!("file {i}")).unwrap();
    }
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Tcp,
    );
    let client = served.client();
    let root = Arc::new(client.attach("t", "").unwrap());
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let root = Arc::clone(&root);
            thread::spawn(move || {
                for _ in 0..50 {
                    let got = root.read_file(&format!("/f{i}")).unwrap();
                    assert_eq!(got, format!("file {i}").as_bytes());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(served.server.stats().clients, 1);
}

/// `dir` served over tcp, and a root attached with 4 KiB messages.
fn small_messages(
    dir: &std::path::Path,
) -> (
    nf_testkit::ninep::Served<PassthroughFs>,
    nf_ninep_client::Root,
) {
    let served = serve(
        PassthroughFs::new(dir).unwrap(),
        ServerConfig::default(),
        Via::Tcp,
    );
    let client = served.client_with(ClientConfig {
        msize: 4096,
        ..ClientConfig::default()
    });
    let root = client.attach("t", "").unwrap();
    (served, root)
}

#[test]
fn std_io_copy_through_small_messages() {
    let dir = tempfile::tempdir().unwrap();
    let (_served, root) = small_messages(dir.path());
    let data: Vec<u8> = (0..50_000u32).map(|i| (i * 7) as u8).collect();
    let mut out = root.create("/copy", LOpenFlags::WRONLY, 0o644).unwrap();
    std::io::copy(&mut &data[..], &mut out).unwrap();
    out.flush().unwrap();
    drop(out);
    let mut back = Vec::new();
    let mut file = root.open("/copy", LOpenFlags::RDONLY).unwrap();
    // The inherent `read_to_end()` returns a Vec; the `io::Read` one is reached by path.
    Read::read_to_end(&mut file, &mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn errors_say_what_and_where() {
    // Nobody listening.
    let sock = tempfile::tempdir().unwrap();
    let err = Client::connect_unix(sock.path().join("none")).unwrap_err();
    assert!(matches!(err, ClientError::Connect { .. }), "{err}");
    assert!(err.to_string().contains("none"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let root = served.client().attach("t", "").unwrap();
    let err = root.mkdir("/", 0o755).unwrap_err();
    assert!(
        matches!(err, ClientError::BadPath { op: "mkdir", .. }),
        "{err}"
    );
    let err = root.open("/absent", LOpenFlags::RDONLY).unwrap_err();
    assert_eq!(
        err.to_string(),
        "walk /absent: No such file or directory (os error 2)"
    );

    // The server goes away: calls fail with Disconnected, promptly.
    served.server.shutdown(LIMIT);
    let started = std::time::Instant::now();
    let err = root.stat("/").unwrap_err();
    assert!(
        matches!(err, ClientError::Disconnected { .. } | ClientError::Io(_)),
        "{err}"
    );
    assert!(started.elapsed() < LIMIT);
}

#[test]
fn pipelined_reads_fill_a_range_and_a_short_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    fs::write(dir.path().join("big"), &data).unwrap();
    let served = serve(
        PassthroughFs::new(dir.path()).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    // A small msize: the range takes many messages, all in flight at once.
    let client = served.client_with(ClientConfig {
        msize: 8192,
        ..ClientConfig::default()
    });
    let root = client.attach("t", "").unwrap();
    let f = root.open("/big", LOpenFlags::RDONLY).unwrap();
    let (at, len) = (1234, 250_000);
    let buf = Arc::new(Mutex::new(vec![0u8; len + 10]));
    let reads = f.start_read_into(at as u64, &buf, len).unwrap();
    assert_eq!(reads.path(), "/big");
    reads.wait().unwrap();
    let got = buf.lock().unwrap();
    assert!(
        got[..len] == data[at..at + len],
        "the range read back differs"
    );
    assert!(got[len..].iter().all(|&b| b == 0), "nothing past the range");
    drop(got);

    // Into a buffer of numbers: the bytes land in place.
    let words = Arc::new(Mutex::new(vec![0u64; 1000]));
    f.start_read_into(8, &words, 8000).unwrap().wait().unwrap();
    let expect: Vec<u64> = data[8..8008]
        .chunks(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(*words.lock().unwrap(), expect);

    // A buffer too small is refused before anything is sent.
    let err = f.start_read_into(0, &words, 8001).unwrap_err();
    assert!(
        err.to_string().contains("8001 bytes into a buffer of 8000"),
        "{err}"
    );

    // Past the end: the last message comes back short, named; the connection goes on.
    let buf = Arc::new(Mutex::new(vec![0u8; 20_000]));
    let reads = f.start_read_into(290_000, &buf, 20_000).unwrap();
    let err = reads.wait().unwrap_err();
    assert!(matches!(err, ClientError::ShortRead { .. }), "{err}");
    assert!(err.to_string().contains("read /big"), "{err}");
    assert!(
        buf.lock().unwrap()[..10_000] == data[290_000..],
        "what came before the end"
    );

    // Dropped unwaited: the replies are discarded, and the connection goes on.
    let buf = Arc::new(Mutex::new(vec![0u8; 100_000]));
    drop(f.start_read_into(0, &buf, 100_000).unwrap());
    assert_eq!(root.read_file("/big").unwrap().len(), data.len());
}

#[test]
fn reading_ahead_copies_a_file_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..(1u32 << 20) + 123).map(|i| (i % 253) as u8).collect();
    fs::write(dir.path().join("big"), &data).unwrap();
    fs::write(dir.path().join("empty"), b"").unwrap();
    // Small messages: hundreds of reads, several in flight at every moment.
    let (_served, root) = small_messages(dir.path());
    for depth in [1, 2, nf_ninep_client::READ_AHEAD, 64] {
        let mut file = root.open("/big", LOpenFlags::RDONLY).unwrap();
        let mut out = Vec::new();
        let n = file.copy_to_ahead(&mut out, depth).unwrap();
        assert_eq!(n, data.len() as u64, "depth {depth}");
        assert!(out == data, "depth {depth}: the bytes differ");
        let mut empty = root.open("/empty", LOpenFlags::RDONLY).unwrap();
        let mut out = Vec::new();
        assert_eq!(empty.copy_to_ahead(&mut out, depth).unwrap(), 0);
    }
}

#[test]
fn writing_behind_copies_a_host_file_whole_at_any_depth() {
    let dir = tempfile::tempdir().unwrap();
    // Small messages: hundreds of writes, several in flight at every moment.
    let (_served, root) = small_messages(dir.path());
    let data: Vec<u8> = (0..(1u32 << 20) + 123).map(|i| (i % 251) as u8).collect();
    for depth in [1, 2, nf_ninep_client::WRITE_BEHIND, 64] {
        let mut file = root.open_for_write("/out", false).unwrap();
        assert!(file.writes_positional().unwrap());
        let n = file.copy_from_behind(&mut &data[..], depth).unwrap();
        file.close().unwrap();
        assert_eq!(n, data.len() as u64, "depth {depth}");
        assert!(
            fs::read(dir.path().join("out")).unwrap() == data,
            "depth {depth}: the bytes differ"
        );
        let mut empty = root.open_for_write("/empty", false).unwrap();
        assert_eq!(empty.copy_from_behind(&mut &[][..], depth).unwrap(), 0);
    }
    // Opened to append: the server puts each write at the end, so none may overtake.
    let mut file = root.open_for_write("/out", true).unwrap();
    assert!(!file.writes_positional().unwrap());
    file.copy_from_behind(&mut &b"tail"[..], 4).unwrap();
    let mut want = data.clone();
    want.extend_from_slice(b"tail");
    assert!(fs::read(dir.path().join("out")).unwrap() == want);
}

#[test]
fn copying_between_host_files_is_whole_at_any_depth_and_appends_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..(1u32 << 20) + 123).map(|i| (i % 249) as u8).collect();
    fs::write(dir.path().join("big"), &data).unwrap();
    fs::write(dir.path().join("empty"), b"").unwrap();
    // Small messages: hundreds of reads and writes, several of each in flight.
    let (_served, root) = small_messages(dir.path());
    for depth in [1, 2, nf_ninep_client::WRITE_BEHIND, 64] {
        let mut from = root.open("/big", LOpenFlags::RDONLY).unwrap();
        let mut to = root.open_for_write("/copy", false).unwrap();
        let n = from.copy_to_file(&mut to, depth).unwrap();
        to.close().unwrap();
        assert_eq!(n, data.len() as u64, "depth {depth}");
        assert!(
            fs::read(dir.path().join("copy")).unwrap() == data,
            "depth {depth}: the bytes differ"
        );
        let mut empty = root.open("/empty", LOpenFlags::RDONLY).unwrap();
        let mut to = root.open_for_write("/copy", false).unwrap();
        assert_eq!(empty.copy_to_file(&mut to, depth).unwrap(), 0);
    }
    // Opened to append: each write lands at the end, so they go one at a time.
    fs::write(dir.path().join("log"), b"head:").unwrap();
    let mut from = root.open("/big", LOpenFlags::RDONLY).unwrap();
    let mut to = root.open_for_write("/log", true).unwrap();
    from.copy_to_file(&mut to, 8).unwrap();
    let mut want = b"head:".to_vec();
    want.extend_from_slice(&data);
    assert!(fs::read(dir.path().join("log")).unwrap() == want);
}
