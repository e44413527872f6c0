//! Lanes: the extra tcp connections per pair of ranks that large messages are
//! striped across (`proto/stripe.rs`).
//!
//! With `NF_TCP_LANES` = L > 1, wire-up opens L − 1 tcp transports besides the main
//! one: the lanes, each with its own listener, progress thread and one connection
//! per pair, reaching the same peers as the main transport. Their connections are
//! never held by the rank's polls (`hot_for` 0), so each lane's progress thread
//! reads its stream: L kernel copies can run on L threads at once. Lanes carry
//! nothing but pieces of striped messages; liveness is the main connection's job.
//!
//! The striping protocol — how a message is cut, its `PART`s and `LEAD`, and the
//! order argument — is `proto/stripe.rs`; this file is the lanes it runs on.
//!
//! Receiving: lanes are read only when `Net::poll` delivers a lead ([`Lanes::assemble`]).
//! For parts k = 0 … parts − 1 in turn, take the next part of the sender from lane
//! k mod (L − 1): from the stash, else by polling that lane, stashing what other
//! senders' parts come first (per lane and sender, in arrival order), and add it to
//! the message's `Assembly` (which checks its stripe id and offset).
//!
//! Deadlock: a receiver waiting for parts polls the lanes only, and runs no handler.
//! The parts it waits for were handed to the sender's lane transports before the
//! lead was sent; from there the sender's lane progress threads write them out and
//! the receiver's lane progress threads read them into the lane inboxes, which the
//! wait drains — nobody's owner has to act, so the wait ends whatever the sender
//! does meanwhile. A part that does not come within the dead-peer time, or a lane
//! that reports its connection to the sender lost, is the sender's loss: an error
//! naming it, never a hang. With one lane (the default) none of this exists: no
//! plan chooses striping (`proto/plan.rs`), and polls do nothing new.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use nf_transport::tcp::{PeerState, TcpPacket, TcpTransport};
use nf_transport::{Messaging, Packet, SendStatus, TransportError};

use crate::buf::RecvBuf;
use crate::error::CoreError;
use crate::proto::stripe::Assembly;

/// How long a wait for a part sleeps at most between looks at the lane.
const PART_PARK: Duration = Duration::from_millis(1);

/// Parts read from the lanes before their lead asked for them: per lane and sender,
/// in arrival order (each a FIFO, as each lane's connection to a sender is).
pub(crate) struct Stash<P> {
    by_lane: Vec<Vec<VecDeque<P>>>,
}

impl<P: Packet> Stash<P> {
    /// An empty stash for `lanes` lanes and a job of `size` ranks.
    pub(crate) fn new(lanes: usize, size: usize) -> Stash<P> {
        Stash {
            by_lane: (0..lanes)
                .map(|_| (0..size).map(|_| VecDeque::new()).collect())
                .collect(),
        }
    }

    /// Keeps `p`, read from `lane`, behind its sender's earlier ones.
    pub(crate) fn put(&mut self, lane: usize, p: P) {
        self.by_lane[lane][p.src()].push_back(p);
    }

    /// The oldest part from `src` kept for `lane`.
    pub(crate) fn take(&mut self, lane: usize, src: usize) -> Option<P> {
        self.by_lane[lane][src].pop_front()
    }
}

/// This rank's lanes: the extra tcp transports, their stash, the stripe ids.
pub(crate) struct Lanes {
    lanes: Vec<TcpTransport>,
    stash: Stash<TcpPacket>,
    /// Per destination, the id of our next striped message to it.
    next_id: Vec<u32>,
    /// Ranks the lanes connect us to (those reached over tcp for some sizes).
    reach: Vec<bool>,
    /// How long a part may take after its lead (the dead-peer time).
    wait_limit: Duration,
    /// Striped messages sent.
    pub sent: u64,
    /// Striped messages assembled.
    pub received: u64,
}

impl Lanes {
    /// Connected `lanes` of a job of `size` ranks, reaching the ranks in `reach`.
    pub(crate) fn new(lanes: Vec<TcpTransport>, reach: Vec<bool>, wait_limit: Duration) -> Lanes {
        let size = reach.len();
        Lanes {
            stash: Stash::new(lanes.len(), size),
            lanes,
            next_id: vec![0; size],
            reach,
            wait_limit,
            sent: 0,
            received: 0,
        }
    }

