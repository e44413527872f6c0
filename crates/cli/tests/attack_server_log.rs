//! Attack: the 9P framework's own log lines in a real `nf serve` run as root (no client
//! can stop the others). The server logged the version string a client
//! sent unescaped, so a client could start a line of its own that reads like the
//! server's, and it logged a warning for every bad frame, every undecodable request
//! and every deadline on every connection, so a client could flood the log (and
//! `/log`, which every user reads). An unprivileged account sends a forged version
//! string and two bad frames on each of 500 connections; the log must hold no
//! forged line and only a bounded number of lines about them.

mod serve_support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use nf_testkit::users::{as_user, test_account};
use serve_support::{log_text, Served};

/// The line a client tries to add to the log, after a newline in its version string.
const FORGED: &str = "2026-01-01T00:00:00.000000Z  WARN nf_node::access: forged: uid 0 attached";
/// Connections the attacker opens, one after another.
const CONNECTIONS: usize = 500;

/// A 9P frame: size, type, tag `0xffff`, body.
fn frame(ty: u8, body: &[u8]) -> Vec<u8> {
    let size = u32::try_from(7 + body.len()).unwrap();
    let mut f = size.to_le_bytes().to_vec();
    f.push(ty);
    f.extend_from_slice(&0xffffu16.to_le_bytes());
    f.extend_from_slice(body);
    f
}

/// `Tversion` (type 100) with msize 8192 and `version`.
fn tversion(version: &str) -> Vec<u8> {
    let mut body = 8192u32.to_le_bytes().to_vec();
    body.extend_from_slice(&u16::try_from(version.len()).unwrap().to_le_bytes());
    body.extend_from_slice(version.as_bytes());
    frame(100, &body)
}

#[test]
fn a_client_can_neither_forge_nor_flood_the_servers_log_lines() {
    let user = test_account().unwrap();
    // At the server's own default level, so that what it logs about versions shows.
    let s = Served::start_logging("info", &[]);
    std::fs::set_permissions(s.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = log_text(&s).lines().count();

    let version = format!("9P2000.L\n{FORGED}");
    let mut attack = tversion(&version);
    // A type no 9P2000.L message has (undecodable, answered), then a size field below
    // the 7-byte header (unreadable: the server closes the connection).
    attack.extend(frame(0xff, &[]));
    attack.extend(3u32.to_le_bytes());
    let started = std::time::Instant::now();
    for _ in 0..CONNECTIONS {
        let mut sock = as_user(&user, || UnixStream::connect(&s.socket)).expect("connect");
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        sock.write_all(&attack).unwrap();
        // Until the server closes it (a bound against hangs: the read timeout).
        let mut sink = Vec::new();
        let _ = sock.read_to_end(&mut sink);
    }

    // Each of the three kinds may log a line per 10 s window the attack spanned (one
    // more for the window it ended in, on a slow machine).
    let windows = 2 + started.elapsed().as_secs() / 10;
    let most = 3 * usize::try_from(windows).unwrap();
    let text = log_text(&s);
    assert!(
        !text.lines().any(|l| l.starts_with(FORGED)),
        "a client's version string made a line of its own:\n{text}"
    );
    assert!(
        text.contains("refused 9P version \"9P2000.L\\n2026-01-01"),
        "the refused version is logged, escaped:\n{text}"
    );
    let theirs = text
        .lines()
        .skip(before)
        .filter(|l| l.contains("9P connection"))
        .count();
    let added = text.lines().count() - before;
    eprintln!("{added} lines logged for {CONNECTIONS} connections:\n{text}");
    assert!(
        theirs <= most && added <= most + 10,
        "{theirs} lines about connections, {added} in all, for {CONNECTIONS} bad ones (at most {most}):\n{text}"
    );
}
