//! Striping: a large message cut across several connections to its peer ("lanes"),
//! as Open MPI's `btl_tcp_links` and UCX's multi-lane do. Needs from the transport:
//! `lanes` > 0 (extra connections reaching the peer); the lanes themselves — their
//! connections, the stash of early parts, the wait for a part — are `lanes.rs`.
//!
//! Sending a message of at least `NF_TCP_STRIPE` bytes whose transport has lanes
//! ([`World::send_striped`]):
//! 1. [`cut`] the payload into near-equal pieces: lanes + 1 of them, fewer where a
//!    piece would be under [`MIN_PIECE`], more where one would exceed a frame; with
//!    fewer than two ([`cuts`] false) the message goes the usual way.
//! 2. Send every piece but the last first, piece k as a `PART` (stripe id, offset)
//!    on lane k mod lanes. The stripe id counts this pair's striped messages.
//! 3. Then send the last piece as a `LEAD` (handler, header, total, stripe id,
//!    number of parts) on the main transport through `Net::try_send`, so that the
//!    order gates of a split route (`order.rs`) count it like any tcp packet.
//!
//! Receiving ([`World::assemble_stripe`]): when `Net::poll` delivers a lead, its
//! parts are taken from the lanes in turn (`Lanes::assemble`); each must carry the
//! lead's stripe id and the offset where the previous one ended ([`Assembly`]);
//! they are copied into one receive buffer, then the lead's own piece, and the
//! message is delivered as one.
//!
//! Order: a pair's messages reach the handler in send order because every message —
//! striped or not — is delivered when its own packet (the lead, for a striped one)
//! comes out of the main connection, which keeps the pair's order (and a split
//! route's gates keep it across transports). The parts need no order of their own
//! against other messages: each lane is one FIFO stream per pair and the sender
//! puts a message's parts on the lanes in message order, so the next part of a
//! sender on a lane belongs to the oldest of its striped messages not yet
//! assembled, which is the lead being assembled (the stripe id checks it).

use nf_transport::SendStatus;

use crate::am::{HandlerId, OwnedAm};
use crate::buf::RecvBuf;
use crate::error::CoreError;
use crate::protocol::Meta;
use crate::world::World;

/// Smallest piece worth a frame of its own on a lane.
pub(crate) const MIN_PIECE: usize = 32 << 10;

/// How many pieces [`cut`] makes.
fn pieces(len: usize, ways: usize, max_piece: usize) -> usize {
    (len / MIN_PIECE)
        .clamp(1, ways.max(1))
        .max(len.div_ceil(max_piece.max(1)))
}

/// Where the pieces of a `len`-byte payload start and end over `ways` connections:
/// `n + 1` offsets from 0 to `len` for `n` near-equal pieces (sizes differ by at
/// most a byte). `n` is `ways`, or fewer so that no piece is under [`MIN_PIECE`] (at
/// least one), or more so that none exceeds `max_piece`.
pub(crate) fn cut(len: usize, ways: usize, max_piece: usize) -> Vec<usize> {
    let n = pieces(len, ways, max_piece);
    (0..=n)
        .map(|i| (i as u128 * len as u128 / n as u128) as usize)
        .collect()
}

/// Whether a `len`-byte payload is striped over `lanes` lanes and the main
/// connection with frames of `frame` bytes: at least two pieces, and no more parts
/// than a `LEAD` can count.
pub(crate) fn cuts(len: usize, lanes: usize, frame: usize) -> bool {
    let n = pieces(len, lanes + 1, frame);
    n >= 2 && n - 1 <= usize::from(u16::MAX)
}

/// The sizes at which [`cuts`] may change its answer for `frame`-byte frames (with
/// lanes ≥ 1; the frame's own `frame + 1` is the caller's): two pieces of
/// [`MIN_PIECE`], and one piece more than a `LEAD` can count.
pub(crate) fn bounds(frame: usize) -> [usize; 2] {
    [
        2 * MIN_PIECE,
        frame
            .max(1)
            .saturating_mul(usize::from(u16::MAX) + 1)
            .saturating_add(1),
    ]
}

