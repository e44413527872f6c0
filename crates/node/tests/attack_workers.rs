//! Attack: the server's worker threads (no client can stop the others).
//! A request that blocks in a tree — a read of a pipe nobody writes — holds a worker
//! while it waits. When the workers were shared first come, first served, one
//! unprivileged account parking more such reads than there are workers left every
//! other user's blocking request waiting for ever. Here an account parks twice
//! `max_workers` reads of its own pipe over several connections; another account's
//! pipe read, which its own write then satisfies, must be answered, and the
//! attacker's own waiting request must still be flushed.
//!
//! The bound is 5 s, not the 1 s a user would notice: these tests share a loaded 2-core
//! machine with others, and what they must catch is a hang, not a delay.

mod support;

use std::time::{Duration, Instant};

use nf_ninep::message::Tread;
use nf_ninep::{LOpenFlags, Rmessage};
use nf_ninep_client::PendingCall;
use nf_ninep_server::ServerConfig;
use nf_testkit::users::{second_test_account, test_account};
use support::{eventually, Node};

/// How long another user may wait for an answer during the attack (module docs).
const ANSWERED_WITHIN: Duration = Duration::from_secs(5);
/// Workers of the server under attack: 4 per user, the last 2 kept for users running
/// fewer than 4.
const WORKERS: usize = 16;
/// The attacker's connections, and the reads each parks: twice `WORKERS`.
const CONNECTIONS: usize = 4;
const READS: usize = 8;

#[test]
fn a_user_parking_more_blocking_reads_than_workers_cannot_stall_another_users_read() {
    let (a, b) = (test_account().unwrap(), second_test_account().unwrap());
    let node = Node::for_users(ServerConfig::default().max_workers(WORKERS));
    let server = node.daemon().server();

    // A parks reads of its own pipe, which nobody will write.
    let sessions: Vec<_> = (0..CONNECTIONS).map(|_| node.session(&a)).collect();
    let mut pipes = Vec::new();
    let mut parked: Vec<PendingCall> = Vec::new();
    for s in &sessions {
        let pipe = s
            .open(&format!("/pipe/park-{}", a.name), LOpenFlags::RDONLY)
            .unwrap();
        for _ in 0..READS {
            let read = Tread {
                fid: pipe.number(),
                offset: 0,
                count: 16,
            };
            parked.push(s.client().start(read).unwrap());
        }
        pipes.push(pipe);
    }
    let total = CONNECTIONS * READS;
    eventually("the attacker's reads are in flight", || {
        server.stats().in_flight == total
    });
    let stats = server.stats();
    eprintln!("during the attack: {stats:?}");
    assert!(
        stats.workers <= WORKERS,
        "{} workers for {WORKERS}",
        stats.workers
    );

    // B reads its own pipe, then writes it: the read needs a worker to wait on.
    let me = node.session(&b);
    let name = format!("/pipe/meet-{}", b.name);
    let reader = me.open(&name, LOpenFlags::RDONLY).unwrap();
    let asked = Instant::now();
    let read = me
        .client()
        .start(Tread {
            fid: reader.number(),
            offset: 0,
            count: 16,
        })
        .unwrap();
    let writer = me.open(&name, LOpenFlags::WRONLY).unwrap();
    writer.write_at(b"hi", 0).unwrap();
    let got = read.wait_timeout(ANSWERED_WITHIN).unwrap();
    let took = asked.elapsed();
    eprintln!("another user's pipe read answered in {took:?}");
    match got {
        Some(Rmessage::Rread(r)) => assert_eq!(r.data.as_slice(), b"hi"),
        other => panic!(
            "another user's pipe read was not answered within {ANSWERED_WITHIN:?} while \
             {total} reads were parked on {WORKERS} workers: {other:?}"
        ),
    }
    // A's excess waits in A's own queue: A runs its share, never more.
    let waiting = server.stats().waiting;
    assert!(
        waiting >= total - WORKERS / 4,
        "{waiting} of the attacker's {total} reads wait for a worker"
    );

    // A's own waiting request is flushed at once (the last one parked never started).
    let last = parked.pop().unwrap();
    let flushed = last.flush_within(Some(ANSWERED_WITHIN));
    assert!(
        matches!(flushed, Ok(None)),
        "a waiting read is flushed, and never answered: {flushed:?}"
    );

    // A leaves: every one of its connections ends, waiting requests and all.
    drop(parked);
    drop(pipes);
    drop(sessions);
    eventually("the attacker's connections end", || {
        server.stats().clients == 1
    });
    drop((read, reader, writer, me));
}
