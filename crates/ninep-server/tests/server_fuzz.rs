//! Malformed input against a live server: 300 connections over a unix socket, each a
//! valid `Tversion` / `Tattach` / `Twalk`, then 20 frames mutated from real ones
//! (`nf_testkit::ninep::Mutator`, fixed seed) with their size field made true, then a sync
//! request whose reply is awaited, then one more mutated frame as it came (its size may
//! be anything: short, beyond msize, beyond the stream) and end of stream. The server
//! must answer only with well-formed replies (or close the connection), never hang,
//! never let a request escape the export, and hold nothing once every client is gone;
//! a fresh client is served normally afterwards.

use std::fs;
use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nf_ninep::*;
use nf_ninep_server::{ListenAddr, ServerConfig};
use nf_ninep_trees::PassthroughFs;
use nf_testkit::ninep::{encoded_samples, serve, wait_for, Mutator, Via};

const CONNECTIONS: usize = 300;
const FRAMES_PER_CONNECTION: usize = 20;
/// The longest a connection may take to be answered and closed.
const PER_CONNECTION: Duration = Duration::from_secs(10);

/// A valid start: version at msize 8192, attach fid 1 (as the samples' fids), walk
/// fid 2 to `f`.
fn preamble() -> Vec<u8> {
    let mut out = Vec::new();
    let msgs: [(u16, Tmessage); 3] = [
        (
            NOTAG,
            Tversion {
                msize: 8192,
                version: VERSION.into(),
            }
            .into(),
        ),
        (
            1,
            Tattach {
                fid: 1,
                afid: NOFID,
                uname: "fuzz".into(),
                aname: String::new(),
                n_uname: NONUNAME,
            }
            .into(),
        ),
        (
            2,
            Twalk {
                fid: 1,
                newfid: 2,
                wnames: vec!["f".into()],
            }
            .into(),
        ),
    ];
    for (tag, m) in msgs {
        encode_frame(tag, &m, 8192, &mut out).unwrap();
    }
    out
}

/// Tag of the sync request (a clunk of a fid nobody uses).
const SYNC_TAG: u16 = 0xfffe;

/// `bytes` with a true size field (padded to a whole header if shorter).
fn framed(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.resize(bytes.len().max(HEADER_SIZE), 0);
    let size = (bytes.len() as u32).to_le_bytes();
    bytes[..4].copy_from_slice(&size);
    bytes
}

/// Replies read from `conn` into `buf`: whole frames are decoded (each must be a
/// well-formed reply) and pushed to `replies`.
fn take_replies(buf: &mut Vec<u8>, replies: &mut Vec<Frame<Rmessage>>, what: &str) {
    let decoder = FrameDecoder::new(1 << 20);
    loop {
        match decoder.decode::<Rmessage>(buf) {
            Ok(Some((frame, used))) => {
                replies.push(frame);
                buf.drain(..used);
            }
            Ok(None) => return,
            Err(e) => panic!("{what}: the server sent bytes that are not a reply: {e}"),
        }
    }
}

/// Sends `framed`, waits for the sync reply (or a close), sends `tail`, half-closes,
/// and reads every reply until the server closes. Returns the replies.
fn exchange(
    sock: &std::path::Path,
    framed: &[u8],
    tail: &[u8],
    what: &str,
) -> Vec<Frame<Rmessage>> {
    let mut conn = UnixStream::connect(sock).unwrap();
    conn.set_read_timeout(Some(PER_CONNECTION)).unwrap();
    let (mut buf, mut replies) = (Vec::new(), Vec::new());
    // The server may close early (e.g. a mutated Tversion with a tiny msize makes the
    // next frame too large): failed writes are fine, the replies tell.
    let mut sync = Vec::new();
    let clunk = Tmessage::from(Tclunk { fid: 0xffff_fff0 });
    encode_frame(SYNC_TAG, &clunk, 8192, &mut sync).unwrap();
    let _ = conn.write_all(framed).and_then(|()| conn.write_all(&sync));
    let mut chunk = [0u8; 65536];
    let mut open = true;
    while open && !replies.iter().any(|f: &Frame<Rmessage>| f.tag == SYNC_TAG) {
        match conn.read(&mut chunk) {
            Ok(0) => open = false,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => open = false,
            Err(e) => panic!("{what}: no sync reply and no close within {PER_CONNECTION:?}: {e}"),
        }
        take_replies(&mut buf, &mut replies, what);
    }
    let _ = conn.write_all(tail);
    let _ = conn.shutdown(Shutdown::Write);
    match conn.read_to_end(&mut buf) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("{what}: the server did not close within {PER_CONNECTION:?}: {e}"),
    }
    take_replies(&mut buf, &mut replies, what);
    assert!(buf.is_empty(), "{what}: a partial reply: {buf:02x?}");
    replies
}

#[test]
fn mutated_streams_get_replies_or_a_close_and_leak_nothing() {
    let top = tempfile::tempdir().unwrap();
    let export = top.path().join("export");
    fs::create_dir(&export).unwrap();
    fs::write(export.join("f"), "some content\n").unwrap();
    fs::create_dir(export.join("d")).unwrap();
    fs::write(top.path().join("outside"), "must stay\n").unwrap();
    let served = serve(
        PassthroughFs::new(&export).unwrap(),
        ServerConfig::default(),
        Via::Unix,
    );
    let sock = match served.addr() {
        ListenAddr::Unix(p) => p.clone(),
        other => panic!("{other:?}"),
    };

    let corpus = encoded_samples();
    let seed = 0x5e_5e_9f;
    let mut m = Mutator::new(seed);
    let mut answered = 0;
    for c in 0..CONNECTIONS {
        let mut stream = preamble();
        for _ in 0..FRAMES_PER_CONNECTION {
            stream.extend(framed(m.mutate(&corpus)));
        }
        let tail = m.mutate(&corpus);
        let what = format!("seed {seed:#x}, connection {c}");
        let replies = exchange(&sock, &stream, &tail, &what);
        assert!(
            replies.first().is_some_and(|f| f.tag == NOTAG),
            "{what}: the valid Tversion was not answered first: {:?}",
            replies.first()
        );
        answered += replies.len();
    }
    // Most mutated requests were answered: they reached the server's checks and trees.
    assert!(
        answered > CONNECTIONS * FRAMES_PER_CONNECTION / 2,
        "only {answered} replies"
    );

    // Nothing is held once the clients are gone; nothing outside the export changed.
    assert!(
        wait_for(|| {
            let s = served.server.stats();
            s.clients == 0 && s.fids == 0 && s.in_flight == 0
        }),
        "{:?}",
        served.server.stats()
    );
    assert_eq!(
        fs::read_to_string(top.path().join("outside")).unwrap(),
        "must stay\n"
    );
    let names: Vec<_> = fs::read_dir(top.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    // And a fresh client is served.
    let root = served.client().attach("after", "").unwrap();
    assert!(root.stat("/").unwrap().is_dir());
}