/// One striped message being put together from its parts and its lead's piece.
pub(crate) struct Assembly {
    id: u32,
    total: usize,
    parts: usize,
    taken: usize,
    buf: RecvBuf,
}

impl Assembly {
    /// Stripe `id` of `total` bytes with `parts` parts on the lanes, into `buf`
    /// (room for `total` bytes).
    pub(crate) fn new(id: u32, total: usize, parts: usize, buf: RecvBuf) -> Assembly {
        Assembly {
            id,
            total,
            parts,
            taken: 0,
            buf,
        }
    }

    /// The lane of the next part of `lanes` (`None`: every part is in).
    pub(crate) fn next_lane(&self, lanes: usize) -> Option<usize> {
        (self.taken < self.parts).then(|| self.taken % lanes)
    }

    /// Adds the next part; what is wrong with it otherwise.
    pub(crate) fn add(&mut self, meta: &[u8], payload: &[u8]) -> Result<(), String> {
        let (id, offset) = match Meta::decode(meta)? {
            Meta::Part { id, offset } => (id, offset),
            other => return Err(format!("a {other:?} packet on a tcp lane")),
        };
        if id != self.id {
            return Err(format!(
                "part of stripe {id} on a tcp lane where stripe {} was due",
                self.id
            ));
        }
        let at = self.buf.filled().len();
        if offset != at as u64 {
            return Err(format!(
                "part {} of stripe {id} at offset {offset} where {at} was due",
                self.taken
            ));
        }
        if at + payload.len() > self.total || !self.buf.push(payload) {
            return Err(format!("parts of stripe {id} exceed its {} B", self.total));
        }
        self.taken += 1;
        Ok(())
    }

    /// Adds the lead's own piece, the last one: the whole message.
    pub(crate) fn finish(mut self, last: &[u8]) -> Result<RecvBuf, String> {
        let at = self.buf.filled().len();
        if self.taken != self.parts || at + last.len() != self.total || !self.buf.push(last) {
            return Err(format!(
                "stripe {} has {at} B in {} of {} parts and {} B in its lead, not {} B",
                self.id,
                self.taken,
                self.parts,
                last.len(),
                self.total
            ));
        }
        Ok(self.buf)
    }
}

impl World {
    /// Sends `payload` cut across the lanes to `dest` and the lead on the main
    /// connection (steps 1–3), its pieces at most `frame` bytes. Returns false,
    /// having sent nothing, if it does not cut into pieces or no lanes reach `dest`.
    pub(crate) fn send_striped(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
        frame: usize,
    ) -> Result<bool, CoreError> {
        let (cuts, id, lanes) = {
            let mut net = self.net.borrow_mut();
            let Some(l) = net.lanes.as_mut().filter(|l| l.reaches(dest)) else {
                return Ok(false);
            };
            if !cuts(payload.len(), l.count(), frame) {
                return Ok(false);
            }
            let cuts = cut(payload.len(), l.count() + 1, frame);
            (cuts, l.next_id(dest), l.count())
        };
        let parts = cuts.len() - 2;
        for k in 0..parts {
            let meta = Meta::Part {
                id,
                offset: cuts[k] as u64,
            }
            .encode();
            self.send_on_lane(
                k % lanes,
                dest,
                meta.as_bytes(),
                &payload[cuts[k]..cuts[k + 1]],
            )?;
        }
        let lead = Meta::Lead {
            handler,
            id,
            total: payload.len() as u64,
            parts: parts as u16,
            header,
        }
        .encode();
        self.send_packet_of(
            dest,
            payload.len(),
            lead.as_bytes(),
            &payload[cuts[parts]..],
        )?;
        if let Some(l) = self.net.borrow_mut().lanes.as_mut() {
            l.sent += 1;
        }
        Ok(true)
    }

