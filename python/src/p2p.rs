//! Tagged point-to-point messages: MPI's matching rules over active messages.
//!
//! Every message goes to the runtime's reserved `Messages` handler, which files it:
//! to the oldest posted receive it matches (source and tag, either may be "any"),
//! else at the end of the unexpected queue. A receive that is posted takes the oldest
//! unexpected message it matches. So messages from one source with one tag are
//! received in the order they were sent, and receives are satisfied in the order
//! they were posted, as in MPI.
//!
//! The header (24 bytes, the core's limit) says what the payload is, so arrays travel
//! as raw bytes with their dtype and shape, never pickled:
//! `tag i32 | kind u8 | dtype char u8 | ndim u8 | 0 u8 | dims 4 × u32`.

use std::collections::{HashMap, VecDeque};

/// What the payload holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Raw bytes (sent from `bytes` or `bytearray`), received as `bytes`.
    Bytes = 0,
    /// A numpy array whose shape is in the header.
    Array = 1,
    /// A numpy array whose shape (ndim little-endian u64s) precedes the data.
    ArrayShaped = 2,
    /// A pickled Python object.
    Pickle = 3,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            0 => Kind::Bytes,
            1 => Kind::Array,
            2 => Kind::ArrayShaped,
            3 => Kind::Pickle,
            _ => return None,
        })
    }
}

/// Dimensions an array may have for its shape to travel in the header.
pub(crate) const HEADER_DIMS: usize = 4;

/// The decoded header of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    pub tag: i32,
    pub kind: Kind,
    /// numpy's one-character type code (`dtype.char`); 0 for bytes and pickles.
    pub dtype: u8,
    pub ndim: u8,
    pub dims: [u32; HEADER_DIMS],
}

impl Head {
    /// The wire form.
    pub(crate) fn encode(&self) -> [u8; 24] {
        let mut h = [0u8; 24];
        h[..4].copy_from_slice(&self.tag.to_le_bytes());
        h[4] = self.kind as u8;
        h[5] = self.dtype;
        h[6] = self.ndim;
        for (i, d) in self.dims.iter().enumerate() {
            h[8 + 4 * i..12 + 4 * i].copy_from_slice(&d.to_le_bytes());
        }
        h
    }

    /// Reads a header; `None` when it is not one of ours.
    pub(crate) fn decode(h: &[u8]) -> Option<Head> {
        if h.len() != 24 {
            return None;
        }
        let word = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
        Some(Head {
            tag: i32::from_le_bytes(h[..4].try_into().expect("4 bytes")),
            kind: Kind::from_u8(h[4])?,
            dtype: h[5],
            ndim: h[6],
            dims: [word(8), word(12), word(16), word(20)],
        })
    }
}

/// One message that arrived.
#[derive(Debug)]
pub(crate) struct Msg {
    pub src: usize,
    pub head: Head,
    /// The payload, unless it went straight into the receive's destination.
    pub data: Vec<u8>,
    /// Bytes written into the posted receive's destination (then `data` is empty).
    pub filled: Option<usize>,
}

/// Memory a posted receive wants its message's data in (a numpy array's).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dest {
    pub ptr: *mut u8,
    pub len: usize,
    /// The array's numpy type code: array messages of another dtype are not copied.
    pub dtype: u8,
}

impl Dest {
    /// Where the data of a message with `head` and `payload` goes, if it fits here.
    fn accepts<'p>(&self, head: &Head, payload: &'p [u8]) -> Option<&'p [u8]> {
        let fits = match head.kind {
            Kind::Bytes => true,
            Kind::Array => head.dtype == self.dtype,
            Kind::ArrayShaped | Kind::Pickle => false,
        };
        (fits && payload.len() <= self.len).then_some(payload)
    }
}

/// Which messages a receive accepts (`None` = any).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pattern {
    pub src: Option<usize>,
    pub tag: Option<i32>,
}

impl Pattern {
    fn accepts(&self, m: &Msg) -> bool {
        self.src.is_none_or(|s| s == m.src) && self.tag.is_none_or(|t| t == m.head.tag)
    }
}

/// Arrived messages and posted receives of this rank.
#[derive(Debug, Default)]
pub(crate) struct Matcher {
    unexpected: VecDeque<Msg>,
    posted: Vec<(u64, Pattern, Option<Dest>)>,
    done: HashMap<u64, Msg>,
    next: u64,
}

impl Matcher {
    /// Files a message that arrived: into the oldest posted receive it matches
    /// (copied straight into that receive's destination when it fits), else at the
    /// end of the unexpected queue.
    pub(crate) fn arrive(&mut self, src: usize, head: Head, payload: &[u8]) {
        let probe = Msg {
            src,
            head,
            data: Vec::new(),
            filled: None,
        };
        let Some(i) = self.posted.iter().position(|(_, p, _)| p.accepts(&probe)) else {
            self.unexpected.push_back(Msg {
                data: payload.to_vec(),
                ..probe
            });
            return;
        };
        let (id, _, dest) = self.posted.remove(i);
        let m = match dest.and_then(|d| d.accepts(&head, payload).map(|b| (d, b))) {
            Some((d, body)) => {
                // SAFETY: whoever posts a destination keeps it valid and unaliased
                // until the receive is done or withdrawn (`post`'s contract), and
                // `accepts` checked the length.
                unsafe { std::ptr::copy_nonoverlapping(body.as_ptr(), d.ptr, body.len()) };
                Msg {
                    filled: Some(body.len()),
                    ..probe
                }
            }
            None => Msg {
                data: payload.to_vec(),
                ..probe
            },
        };
        self.done.insert(id, m);
    }

