//! The test bodies, generic over a transport's [`Fixture`].

use std::any::Any;
use std::time::{Duration, Instant};

use nf_transport::{Messaging, Packet, SendStatus, TransportError, META_MAX};

use crate::traffic::{check, packet};

/// How long any one wait of a test may take before it fails.
const LIMIT: Duration = Duration::from_secs(20);

/// A transport under test: how to build a job of it and stage its faults.
pub trait Fixture {
    /// The transport.
    type T: Messaging;
    /// `n` connected endpoints of one job, ranks `0..n`, with small limits so that
    /// credit runs out after a few packets.
    fn job(n: usize) -> Job<Self::T>;
    /// A job of three in which rank 0 is hostile: ranks 1 and 2 are honest endpoints
    /// (rank 0's slot may be empty).
    fn hostile_job() -> Job<Self::T>;
    /// Makes hostile rank 0 deliver one malformed packet to rank 2.
    fn inject_bad(job: &mut Job<Self::T>);
    /// Ends `ep` as a crash would: no goodbye.
    fn crash(ep: Self::T);
}

/// The endpoints of a job, indexed by rank, and whatever must live as long as they do.
pub struct Job<T> {
    /// Rank `r`'s endpoint, `None` once crashed (or for a hostile rank without one).
    pub eps: Vec<Option<T>>,
    /// Directories, mappings, raw sockets the fixture keeps.
    pub keep: Box<dyn Any>,
}

impl<T: Messaging> Job<T> {
    /// Rank `r`'s endpoint.
    pub fn ep(&mut self, r: usize) -> &mut T {
        self.eps[r].as_mut().expect("rank has an endpoint")
    }

    /// Polls every endpoint but `busy`'s, which must have nothing: under manual
    /// progress (ofi) a sender's packets move only while it polls.
    fn idle(&mut self, busy: &[usize]) {
        for (r, ep) in self.eps.iter_mut().enumerate() {
            if let (Some(ep), false) = (ep, busy.contains(&r)) {
                assert!(ep.poll().unwrap().is_none(), "rank {r} got a packet");
            }
        }
    }

    /// Sends one packet from `src` to `dest`, polling everyone but `src` (and
    /// `src` itself, which must get nothing) while the answer is `NoCredit`.
    pub fn send(&mut self, src: usize, dest: usize, meta: &[u8], payload: &[u8]) {
        let deadline = Instant::now() + LIMIT;
        while self.ep(src).try_send(dest, meta, payload).unwrap() == SendStatus::NoCredit {
            assert!(Instant::now() < deadline, "no credit {src} → {dest}");
            self.idle(&[dest]);
            // The receiver polls only to move the provider; nothing is due yet.
            assert!(self.ep(dest).poll().unwrap().is_none(), "unexpected packet");
        }
    }

    /// Polls `dest` until something other than `Ok(None)` comes, polling the others.
    fn next(&mut self, dest: usize) -> Result<T::Packet, TransportError> {
        let deadline = Instant::now() + LIMIT;
        loop {
            if let Some(p) = self.ep(dest).poll().transpose() {
                return p;
            }
            assert!(Instant::now() < deadline, "nothing arrived at rank {dest}");
            self.idle(&[dest]);
        }
    }
}

/// Every rank of `job` sends `count` packets (of up to `max` bytes) to every other,
/// all polled in turn, each checking order and bytes of what arrives.
fn exchange<T: Messaging>(job: &mut Job<T>, count: u32, max: usize) {
    let n = job.eps.len();
    let (mut sent, mut next) = (vec![vec![0u32; n]; n], vec![vec![0u32; n]; n]);
    let deadline = Instant::now() + LIMIT;
    let done = |sent: &[Vec<u32>], next: &[Vec<u32>]| {
        (0..n).all(|a| (0..n).all(|b| a == b || (sent[a][b] == count && next[b][a] == count)))
    };
    while !done(&sent, &next) {
        assert!(
            Instant::now() < deadline,
            "stuck: sent {sent:?} got {next:?}"
        );
        for me in 0..n {
            for p in (0..n).filter(|&p| p != me) {
                if sent[me][p] < count {
                    let (meta, payload) = packet(me, p, sent[me][p], max);
                    if job.ep(me).try_send(p, &meta, &payload).unwrap() == SendStatus::Sent {
                        sent[me][p] += 1;
                    }
                }
            }
            while let Some(pkt) = job.ep(me).poll().unwrap() {
                check(&pkt, me, &mut next[me], max);
            }
        }
    }
}

/// Per-pair order between three ranks sending to each other at once.
pub fn order<F: Fixture>() {
    let mut job = F::job(3);
    exchange(&mut job, 300, 256);
}

/// Packets from empty to `max_payload`, both ways at once, arrive whole.
pub fn sizes_both_ways<F: Fixture>() {
    let mut job = F::job(2);
    let max = job.ep(0).max_payload();
    exchange(&mut job, 150, max);
}