    /// Sends one part on lane `lane`, polling (without running user handlers)
    /// while the lane's queue to `dest` is full.
    fn send_on_lane(
        &self,
        lane: usize,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        let try_send = || match self.net.borrow_mut().lanes.as_mut() {
            Some(l) => Ok(l.try_send(lane, dest, meta, payload)?),
            None => Err(CoreError::Unsupported("tcp lanes vanished".into())),
        };
        if try_send()? == SendStatus::Sent {
            return Ok(());
        }
        self.retry_for_credit(try_send)
    }

    /// `LEAD`: a striped message's parts from the lanes, then its own piece, as one
    /// message.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn assemble_stripe(
        &self,
        src: usize,
        handler: u16,
        id: u32,
        total: u64,
        parts: u16,
        header: &[u8],
        last: &[u8],
    ) -> Result<(), CoreError> {
        let total = self.checked_len(src, total)?;
        let buf = self.state.borrow_mut().take_buffer(total);
        let payload = {
            let mut net = self.net.borrow_mut();
            match net.lanes.as_mut() {
                Some(l) => l.assemble(src, id, usize::from(parts), buf, total, last)?,
                None => {
                    return Err(CoreError::Protocol {
                        src,
                        why: "a striped message, but this rank has no tcp lanes (is \
                              NF_TCP_LANES the same on every rank?)"
                            .into(),
                    })
                }
            }
        };
        self.deliver_owned(OwnedAm {
            src,
            handler,
            header: header.to_vec(),
            payload,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes(c: &[usize]) -> Vec<usize> {
        c.windows(2).map(|w| w[1] - w[0]).collect()
    }

    #[test]
    fn pieces_are_near_equal_cover_the_payload_and_respect_both_bounds() {
        let max = 16 << 20;
        for len in [
            0,
            1,
            MIN_PIECE - 1,
            MIN_PIECE,
            2 * MIN_PIECE + 5,
            1 << 20,
            (3 << 20) + 7,
            100 << 20,
        ] {
            for ways in 1..=16 {
                let c = cut(len, ways, max);
                let s = sizes(&c);
                assert_eq!((c[0], *c.last().unwrap()), (0, len), "{len} over {ways}");
                let (lo, hi) = (*s.iter().min().unwrap(), *s.iter().max().unwrap());
                assert!(hi - lo <= 1, "{len} over {ways}: {s:?}");
                assert!(hi <= max, "{len} over {ways}: a piece above a frame");
                assert!(
                    s.len() <= ways || len > ways * max,
                    "{len} over {ways}: {s:?}"
                );
                if s.len() > 1 {
                    assert!(
                        lo >= MIN_PIECE || len > ways * max,
                        "{len} over {ways}: {s:?}"
                    );
                }
            }
        }
        assert_eq!(sizes(&cut(1 << 20, 4, max)), [1 << 18; 4]);
        assert_eq!(cut(MIN_PIECE * 3 / 2, 4, max).len(), 2, "too small to cut");
        assert_eq!(
            sizes(&cut(64 << 20, 2, max)),
            [16 << 20; 4],
            "frames bound pieces"
        );
    }

    #[test]
    fn cuts_says_what_cut_does_and_changes_only_at_its_bounds() {
        for frame in [1000, MIN_PIECE, 1 << 20] {
            let [two, too_many] = bounds(frame);
            for lanes in 1..=3 {
                for len in [0, 1, two - 1, two, frame, frame + 1, too_many - 1, too_many] {
                    let n = cut(len, lanes + 1, frame).len() - 1;
                    let expected = n >= 2 && n - 1 <= usize::from(u16::MAX);
                    assert_eq!(cuts(len, lanes, frame), expected, "{len} B, frame {frame}");
                }
                assert!(!cuts(too_many, lanes, frame), "too many parts for a LEAD");
                assert!(cuts(too_many - 1, lanes, frame));
            }
        }
    }
}