    /// Posts a receive and returns its id (see [`Matcher::take_done`]). With `dest`,
    /// the message's data is copied there on arrival when it fits; `dest` must then
    /// stay valid, and untouched by anyone else, until the receive is done
    /// ([`Matcher::is_done`]) or withdrawn ([`Matcher::cancel`]).
    pub(crate) fn post_into(&mut self, p: Pattern, dest: Option<Dest>) -> u64 {
        let id = self.next;
        self.next += 1;
        match self.unexpected.iter().position(|m| p.accepts(m)) {
            Some(i) => {
                let m = self.unexpected.remove(i).expect("index from position");
                self.done.insert(id, m);
            }
            None => self.posted.push((id, p, dest)),
        }
        id
    }

    /// Whether posted receive `id` has its message.
    pub(crate) fn is_done(&self, id: u64) -> bool {
        self.done.contains_key(&id)
    }

    /// The message of posted receive `id`, once it has one.
    pub(crate) fn take_done(&mut self, id: u64) -> Option<Msg> {
        self.done.remove(&id)
    }

    /// Withdraws a posted receive that has no message yet (true if it was withdrawn).
    pub(crate) fn cancel(&mut self, id: u64) -> bool {
        let before = self.posted.len();
        self.posted.retain(|(i, _, _)| *i != id);
        before != self.posted.len()
    }

    /// The oldest unexpected message `p` accepts, left in place.
    pub(crate) fn peek(&self, p: Pattern) -> Option<&Msg> {
        self.unexpected.iter().find(|m| p.accepts(m))
    }

    /// Takes the oldest unexpected message `p` accepts.
    pub(crate) fn take(&mut self, p: Pattern) -> Option<Msg> {
        let i = self.unexpected.iter().position(|m| p.accepts(m))?;
        self.unexpected.remove(i)
    }

    /// Puts back a message a receive could not use, ahead of everything else, so it
    /// is the next one matched.
    pub(crate) fn put_back(&mut self, m: Msg) {
        self.unexpected.push_front(m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(tag: i32) -> Head {
        Head {
            tag,
            kind: Kind::Bytes,
            dtype: 0,
            ndim: 0,
            dims: [0; 4],
        }
    }

    const ANY: Pattern = Pattern {
        src: None,
        tag: None,
    };

    #[test]
    fn posted_receives_take_messages_in_post_order() {
        let mut m = Matcher::default();
        let a = m.post_into(ANY, None);
        let b = m.post_into(
            Pattern {
                src: Some(1),
                tag: Some(7),
            },
            None,
        );
        m.arrive(1, head(7), &[1]);
        m.arrive(1, head(7), &[2]);
        assert_eq!(m.take_done(a).unwrap().data, [1]);
        assert_eq!(m.take_done(b).unwrap().data, [2]);
    }

    #[test]
    fn unexpected_messages_match_by_source_and_tag_in_arrival_order() {
        let mut m = Matcher::default();
        m.arrive(0, head(1), &[1]);
        m.arrive(2, head(5), &[2]);
        m.arrive(2, head(5), &[3]);
        let p = Pattern {
            src: Some(2),
            tag: Some(5),
        };
        assert_eq!(m.take(p).unwrap().data, [2]);
        let id = m.post_into(p, None);
        assert_eq!(m.take_done(id).unwrap().data, [3]);
        assert!(m.take(p).is_none());
        assert_eq!(m.take(ANY).unwrap().data, [1]);
    }

    #[test]
    fn a_message_put_back_is_matched_first_and_cancel_withdraws() {
        let mut m = Matcher::default();
        m.arrive(0, head(1), &[1]);
        let first = m.take(ANY).unwrap();
        assert_eq!(first.filled, None);
        m.arrive(0, head(1), &[2]);
        m.put_back(first);
        assert_eq!(m.take(ANY).unwrap().data, [1]);
        let id = m.post_into(
            Pattern {
                src: Some(3),
                tag: None,
            },
            None,
        );
        assert!(m.cancel(id));
        m.arrive(3, head(0), &[9]);
        assert!(!m.is_done(id));
        assert_eq!(m.peek(ANY).unwrap().data, [2]);
    }

    #[test]
    fn a_message_that_fits_goes_straight_into_the_destination() {
        let mut m = Matcher::default();
        let mut buf = [0u8; 4];
        let d = Dest {
            ptr: buf.as_mut_ptr(),
            len: buf.len(),
            dtype: b'B',
        };
        let id = m.post_into(ANY, Some(d));
        m.arrive(2, head(0), &[7, 8, 9]);
        let got = m.take_done(id).unwrap();
        assert_eq!((got.filled, got.data.len(), got.src), (Some(3), 0, 2));
        assert_eq!(buf, [7, 8, 9, 0]);
        // Too long, or an array of another dtype: kept as data, the buffer untouched.
        let id = m.post_into(ANY, Some(Dest { len: 2, ..d }));
        m.arrive(2, head(0), &[1, 2, 3]);
        assert_eq!(m.take_done(id).unwrap().data, [1, 2, 3]);
        let id = m.post_into(ANY, Some(d));
        let f8 = Head {
            kind: Kind::Array,
            dtype: b'd',
            ndim: 1,
            ..head(0)
        };
        m.arrive(2, f8, &[1, 2]);
        assert_eq!(m.take_done(id).unwrap().filled, None);
        assert_eq!(buf, [7, 8, 9, 0]);
    }

    #[test]
    fn headers_round_trip_and_foreign_ones_are_refused() {
        let h = Head {
            tag: -5,
            kind: Kind::Array,
            dtype: b'd',
            ndim: 3,
            dims: [4, 5, 6, 0],
        };
        assert_eq!(Head::decode(&h.encode()), Some(h));
        let mut bad = h.encode();
        bad[4] = 9;
        assert_eq!(Head::decode(&bad), None);
        assert_eq!(Head::decode(&bad[..20]), None);
    }
}