/// Two senders flood a receiver that does not poll until both get `NoCredit`; then
/// everything arrives, in order, and credit comes back.
pub fn credit_and_back_pressure<F: Fixture>() {
    let mut job = F::job(3);
    let max = job.ep(2).max_payload();
    let mut next = [0u32; 3];
    // One packet each first: a connection made on first use (ofi) is up.
    for s in 0..2 {
        let (meta, payload) = packet(s, 2, 0, max);
        job.send(s, 2, &meta, &payload);
        check(&job.next(2).unwrap(), 2, &mut next, max);
    }
    // An idle poll everywhere: the receiver publishes what it freed (shm does lazily).
    job.idle(&[]);
    let mut sent = [1u32; 2];
    for (s, sent) in sent.iter_mut().enumerate() {
        let deadline = Instant::now() + LIMIT;
        loop {
            assert!(
                Instant::now() < deadline,
                "sender {s} never ran out of credit"
            );
            let (meta, payload) = packet(s, 2, *sent, max);
            match job.ep(s).try_send(2, &meta, &payload).unwrap() {
                SendStatus::Sent => *sent += 1,
                SendStatus::NoCredit => break,
            }
            // The sender makes progress on its own receives; nothing comes.
            assert!(job.ep(s).poll().unwrap().is_none());
        }
        assert!(*sent > 1, "sender {s} had no credit at all");
    }
    let deadline = Instant::now() + LIMIT;
    while next[..2] != sent {
        assert!(
            Instant::now() < deadline,
            "flood incomplete: {next:?} of {sent:?}"
        );
        job.idle(&[2]);
        while let Some(pkt) = job.ep(2).poll().unwrap() {
            check(&pkt, 2, &mut next, max);
        }
    }
    for (s, &seq) in sent.iter().enumerate() {
        let (meta, payload) = packet(s, 2, seq, max);
        job.send(s, 2, &meta, &payload);
        check(&job.next(2).unwrap(), 2, &mut next, max);
    }
}

/// Oversized packets and unknown destinations are typed errors, before anything is
/// sent.
pub fn bad_arguments<F: Fixture>() {
    let mut job = F::job(2);
    let ep = job.ep(0);
    let big = vec![0u8; ep.max_payload() + 1];
    assert!(matches!(
        ep.try_send(1, b"", &big),
        Err(TransportError::TooLarge { .. })
    ));
    assert!(matches!(
        ep.try_send(1, &[0; META_MAX + 1], b""),
        Err(TransportError::TooLarge { .. })
    ));
    assert!(matches!(
        ep.try_send(2, b"", b""),
        Err(TransportError::NoPeer { dest: 2, size: 2 })
    ));
    let (meta, payload) = packet(0, 1, 0, 0);
    job.send(0, 1, &meta, &payload);
    check(&job.next(1).unwrap(), 1, &mut [0, 0], 0);
}

/// A malformed packet is reported (not delivered), and honest traffic goes on.
pub fn bad_frames<F: Fixture>() {
    let mut job = F::hostile_job();
    F::inject_bad(&mut job);
    match job.next(2) {
        Err(TransportError::Corrupt { .. } | TransportError::BadPacket { .. }) => {}
        Err(TransportError::PeerLost { peer: 0, why }) => {
            assert!(why.contains("malformed"), "{why}")
        }
        Err(e) => panic!("a malformed packet gave {e}"),
        Ok(p) => panic!("a malformed packet was delivered (from {})", p.src()),
    }
    let mut next = [0u32; 3];
    for seq in 0..100 {
        let (meta, payload) = packet(1, 2, seq, 1024);
        job.send(1, 2, &meta, &payload);
        check(&job.next(2).unwrap(), 2, &mut next, 1024);
    }
}

/// A peer that crashes is reported lost once, after what it sent before, and every
/// later send to it fails; nothing hangs.
pub fn peer_loss<F: Fixture>() {
    let mut job = F::job(2);
    let mut next = [0u32; 2];
    for seq in 0..20 {
        let (meta, payload) = packet(1, 0, seq, 32);
        job.send(1, 0, &meta, &payload);
        check(&job.next(0).unwrap(), 0, &mut next, 32);
    }
    F::crash(job.eps[1].take().unwrap());
    let r0 = job.ep(0);
    let deadline = Instant::now() + LIMIT;
    let lost = |e: TransportError| match e {
        TransportError::PeerLost { peer: 1, .. } => {}
        e => panic!("expected rank 1 lost, got {e}"),
    };
    loop {
        assert!(Instant::now() < deadline, "the crash was never reported");
        match r0.try_send(1, b"ping", b"") {
            Ok(_) => {}
            Err(e) => break lost(e),
        }
        match r0.poll() {
            Ok(None) => {}
            Ok(Some(p)) => panic!("a packet from {} after the crash", p.src()),
            Err(e) => break lost(e),
        }
    }
    for _ in 0..3 {
        assert!(matches!(
            r0.try_send(1, b"x", b""),
            Err(TransportError::PeerLost { peer: 1, .. })
        ));
    }
    let reported = (0..100).filter(|_| r0.poll().is_err()).count();
    assert!(reported <= 1, "the loss was reported {reported} more times");
}
