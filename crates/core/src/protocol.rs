//! The core's packet metadata: what kind of packet, for which handler, how long.
//!
//! Every packet's metadata starts with a kind byte:
//!
//! | kind | layout after the kind byte | meaning |
//! |---|---|---|
//! | `EAGER` | hlen u8, handler u16, header | a whole message in one packet |
//! | `FIRST` | hlen u8, handler u16, total u64, header | first fragment of a longer message |
//! | `FRAG`  | — | next fragment of the sender's current message |
//! | `RTS`   | hlen u8, handler u16, id u32, total u64, addr u64, header | ready to send: read `total` bytes at `addr` in my process |
//! | `RTS_NET` | handler u16, id u32, total u64, base u64, key u64 | ready to send over the network: read `total` bytes of my registered region (`base`, `key`) with the transport's RMA; the packet's payload is the header |
//! | `CTS`   | id u32, addr u64, split u64 | clear to send: write bytes `split..` of `id` to `addr` in my process |
//! | `DONE`  | id u32, ok u8 | I wrote my part of your rendezvous `id` (or failed to) |
//! | `FIN`   | id u32 | your rendezvous `id` has been read; the buffer is yours again |
//! | `NACK`  | id u32 | could not read rendezvous `id`; send it another way |
//! | `PROBE` | — | are you there? (liveness over connectionless transports); answered with `PROBE_ACK` |
//! | `PROBE_ACK` | — | yes |
//! | `SWITCH` | after u64 | I now send over this transport; take `after` packets from me over the other one first (`order.rs`) |
//! | `LEAD` | hlen u8, handler u16, id u32, total u64, parts u16, header | a striped message (`proto/stripe.rs`): `parts` pieces of stripe `id` went ahead on the tcp lanes; the packet's payload is the last piece |
//! | `PART` | id u32, offset u64 | a piece of stripe `id`, at `offset` in its message (on a tcp lane only) |
//!
//! `RTS_NET` carries its header as the packet's payload: with the region's base and
//! key it would not fit `META_MAX` beside a header of [`MAX_AM_HEADER`] bytes.
//!
//! Integers are little-endian. Fragments of one message are never interleaved with
//! another message from the same sender (a sender does not run handlers while it
//! sends), so `FRAG` needs no id.

use nf_transport::META_MAX;

/// Largest active-message header the protocol carries.
pub const MAX_AM_HEADER: usize = META_MAX - 24;

const EAGER: u8 = 1;
const FIRST: u8 = 2;
const FRAG: u8 = 3;
const RTS: u8 = 4;
const FIN: u8 = 5;
const NACK: u8 = 6;
const CTS: u8 = 7;
const DONE: u8 = 8;
const PROBE: u8 = 9;
const PROBE_ACK: u8 = 10;
const RTS_NET: u8 = 11;
const SWITCH: u8 = 12;
const LEAD: u8 = 13;
const PART: u8 = 14;

/// Decoded packet metadata, borrowing the header bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meta<'a> {
    /// A whole message.
    Eager { handler: u16, header: &'a [u8] },
    /// First fragment of a message of `total` payload bytes.
    First {
        handler: u16,
        total: u64,
        header: &'a [u8],
    },
    /// The next fragment.
    Frag,
    /// Rendezvous request: `total` bytes at `addr` in the sender.
    Rts {
        handler: u16,
        id: u32,
        total: u64,
        addr: u64,
        header: &'a [u8],
    },
    /// Rendezvous request over a network route: `total` bytes of the sender's region
    /// registered with the transport (`base`, `key`), to read with its RMA; the
    /// message's header is the packet's payload.
    RtsNet {
        handler: u16,
        id: u32,
        total: u64,
        base: u64,
        key: u64,
    },
    /// Receiver to sender: write bytes `split..` of rendezvous `id` to `addr`.
    Cts { id: u32, addr: u64, split: u64 },
    /// Sender to receiver: its part of rendezvous `id` is written (`ok`) or failed.
    Done { id: u32, ok: bool },
    /// Rendezvous `id` completed.
    Fin { id: u32 },
    /// Rendezvous `id` failed at the receiver.
    Nack { id: u32 },
    /// A liveness probe: the receiver answers `ProbeAck`.
    Probe,
    /// The answer to a probe.
    ProbeAck,
    /// The sender changed transport: take `after` packets from it over the other one
    /// first (consumed by `net.rs`, never seen by handlers).
    Switch { after: u64 },
    /// A striped message of `total` bytes: `parts` pieces of stripe `id` went ahead
    /// on the tcp lanes; the packet's payload is the last piece (`proto/stripe.rs`).
    Lead {
        handler: u16,
        id: u32,
        total: u64,
        parts: u16,
        header: &'a [u8],
    },
    /// A piece of stripe `id` at `offset` in its message; travels on a lane only.
    Part { id: u32, offset: u64 },
}

