//! Attack: requests that wait hold their payloads (the defence: a budget for every
//! per-connection buffer). An unprivileged account sends a root `nf serve` writes of a
//! megabyte each into a full pipe that nobody reads: each waits in the server with its
//! data, up to 256 per connection. Without a memory budget the server held all of them
//! (160 MB for 160 writes); with one, the connection holds at most `max_conn_memory`
//! (32 MiB) and the rest are answered `ENOMEM`. The server runs in this process, so its
//! resident memory is this process's; this file holds one test so that nothing else
//! runs beside it.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use nf_ninep::errno::ENOMEM;
use nf_ninep::{LOpenFlags, Rmessage, Twrite};
use nf_ninep_client::{Client, ClientError, PendingCall};
use nf_ninep_server::ServerConfig;
use nf_node::{Daemon, NodeConfig, ServeConfig};
use nf_testkit::users::{as_user, test_account};

/// Writes sent, each of a whole message's worth of data.
const WRITES: usize = 160;
/// Growth allowed: twice the default connection budget (32 MiB), half of what the
/// waiting writes would hold without one.
const BOUND: usize = 64 << 20;
/// What may stay once the attacker has left.
const RETURNED: usize = 12 << 20;

/// This process's resident memory, in bytes.
fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// The reply to `call` if one came within `within`.
fn answer(call: &PendingCall, within: Duration) -> Option<Result<Rmessage, ClientError>> {
    call.wait_timeout(within).transpose()
}

#[test]
fn a_user_cannot_make_the_server_hold_their_waiting_writes_without_bound() {
    let user = test_account().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = dir.path().join("run/nf.sock");
    let daemon = Daemon::start(&ServeConfig {
        unix: Some(socket.clone()),
        node: NodeConfig {
            mem_registry: Some(dir.path().join("mem")),
            ..NodeConfig::default()
        },
        limits: ServerConfig::default(),
        ..ServeConfig::default()
    })
    .unwrap();
    for (p, mode) in [(socket.parent().unwrap(), 0o755), (&socket, 0o777)] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let before = rss();

    let client = as_user(&user, || Client::connect_unix(&socket)).unwrap();
    let me = client.attach(&user.name, "").unwrap();
    let mut sink = me.open("/pipe/sink", LOpenFlags::WRONLY).unwrap();
    let chunk = vec![7u8; (client.msize() - 24) as usize];
    // Fill the pipe (64 KiB): every write after this one waits for a reader.
    assert!(std::io::Write::write(&mut sink, &chunk).unwrap() > 0);
    let writes: Vec<PendingCall> = (0..WRITES)
        .map(|_| {
            client
                .start(Twrite {
                    fid: sink.number(),
                    offset: 0,
                    data: chunk.clone().into(),
                })
                .unwrap()
        })
        .collect();
    // Every write is either waiting in the server or answered (an answer is taken
    // once, so they are kept as they come).
    let mut answers: Vec<Option<Rmessage>> = vec![None; WRITES];
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        for (w, a) in writes.iter().zip(answers.iter_mut()) {
            if a.is_none() {
                *a = answer(w, Duration::ZERO).map(|r| r.unwrap());
            }
        }
        let waiting = daemon.server().stats().in_flight;
        let answered = answers.iter().flatten().count();
        if waiting + answered == WRITES {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{waiting} waiting, {answered} answered"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let during = rss();
    // Another user is answered meanwhile (5 s: against a hang, not a timing claim).
    let asked = Instant::now();
    let root = Client::connect_unix(&socket)
        .unwrap()
        .attach("root", "")
        .unwrap();
    assert!(root.read_file("/status").is_ok());
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    let refused = answers
        .iter()
        .flatten()
        .filter(|r| matches!(r, Rmessage::Rlerror(e) if e.ecode == ENOMEM))
        .count();
    eprintln!(
        "VmRSS: {before} before, {during} with {WRITES} writes sent; {refused} answered ENOMEM"
    );
    assert!(
        refused > 0,
        "writes past the connection's budget are refused"
    );
    let grew = during.saturating_sub(before);
    assert!(
        grew < BOUND,
        "the server grew by {grew} bytes holding waiting writes (bound {BOUND})"
    );
    drop((writes, sink, me, client, root));
    // Once the attacker has gone, the memory goes back to the system (the server trims
    // glibc's arenas at most once a second after a connection ends).
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut after = rss();
    while after.saturating_sub(before) >= RETURNED && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        after = rss();
    }
    eprintln!("VmRSS after the attacker left: {after}");
    assert!(
        after.saturating_sub(before) < RETURNED,
        "{} bytes stayed after the attacker left (bound {RETURNED})",
        after.saturating_sub(before)
    );
    daemon.shutdown(Duration::from_secs(5));
}