    /// How many lanes (besides the main connection).
    pub(crate) fn count(&self) -> usize {
        self.lanes.len()
    }

    /// Whether the lanes connect us to `rank`.
    pub(crate) fn reaches(&self, rank: usize) -> bool {
        self.reach.get(rank).copied().unwrap_or(false)
    }

    /// A fresh stripe id for a message to `dest`.
    pub(crate) fn next_id(&mut self, dest: usize) -> u32 {
        let id = self.next_id[dest];
        self.next_id[dest] = id.wrapping_add(1);
        id
    }

    /// Queues one part on `lane` to `dest`.
    pub(crate) fn try_send(
        &mut self,
        lane: usize,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError> {
        self.lanes[lane].try_send(dest, meta, payload)
    }

    /// Where each lane listens, as wire-up published it.
    pub(crate) fn addresses(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.lanes.iter().map(TcpTransport::local_addr)
    }

    /// Whether some lane's connection to `rank` broke.
    pub(crate) fn lost(&self, rank: usize) -> bool {
        self.reaches(rank)
            && self
                .lanes
                .iter()
                .any(|l| l.peer_state(rank) == PeerState::Lost)
    }

    /// Puts stripe `id` from `src` together: its `parts` parts from the lanes (see
    /// the module doc), then `last`, the lead's piece, into `buf` (room for `total`).
    pub(crate) fn assemble(
        &mut self,
        src: usize,
        id: u32,
        parts: usize,
        buf: RecvBuf,
        total: usize,
        last: &[u8],
    ) -> Result<RecvBuf, CoreError> {
        let protocol = |why: String| CoreError::Protocol { src, why };
        if parts > 0 && !self.reaches(src) {
            return Err(protocol(format!(
                "a striped message with {parts} parts on tcp lanes we do not share"
            )));
        }
        let mut whole = Assembly::new(id, total, parts, buf);
        while let Some(lane) = whole.next_lane(self.count()) {
            let part = self.next_part(src, lane)?;
            whole.add(part.meta(), part.payload()).map_err(protocol)?;
        }
        let buf = whole.finish(last).map_err(protocol)?;
        self.received += 1;
        Ok(buf)
    }

    /// The next part from `src` on `lane`: stashed, or read from the lane (stashing
    /// other senders' parts), waiting at most `wait_limit`.
    fn next_part(&mut self, src: usize, lane: usize) -> Result<TcpPacket, TransportError> {
        let start = Instant::now();
        let mut closing = false;
        loop {
            if let Some(p) = self.stash.take(lane, src) {
                return Ok(p);
            }
            match self.lanes[lane].poll() {
                Ok(Some(p)) if p.src() == src => return Ok(p),
                Ok(Some(p)) => {
                    self.stash.put(lane, p);
                    continue;
                }
                Ok(None) => {}
                // Another peer's loss: the main connection and the liveness checks
                // report it; this wait is about `src`.
                Err(TransportError::PeerLost { peer, why }) if peer != src => {
                    tracing::warn!(peer, lane, why, "tcp lane to a peer lost");
                    continue;
                }
                Err(e) => return Err(e),
            }
            let lost = |why: String| TransportError::PeerLost { peer: src, why };
            if self.lanes[lane].peer_state(src) != PeerState::Up {
                // What it sent before closing is read before the state changes; one
                // more empty look makes sure.
                if closing {
                    return Err(lost(format!(
                        "its tcp lane {} closed before the parts of a striped message came",
                        lane + 1
                    )));
                }
                closing = true;
            }
            if start.elapsed() > self.wait_limit {
                return Err(lost(format!(
                    "a part of a striped message did not arrive on tcp lane {} within {:?}",
                    lane + 1,
                    self.wait_limit
                )));
            }
            self.lanes[lane].park(PART_PARK)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::stripe::{cut, MIN_PIECE};
    use crate::protocol::Meta;

    /// A packet as a lane delivers it (the world's owned copy of one will do).
    type Pkt = crate::proto::HeldPacket;

    fn part(src: usize, id: u32, offset: usize, bytes: &[u8]) -> Pkt {
        Pkt {
            src,
            meta: Meta::Part {
                id,
                offset: offset as u64,
            }
            .encode()
            .as_bytes()
            .to_vec(),
            payload: bytes.to_vec(),
        }
    }

    /// What a sender puts on `lanes` lanes for stripe `id` of `msg`: per lane, its
    /// parts in order; and the lead's piece.
    fn striped(src: usize, id: u32, msg: &[u8], lanes: usize) -> (Vec<Vec<Pkt>>, Vec<u8>, usize) {
        let c = cut(msg.len(), lanes + 1, 1 << 20);
        let pieces = c.len() - 1;
        let mut on: Vec<Vec<Pkt>> = (0..lanes).map(|_| Vec::new()).collect();
        for k in 0..pieces - 1 {
            on[k % lanes].push(part(src, id, c[k], &msg[c[k]..c[k + 1]]));
        }
        (on, msg[c[pieces - 1]..].to_vec(), pieces - 1)
    }

    /// Assembles stripe `id` of `total` B from `src` with parts from `stash`.
    fn assemble(
        stash: &mut Stash<Pkt>,
        lanes: usize,
        src: usize,
        id: u32,
        parts: usize,
        last: &[u8],
        total: usize,
    ) -> Result<Vec<u8>, String> {
        let mut a = Assembly::new(id, total, parts, RecvBuf::with_room(Vec::new(), total));
        while let Some(lane) = a.next_lane(lanes) {
            let p = stash.take(lane, src).ok_or("a part is missing")?;
            a.add(p.meta(), p.payload())?;
        }
        Ok(a.finish(last)?.filled().to_vec())
    }

    fn message(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
    }

    #[test]
    fn interleaved_senders_parts_come_out_whole_and_in_each_senders_order() {
        let lanes = 3;
        let mut stash = Stash::new(lanes, 3);
        // Two senders, two messages each; their parts interleave on every lane,
        // each sender's in its send order.
        let msgs: Vec<(usize, u32, Vec<u8>)> = vec![
            (1, 0, message(5 * MIN_PIECE + 3, 1)),
            (2, 0, message(2 * MIN_PIECE, 2)),
            (1, 1, message(3 * MIN_PIECE + 1, 3)),
            (2, 1, message(9 * MIN_PIECE + 9, 4)),
        ];
        let mut leads = Vec::new();
        for (src, id, m) in &msgs {
            let (on, last, parts) = striped(*src, *id, m, lanes);
            for (lane, ps) in on.into_iter().enumerate() {
                for p in ps {
                    stash.put(lane, p);
                }
            }
            leads.push((*src, *id, parts, last, m.len()));
        }
        // Leads of different senders may come in either order; each sender's in its own.
        for i in [1, 0, 3, 2] {
            let (src, id, parts, last, total) = &leads[i];
            let got = assemble(&mut stash, lanes, *src, *id, *parts, last, *total).unwrap();
            assert!(got == msgs[i].2, "message {i} differs");
        }
        for lane in 0..lanes {
            for src in 0..3 {
                assert!(stash.take(lane, src).is_none(), "a part left over");
            }
        }
    }

    /// Rank 0's lane and rank 1's, connected over loopback.
    fn lane_pair() -> (TcpTransport, TcpTransport) {
        let cfg = nf_transport::tcp::TcpConfig {
            hot_for: Duration::ZERO,
            ..Default::default()
        };
        let mut a = TcpTransport::listen(cfg.clone(), 0, 2).unwrap();
        let mut b = TcpTransport::listen(cfg, 1, 2).unwrap();
        let (at_a, at_b) = (a.local_addr(), b.local_addr());
        let dial = std::thread::spawn(move || {
            b.connect(&[Some(at_a), None]).unwrap();
            b
        });
        a.connect(&[None, Some(at_b)]).unwrap();
        (a, dial.join().unwrap())
    }

    /// The error of an assembly that had to fail.
    fn failed(r: Result<RecvBuf, CoreError>) -> CoreError {
        match r {
            Ok(_) => panic!("assembled a message that must fail"),
            Err(e) => e,
        }
    }

    fn lead_buf(total: usize) -> RecvBuf {
        RecvBuf::with_room(Vec::new(), total)
    }

    #[test]
    fn parts_over_a_real_lane_are_assembled_and_missing_ones_are_the_senders_error() {
        let (a, mut b) = lane_pair();
        let mut lanes = Lanes::new(vec![a], vec![false, true], Duration::from_millis(300));
        let m = message(3 * MIN_PIECE, 7);
        let (on, last, parts) = striped(1, 0, &m, 1);
        for p in &on[0] {
            assert_eq!(
                b.try_send(0, &p.meta, &p.payload).unwrap(),
                SendStatus::Sent
            );
        }
        let got = lanes
            .assemble(1, 0, parts, lead_buf(m.len()), m.len(), &last)
            .unwrap();
        assert!(got.filled() == m, "assembled bytes differ");
        assert_eq!(lanes.received, 1);
        // A lead whose parts never come: an error naming the sender, after the limit.
        let e = failed(lanes.assemble(1, 1, 1, lead_buf(10), 10, &[0; 5]));
        assert!(
            matches!(
                &e,
                CoreError::Transport(TransportError::PeerLost { peer: 1, .. })
            ),
            "{e}"
        );
        assert!(e.to_string().contains("did not arrive"), "{e}");
        // Parts from a rank the lanes do not reach: a protocol error, no wait.
        let e = failed(lanes.assemble(0, 0, 1, lead_buf(10), 10, &[]));
        assert!(matches!(e, CoreError::Protocol { src: 0, .. }), "{e}");
    }

    #[test]
    fn a_lane_lost_while_its_parts_are_awaited_is_the_senders_error_not_a_hang() {
        let (a, b) = lane_pair();
        // A limit far above what the test may take: only the loss can end the wait.
        let mut lanes = Lanes::new(vec![a], vec![false, true], Duration::from_secs(600));
        b.abort();
        let e = failed(lanes.assemble(1, 0, 2, lead_buf(10), 10, &[]));
        assert!(
            matches!(
                &e,
                CoreError::Transport(TransportError::PeerLost { peer: 1, .. })
            ),
            "{e}"
        );
        assert!(lanes.lost(1), "the lane's state says lost");
    }

    #[test]
    fn a_wrong_id_a_wrong_offset_or_a_wrong_length_is_refused_naming_what() {
        let m = message(4 * MIN_PIECE, 9);
        let (on, last, parts) = striped(1, 5, &m, 3);
        let refill = |on: &Vec<Vec<Pkt>>| {
            let mut s = Stash::new(3, 2);
            for (lane, ps) in on.iter().enumerate() {
                for p in ps {
                    s.put(lane, p.clone());
                }
            }
            s
        };
        let e = assemble(&mut refill(&on), 3, 1, 6, parts, &last, m.len()).unwrap_err();
        assert!(e.contains("stripe 5") && e.contains("stripe 6"), "{e}");
        // Lanes taken in the wrong order: offsets give it away.
        let mut swapped = refill(&on);
        swapped.by_lane.swap(0, 1);
        let e = assemble(&mut swapped, 3, 1, 5, parts, &last, m.len()).unwrap_err();
        assert!(e.contains("offset"), "{e}");
        let e = assemble(&mut refill(&on), 3, 1, 5, parts, &last[1..], m.len()).unwrap_err();
        assert!(e.contains("not"), "{e}");
        let mut a = Assembly::new(5, 10, 1, RecvBuf::with_room(Vec::new(), 10));
        let e = a.add(Meta::Frag.encode().as_bytes(), &[]).unwrap_err();
        assert!(e.contains("Frag"), "{e}");
        let e = a.add(&[99], &[]).unwrap_err();
        assert!(e.contains("unknown"), "{e}");
        let e = a.add(part(1, 5, 0, &[0; 11]).meta(), &[0; 11]).unwrap_err();
        assert!(e.contains("exceed"), "{e}");
        assert_eq!(
            assemble(&mut refill(&on), 3, 1, 5, parts, &last, m.len()).unwrap(),
            m
        );
    }
}