/// An encoded metadata block.
pub struct Encoded {
    buf: [u8; META_MAX],
    len: usize,
}

impl Encoded {
    /// The bytes to hand to the transport.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
}

impl Meta<'_> {
    /// Encodes; the header must already be checked to be ≤ [`MAX_AM_HEADER`].
    pub fn encode(&self) -> Encoded {
        let mut e = Encoded {
            buf: [0; META_MAX],
            len: 0,
        };
        match *self {
            Meta::Eager { handler, header } => return Meta::eager(handler, header),
            Meta::First {
                handler,
                total,
                header,
            } => {
                e.put(&[FIRST, header.len() as u8]);
                e.put(&handler.to_le_bytes());
                e.put(&total.to_le_bytes());
                e.put(header);
            }
            Meta::Frag => e.put(&[FRAG]),
            Meta::Rts {
                handler,
                id,
                total,
                addr,
                header,
            } => {
                e.put(&[RTS, header.len() as u8]);
                e.put(&handler.to_le_bytes());
                e.put(&id.to_le_bytes());
                e.put(&total.to_le_bytes());
                e.put(&addr.to_le_bytes());
                e.put(header);
            }
            Meta::RtsNet {
                handler,
                id,
                total,
                base,
                key,
            } => {
                e.put(&[RTS_NET]);
                e.put(&handler.to_le_bytes());
                e.put(&id.to_le_bytes());
                e.put(&total.to_le_bytes());
                e.put(&base.to_le_bytes());
                e.put(&key.to_le_bytes());
            }
            Meta::Cts { id, addr, split } => {
                e.put(&[CTS]);
                e.put(&id.to_le_bytes());
                e.put(&addr.to_le_bytes());
                e.put(&split.to_le_bytes());
            }
            Meta::Done { id, ok } => {
                e.put(&[DONE]);
                e.put(&id.to_le_bytes());
                e.put(&[ok as u8]);
            }
            Meta::Fin { id } => {
                e.put(&[FIN]);
                e.put(&id.to_le_bytes());
            }
            Meta::Nack { id } => {
                e.put(&[NACK]);
                e.put(&id.to_le_bytes());
            }
            Meta::Probe => e.put(&[PROBE]),
            Meta::ProbeAck => e.put(&[PROBE_ACK]),
            Meta::Switch { after } => {
                e.put(&[SWITCH]);
                e.put(&after.to_le_bytes());
            }
            Meta::Lead {
                handler,
                id,
                total,
                parts,
                header,
            } => {
                e.put(&[LEAD, header.len() as u8]);
                e.put(&handler.to_le_bytes());
                e.put(&id.to_le_bytes());
                e.put(&total.to_le_bytes());
                e.put(&parts.to_le_bytes());
                e.put(header);
            }
            Meta::Part { id, offset } => {
                e.put(&[PART]);
                e.put(&id.to_le_bytes());
                e.put(&offset.to_le_bytes());
            }
        }
        e
    }

    /// The metadata of a whole message (the common case, without the general encoder).
    #[inline]
    pub fn eager(handler: u16, header: &[u8]) -> Encoded {
        let mut e = Encoded {
            buf: [0; META_MAX],
            len: 4 + header.len(),
        };
        let [h0, h1] = handler.to_le_bytes();
        e.buf[..4].copy_from_slice(&[EAGER, header.len() as u8, h0, h1]);
        if !header.is_empty() {
            e.buf[4..e.len].copy_from_slice(header);
        }
        e
    }

    /// The count of a `SWITCH` block (a quick look, for the network's order keeping).
    #[inline]
    pub fn switch_count(b: &[u8]) -> Option<u64> {
        match b {
            [SWITCH, rest @ ..] => Some(u64::from_le_bytes(rest.try_into().ok()?)),
            _ => None,
        }
    }

    /// Whether `b` is the metadata of a packet that carries (part of) an active
    /// message, as opposed to control (`CTS`, `DONE`, `FIN`, `NACK`, probes): what
    /// per-pair order is about. Looks at the kind byte only.
    #[inline]
    pub fn carries_message(b: &[u8]) -> bool {
        matches!(
            b.first(),
            Some(&(EAGER | FIRST | FRAG | RTS | RTS_NET | LEAD))
        )
    }

    /// Decodes, checking every length against the bytes present.
    #[inline]
    pub fn decode(b: &[u8]) -> Result<Meta<'_>, String> {
        match Meta::eager_parts(b) {
            Some((handler, header)) => Ok(Meta::Eager { handler, header }),
            None => Self::decode_general(b),
        }
    }

    /// (handler, header) if `b` is a well-formed `EAGER` block: the common case,
    /// decoded without the general reader.
    #[inline]
    pub fn eager_parts(b: &[u8]) -> Option<(u16, &[u8])> {
        match b {
            [EAGER, hlen, h0, h1, header @ ..] if header.len() == *hlen as usize => {
                Some((u16::from_le_bytes([*h0, *h1]), header))
            }
            _ => None,
        }
    }

    fn decode_general(b: &[u8]) -> Result<Meta<'_>, String> {
        let mut r = Reader { b, at: 0 };
        let kind = r.u8()?;
        let meta = match kind {
            EAGER => {
                let hlen = r.u8()? as usize;
                let handler = r.u16()?;
                Meta::Eager {
                    handler,
                    header: r.bytes(hlen)?,
                }
            }
            FIRST => {
                let hlen = r.u8()? as usize;
                let handler = r.u16()?;
                let total = r.u64()?;
                Meta::First {
                    handler,
                    total,
                    header: r.bytes(hlen)?,
                }
            }
            FRAG => Meta::Frag,
            RTS => {
                let hlen = r.u8()? as usize;
                let handler = r.u16()?;
                let id = r.u32()?;
                let total = r.u64()?;
                let addr = r.u64()?;
                Meta::Rts {
                    handler,
                    id,
                    total,
                    addr,
                    header: r.bytes(hlen)?,
                }
            }
            RTS_NET => Meta::RtsNet {
                handler: r.u16()?,
                id: r.u32()?,
                total: r.u64()?,
                base: r.u64()?,
                key: r.u64()?,
            },
            CTS => Meta::Cts {
                id: r.u32()?,
                addr: r.u64()?,
                split: r.u64()?,
            },
            DONE => Meta::Done {
                id: r.u32()?,
                ok: r.u8()? != 0,
            },
            FIN => Meta::Fin { id: r.u32()? },
            NACK => Meta::Nack { id: r.u32()? },
            PROBE => Meta::Probe,
            PROBE_ACK => Meta::ProbeAck,
            SWITCH => Meta::Switch { after: r.u64()? },
            LEAD => {
                let hlen = r.u8()? as usize;
                Meta::Lead {
                    handler: r.u16()?,
                    id: r.u32()?,
                    total: r.u64()?,
                    parts: r.u16()?,
                    header: r.bytes(hlen)?,
                }
            }
            PART => Meta::Part {
                id: r.u32()?,
                offset: r.u64()?,
            },
            k => return Err(format!("unknown packet kind {k}")),
        };
        if r.at != b.len() {
            return Err(format!("{} stray metadata bytes", b.len() - r.at));
        }
        Ok(meta)
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        let end =
            end.ok_or_else(|| format!("metadata truncated: need {n} B at offset {}", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.bytes(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(
            self.bytes(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.bytes(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.bytes(8)?.try_into().expect("8 bytes"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips() {
        let h = [7u8; MAX_AM_HEADER];
        let all = [
            Meta::Eager {
                handler: 3,
                header: &h,
            },
            Meta::Eager {
                handler: 0,
                header: &[],
            },
            Meta::First {
                handler: 65000,
                total: 1 << 40,
                header: &h[..5],
            },
            Meta::Frag,
            Meta::Rts {
                handler: 9,
                id: 77,
                total: 123456,
                addr: 0xdead_beef,
                header: &h,
            },
            Meta::RtsNet {
                handler: 65535,
                id: u32::MAX,
                total: u64::MAX,
                base: 1 << 47,
                key: u64::MAX - 1,
            },
            Meta::Cts {
                id: 4,
                addr: 1 << 47,
                split: 1 << 20,
            },
            Meta::Done { id: 4, ok: true },
            Meta::Done { id: 5, ok: false },
            Meta::Fin { id: u32::MAX },
            Meta::Nack { id: 1 },
            Meta::Probe,
            Meta::ProbeAck,
            Meta::Switch { after: 1 << 50 },
            Meta::Lead {
                handler: 65535,
                id: u32::MAX,
                total: 1 << 33,
                parts: 15,
                header: &h,
            },
            Meta::Part {
                id: 7,
                offset: u64::MAX,
            },
        ];
        for m in all {
            let e = m.encode();
            assert!(e.as_bytes().len() <= META_MAX);
            assert_eq!(Meta::decode(e.as_bytes()), Ok(m));
            let switch = match m {
                Meta::Switch { after } => Some(after),
                _ => None,
            };
            assert_eq!(Meta::switch_count(e.as_bytes()), switch);
            if let Meta::Eager { handler, header } = m {
                assert_eq!(Meta::eager(handler, header).as_bytes(), e.as_bytes());
            }
        }
    }

    #[test]
    fn malformed_metadata_is_an_error() {
        assert!(Meta::decode(&[]).is_err());
        assert!(Meta::decode(&[99]).is_err());
        assert!(
            Meta::decode(&[EAGER, 10, 0, 0, 1, 2]).is_err(),
            "header longer than bytes"
        );
        assert!(
            Meta::decode(&[EAGER, 0, 0, 0, 9]).is_err(),
            "header shorter than bytes"
        );
        assert!(Meta::decode(&[EAGER, 0, 0]).is_err(), "truncated handler");
        assert!(Meta::decode(&[FIN, 1, 2]).is_err(), "truncated id");
        assert!(Meta::decode(&[FRAG, 0]).is_err(), "stray byte");
        assert!(Meta::decode(&[RTS, 0, 1, 0]).is_err());
        let net = Meta::RtsNet {
            handler: 1,
            id: 2,
            total: 3,
            base: 4,
            key: 5,
        }
        .encode();
        let b = net.as_bytes();
        assert!(Meta::decode(&b[..b.len() - 1]).is_err(), "truncated key");
        let mut long = b.to_vec();
        long.push(0);
        assert!(Meta::decode(&long).is_err(), "stray byte after the key");
    }

    #[test]
    fn message_and_control_kinds_are_told_apart() {
        let h = [1u8; 3];
        let messages = [
            Meta::eager(1, &h),
            Meta::First {
                handler: 1,
                total: 9,
                header: &h,
            }
            .encode(),
            Meta::Frag.encode(),
            Meta::Rts {
                handler: 1,
                id: 1,
                total: 9,
                addr: 9,
                header: &h,
            }
            .encode(),
            Meta::RtsNet {
                handler: 1,
                id: 1,
                total: 9,
                base: 0,
                key: 7,
            }
            .encode(),
            Meta::Lead {
                handler: 1,
                id: 1,
                total: 9,
                parts: 2,
                header: &h,
            }
            .encode(),
        ];
        assert!(messages.iter().all(|m| Meta::carries_message(m.as_bytes())));
        let control = [
            Meta::Cts {
                id: 1,
                addr: 2,
                split: 3,
            },
            Meta::Done { id: 1, ok: true },
            Meta::Fin { id: 1 },
            Meta::Nack { id: 1 },
            Meta::Probe,
            Meta::ProbeAck,
            Meta::Part { id: 1, offset: 0 },
        ];
        assert!(control
            .iter()
            .all(|m| !Meta::carries_message(m.encode().as_bytes())));
        assert!(!Meta::carries_message(&[]));
    }
}
