//! The service protocol: what an origin sends a target's service thread, and back.
//!
//! One TCP connection per (origin, target) pair, opened by the origin on first use.
//! All integers little-endian.
//!
//! ```text
//! hello (origin → target, then target → origin as the answer), 24 B:
//!   magic "NFRM" u32 | version u16 | 0 u16 | job cookie u64 | rank u32 | job size u32
//! request, 40 B header, then nseg entries, then data:
//!   op u8 | etype u8 | 0 u16 | nseg u32 | id u64 | data_len u64 | arg [16]
//!   entry: remote address u64 | length u64           (addresses in the target's space)
//!   data:  put / acc: the entries' bytes, packed in entry order; others: none
//! reply, 24 B header, then data:
//!   status u8 (0 ok, 1 refused) | 0 [7] | id u64 | data_len u64
//!   data:  get: the entries' bytes packed; rmw: old value i64; refused: UTF-8 reason
//! ```
//!
//! | op | entries | arg | reply |
//! |---|---|---|---|
//! | PUT | ≥ 1 | — | only if refused |
//! | GET | ≥ 1 | — | always |
//! | ACC | ≥ 1 | etype = element type, arg = scale (re, im) | only if refused |
//! | RMW | 1, of the operand's size | etype = rmw kind, arg[0..8] = operand, arg[8..16] = compare-swap condition | always |
//! | FENCE | 0 | — | always, after every earlier request is applied |
//! | LOCK | 0 | arg[0..8] = mutex | when granted |
//! | UNLOCK | 0 | arg[0..8] = mutex | only if refused |
//!
//! Requests on a connection are applied in order, which gives per-target ordering and
//! makes FENCE's reply mean "everything before me is done". Lengths are checked
//! against [`MAX_ENTRIES`] and [`MAX_DATA`] before anything is allocated; a frame that
//! breaks the format closes the connection.

use crate::xfer::{RmwOp, Scale};

/// First word of a hello.
pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"NFRM");
/// Protocol version; bump on any change.
pub(crate) const VERSION: u16 = 1;
/// Bytes of a hello.
pub(crate) const HELLO_LEN: usize = 24;
/// Bytes of a request header.
pub(crate) const REQ_LEN: usize = 40;
/// Bytes of one entry.
pub(crate) const ENTRY_LEN: usize = 16;
/// Bytes of a reply header.
pub(crate) const REP_LEN: usize = 24;
/// Most entries in one request.
pub(crate) const MAX_ENTRIES: usize = 1 << 16;
/// Most data bytes in one request or reply.
pub(crate) const MAX_DATA: u64 = 64 << 20;

/// Request operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Op {
    Put = 1,
    Get = 2,
    Acc = 3,
    Rmw = 4,
    Fence = 5,
    Lock = 6,
    Unlock = 7,
}

impl Op {
    fn from_u8(b: u8) -> Option<Op> {
        Some(match b {
            1 => Op::Put,
            2 => Op::Get,
            3 => Op::Acc,
            4 => Op::Rmw,
            5 => Op::Fence,
            6 => Op::Lock,
            7 => Op::Unlock,
            _ => return None,
        })
    }
}

/// A hello.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hello {
    pub cookie: u64,
    pub rank: u32,
    pub size: u32,
}

impl Hello {
    pub(crate) fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_le_bytes());
        b[16..20].copy_from_slice(&self.rank.to_le_bytes());
        b[20..24].copy_from_slice(&self.size.to_le_bytes());
        b
    }

    /// Decodes and checks a hello against ours (same job, a rank in it).
    pub(crate) fn decode(b: &[u8; HELLO_LEN], ours: &Hello) -> Result<Hello, String> {
        if u32_at(b, 0) != MAGIC {
            return Err("not an rma service hello".into());
        }
        let v = u16::from_le_bytes([b[4], b[5]]);
        if v != VERSION {
            return Err(format!("protocol version {v}, ours is {VERSION}"));
        }
        let h = Hello {
            cookie: u64_at(b, 8),
            rank: u32_at(b, 16),
            size: u32_at(b, 20),
        };
        if h.cookie != ours.cookie || h.size != ours.size {
            return Err("it belongs to another job (cookie or job size differs)".into());
        }
        if h.rank >= h.size {
            return Err(format!("rank {} outside the job of {}", h.rank, h.size));
        }
        Ok(h)
    }
}

/// A request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Req {
    pub op: Op,
    pub etype: u8,
    pub nseg: u32,
    pub id: u64,
    pub data_len: u64,
    pub arg: [u8; 16],
}

impl Req {
    /// A request with no entries, data or arguments.
    pub(crate) fn bare(op: Op, id: u64) -> Req {
        Req {
            op,
            etype: 0,
            nseg: 0,
            id,
            data_len: 0,
            arg: [0; 16],
        }
    }

    pub(crate) fn encode(&self) -> [u8; REQ_LEN] {
        let mut b = [0u8; REQ_LEN];
        b[0] = self.op as u8;
        b[1] = self.etype;
        b[4..8].copy_from_slice(&self.nseg.to_le_bytes());
        b[8..16].copy_from_slice(&self.id.to_le_bytes());
        b[16..24].copy_from_slice(&self.data_len.to_le_bytes());
        b[24..40].copy_from_slice(&self.arg);
        b
    }

    /// Decodes a header, checking what can be checked before reading the body.
    pub(crate) fn decode(b: &[u8; REQ_LEN]) -> Result<Req, String> {
        let op = Op::from_u8(b[0]).ok_or_else(|| format!("unknown operation {}", b[0]))?;
        let r = Req {
            op,
            etype: b[1],
            nseg: u32_at(b, 4),
            id: u64_at(b, 8),
            data_len: u64_at(b, 16),
            arg: b[24..40].try_into().expect("16 bytes"),
        };
        if r.nseg as usize > MAX_ENTRIES {
            return Err(format!(
                "{} entries exceed the limit of {MAX_ENTRIES}",
                r.nseg
            ));
        }
        if r.data_len > MAX_DATA {
            return Err(format!(
                "{} data bytes exceed the limit of {MAX_DATA}",
                r.data_len
            ));
        }
        let carries_data = matches!(op, Op::Put | Op::Acc);
        if !carries_data && r.data_len != 0 {
            return Err(format!(
                "{op:?} carries no data but announces {} B",
                r.data_len
            ));
        }
        Ok(r)
    }

    /// Bytes of entries and data after the header.
    pub(crate) fn body_len(&self) -> usize {
        self.nseg as usize * ENTRY_LEN + self.data_len as usize
    }

    /// The first 8 argument bytes as an integer (operand, mutex).
    pub(crate) fn arg_u64(&self) -> u64 {
        u64_at(&self.arg, 0)
    }
}

/// A reply header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rep {
    pub ok: bool,
    pub id: u64,
    pub data_len: u64,
}

impl Rep {
    pub(crate) fn encode(&self) -> [u8; REP_LEN] {
        let mut b = [0u8; REP_LEN];
        b[0] = u8::from(!self.ok);
        b[8..16].copy_from_slice(&self.id.to_le_bytes());
        b[16..24].copy_from_slice(&self.data_len.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8; REP_LEN]) -> Result<Rep, String> {
        if b[0] > 1 {
            return Err(format!("reply status {} is neither 0 nor 1", b[0]));
        }
        let r = Rep {
            ok: b[0] == 0,
            id: u64_at(b, 8),
            data_len: u64_at(b, 16),
        };
        if r.data_len > MAX_DATA {
            return Err(format!(
                "reply of {} B exceeds the limit of {MAX_DATA}",
                r.data_len
            ));
        }
        Ok(r)
    }
}

/// Encodes one entry.
pub(crate) fn entry(addr: u64, len: u64) -> [u8; ENTRY_LEN] {
    let mut b = [0u8; ENTRY_LEN];
    b[..8].copy_from_slice(&addr.to_le_bytes());
    b[8..].copy_from_slice(&len.to_le_bytes());
    b
}

/// Decodes entry `i` of an entry block.
pub(crate) fn entry_at(block: &[u8], i: usize) -> (u64, u64) {
    let o = i * ENTRY_LEN;
    (u64_at(block, o), u64_at(block, o + 8))
}

/// An accumulate's element type and scale as (etype, arg).
pub(crate) fn encode_scale(s: Scale) -> (u8, [u8; 16]) {
    let mut a = [0u8; 16];
    let t = match s {
        Scale::Int(v) => {
            a[..4].copy_from_slice(&v.to_le_bytes());
            1
        }
        Scale::Long(v) => {
            a[..8].copy_from_slice(&v.to_le_bytes());
            2
        }
        Scale::Float(v) => {
            a[..4].copy_from_slice(&v.to_le_bytes());
            3
        }
        Scale::Double(v) => {
            a[..8].copy_from_slice(&v.to_le_bytes());
            4
        }
        Scale::ComplexFloat([r, i]) => {
            a[..4].copy_from_slice(&r.to_le_bytes());
            a[4..8].copy_from_slice(&i.to_le_bytes());
            5
        }
        Scale::ComplexDouble([r, i]) => {
            a[..8].copy_from_slice(&r.to_le_bytes());
            a[8..].copy_from_slice(&i.to_le_bytes());
            6
        }
    };
    (t, a)
}

/// The inverse of [`encode_scale`].
pub(crate) fn decode_scale(etype: u8, a: &[u8; 16]) -> Option<Scale> {
    let f32_at = |o| f32::from_le_bytes(a[o..o + 4].try_into().expect("4 bytes"));
    let f64_at = |o| f64::from_le_bytes(a[o..o + 8].try_into().expect("8 bytes"));
    Some(match etype {
        1 => Scale::Int(u32_at(a, 0) as i32),
        2 => Scale::Long(u64_at(a, 0) as i64),
        3 => Scale::Float(f32_at(0)),
        4 => Scale::Double(f64_at(0)),
        5 => Scale::ComplexFloat([f32_at(0), f32_at(4)]),
        6 => Scale::ComplexDouble([f64_at(0), f64_at(8)]),
        _ => return None,
    })
}

/// An rmw as (etype, arg): the operand in `arg[0..8]`, a compare-swap's condition in
/// `arg[8..16]`.
pub(crate) fn encode_rmw(op: RmwOp) -> (u8, [u8; 16]) {
    let (t, v, c) = match op {
        RmwOp::FetchAddInt(v) => (1, i64::from(v), 0),
        RmwOp::FetchAddLong(v) => (2, v, 0),
        RmwOp::SwapInt(v) => (3, i64::from(v), 0),
        RmwOp::SwapLong(v) => (4, v, 0),
        RmwOp::CompareSwapInt { cond, value } => (5, i64::from(value), i64::from(cond)),
        RmwOp::CompareSwapLong { cond, value } => (6, value, cond),
        RmwOp::AndInt(v) => (7, i64::from(v), 0),
        RmwOp::AndLong(v) => (8, v, 0),
        RmwOp::OrInt(v) => (9, i64::from(v), 0),
        RmwOp::OrLong(v) => (10, v, 0),
        RmwOp::XorInt(v) => (11, i64::from(v), 0),
        RmwOp::XorLong(v) => (12, v, 0),
    };
    let mut a = [0u8; 16];
    a[..8].copy_from_slice(&v.to_le_bytes());
    a[8..].copy_from_slice(&c.to_le_bytes());
    (t, a)
}

/// The inverse of [`encode_rmw`].
pub(crate) fn decode_rmw(etype: u8, a: &[u8; 16]) -> Option<RmwOp> {
    let v = u64_at(a, 0) as i64;
    let c = u64_at(a, 8) as i64;
    Some(match etype {
        1 => RmwOp::FetchAddInt(v as i32),
        2 => RmwOp::FetchAddLong(v),
        3 => RmwOp::SwapInt(v as i32),
        4 => RmwOp::SwapLong(v),
        5 => RmwOp::CompareSwapInt {
            cond: c as i32,
            value: v as i32,
        },
        6 => RmwOp::CompareSwapLong { cond: c, value: v },
        7 => RmwOp::AndInt(v as i32),
        8 => RmwOp::AndLong(v),
        9 => RmwOp::OrInt(v as i32),
        10 => RmwOp::OrLong(v),
        11 => RmwOp::XorInt(v as i32),
        12 => RmwOp::XorLong(v),
        _ => return None,
    })
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_bad_ones_are_refused() {
        let ours = Hello {
            cookie: 7,
            rank: 0,
            size: 4,
        };
        let h = Hello { rank: 3, ..ours };
        assert_eq!(Hello::decode(&h.encode(), &ours), Ok(h));
        let stranger = Hello { cookie: 8, ..h };
        assert!(Hello::decode(&stranger.encode(), &ours).is_err());
        let outside = Hello { rank: 4, ..h };
        assert!(Hello::decode(&outside.encode(), &ours).is_err());

        let (etype, arg) = encode_scale(Scale::ComplexDouble([1.5, -2.0]));
        let r = Req {
            op: Op::Acc,
            etype,
            nseg: 3,
            id: 99,
            data_len: 48,
            arg,
        };
        let back = Req::decode(&r.encode()).unwrap();
        assert_eq!(back, r);
        assert_eq!(back.body_len(), 3 * 16 + 48);
        assert_eq!(
            decode_scale(back.etype, &back.arg),
            Some(Scale::ComplexDouble([1.5, -2.0]))
        );
        for op in [
            RmwOp::FetchAddInt(-3),
            RmwOp::SwapLong(i64::MIN),
            RmwOp::CompareSwapInt { cond: -1, value: 7 },
            RmwOp::CompareSwapLong {
                cond: i64::MAX,
                value: i64::MIN,
            },
            RmwOp::AndInt(0x0f0f),
            RmwOp::OrLong(-2),
            RmwOp::XorInt(i32::MIN),
            RmwOp::AndLong(3),
            RmwOp::OrInt(8),
            RmwOp::XorLong(5),
        ] {
            let (t, a) = encode_rmw(op);
            assert_eq!(decode_rmw(t, &a), Some(op));
        }

        let mut b = r.encode();
        b[0] = 42;
        assert!(Req::decode(&b)
            .unwrap_err()
            .contains("unknown operation 42"));
        let huge = Req {
            data_len: MAX_DATA + 1,
            ..r
        };
        assert!(Req::decode(&huge.encode()).is_err());
        let get_with_data = Req { op: Op::Get, ..r };
        assert!(Req::decode(&get_with_data.encode()).is_err());
        let rep = Rep {
            ok: false,
            id: 5,
            data_len: 10,
        };
        assert_eq!(Rep::decode(&rep.encode()), Ok(rep));
    }
}
