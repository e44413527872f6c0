//! The tcp transport's bytes on the wire: the hello exchanged when a connection is
//! set up, and the header in front of every packet. Integers are little-endian.
//!
//! Hello (28 B). The connecting rank sends its own; the accepting rank checks it and
//! answers with its own, which the connecting rank checks in turn:
//! ```text
//!  0       4         6      8              16     20     24            28
//!  | magic | version | zero | cookie (u64) | rank | size | max_payload |
//!   "nf9t"   u16       u16                   u32    u32    u32
//! ```
//! Frame header (8 B), followed by `meta_len` bytes of metadata and `payload_len`
//! bytes of payload:
//! ```text
//!  0      1      2          3       4                 8
//!  | 0xA9 | kind | meta_len | check | payload_len u32 |
//! ```
//! `kind` is 0 for a packet, 1 for goodbye (the sender is leaving the job; both lengths
//! are 0). `check` is `0x5A` XOR the other seven bytes, so a stream that lost its
//! framing is caught at the next header with high probability. Lengths are checked
//! against [`META_MAX`] and the receiver's `max_payload` before anything is allocated.

use crate::META_MAX;

/// Length of a hello.
pub const HELLO_LEN: usize = 28;
/// First four bytes of a hello.
pub const HELLO_MAGIC: [u8; 4] = *b"nf9t";
/// Version of this wire format; peers must speak the same one.
pub const VERSION: u16 = 1;
/// Length of a frame header.
pub const HEADER_LEN: usize = 8;

const FRAME_MAGIC: u8 = 0xA9;
const CHECK_SEED: u8 = 0x5A;

/// What a rank says about itself when a connection is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    /// The job cookie; both ends must hold the same one.
    pub cookie: u64,
    /// The sender's rank.
    pub rank: u32,
    /// The number of ranks in the sender's job.
    pub size: u32,
    /// The largest payload the sender accepts in one packet.
    pub max_payload: u32,
}

impl Hello {
    /// The hello's bytes.
    pub fn encode(&self) -> [u8; HELLO_LEN] {
        let mut b = [0u8; HELLO_LEN];
        b[0..4].copy_from_slice(&HELLO_MAGIC);
        b[4..6].copy_from_slice(&VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.cookie.to_le_bytes());
        b[16..20].copy_from_slice(&self.rank.to_le_bytes());
        b[20..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..28].copy_from_slice(&self.max_payload.to_le_bytes());
        b
    }

    /// Parses a hello; fails on a wrong magic, version or reserved field.
    pub fn decode(b: &[u8; HELLO_LEN]) -> Result<Hello, String> {
        if b[0..4] != HELLO_MAGIC {
            return Err(format!(
                "not a ninefold tcp hello (starts with {:02x?}, expected {:02x?})",
                &b[0..4],
                HELLO_MAGIC
            ));
        }
        let version = u16::from_le_bytes([b[4], b[5]]);
        if version != VERSION {
            return Err(format!(
                "wire version {version}, this build speaks {VERSION}: run the same ninefold on every host"
            ));
        }
        if b[6..8] != [0, 0] {
            return Err("reserved hello bytes are not zero".into());
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut cookie = [0u8; 8];
        cookie.copy_from_slice(&b[8..16]);
        Ok(Hello {
            cookie: u64::from_le_bytes(cookie),
            rank: u32_at(16),
            size: u32_at(20),
            max_payload: u32_at(24),
        })
    }

    /// Checks that a peer's hello belongs to our job: same cookie, job size and
    /// packet limit, and a rank within the job (which rank is the caller's business).
    pub fn check_against(&self, ours: &Hello) -> Result<(), String> {
        if self.cookie != ours.cookie {
            return Err(format!(
                "wrong job cookie {:#x} (ours is {:#x}): the peer belongs to another job",
                self.cookie, ours.cookie
            ));
        }
        if self.size != ours.size {
            return Err(format!(
                "job size {} differs from ours ({})",
                self.size, ours.size
            ));
        }
        if self.rank >= ours.size {
            return Err(format!(
                "rank {} is outside the job's 0..{}",
                self.rank, ours.size
            ));
        }
        if self.max_payload != ours.max_payload {
            return Err(format!(
                "max payload {} B differs from ours ({} B): give every rank the same setting",
                self.max_payload, ours.max_payload
            ));
        }
        Ok(())
    }
}

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A packet: metadata and payload follow.
    Data,
    /// The sender is leaving the job; nothing follows.
    Bye,
}

/// The header in front of every frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// What the frame carries.
    pub kind: Kind,
    /// Metadata bytes that follow, at most [`META_MAX`].
    pub meta_len: u8,
    /// Payload bytes after the metadata.
    pub payload_len: u32,
}

impl Header {
    /// The goodbye frame's header.
    pub const BYE: Header = Header {
        kind: Kind::Bye,
        meta_len: 0,
        payload_len: 0,
    };

    /// The header of a packet; the caller has checked both lengths.
    pub fn data(meta_len: usize, payload_len: usize) -> Header {
        debug_assert!(meta_len <= META_MAX && payload_len <= u32::MAX as usize);
        Header {
            kind: Kind::Data,
            meta_len: meta_len as u8,
            payload_len: payload_len as u32,
        }
    }

    /// Bytes after the header: metadata and payload.
    pub fn body_len(&self) -> usize {
        self.meta_len as usize + self.payload_len as usize
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let kind = match self.kind {
            Kind::Data => 0,
            Kind::Bye => 1,
        };
        let len = self.payload_len.to_le_bytes();
        let mut b = [
            FRAME_MAGIC,
            kind,
            self.meta_len,
            0,
            len[0],
            len[1],
            len[2],
            len[3],
        ];
        b[3] = check_byte(&b);
        b
    }

    /// Parses and checks a header, refusing lengths above [`META_MAX`] and
    /// `max_payload` (so nothing unbounded is ever allocated for it).
    pub fn decode(b: &[u8; HEADER_LEN], max_payload: usize) -> Result<Header, String> {
        if b[0] != FRAME_MAGIC {
            return Err(format!(
                "frame starts with {:#04x}, not {FRAME_MAGIC:#04x}: the stream lost its framing",
                b[0]
            ));
        }
        if b[3] != check_byte(b) {
            return Err(format!("frame header {b:02x?} fails its check byte"));
        }
        let kind = match b[1] {
            0 => Kind::Data,
            1 => Kind::Bye,
            k => return Err(format!("unknown frame kind {k}")),
        };
        let meta_len = b[2];
        let payload_len = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        if meta_len as usize > META_MAX {
            return Err(format!("metadata length {meta_len} > {META_MAX}"));
        }
        if payload_len as usize > max_payload {
            return Err(format!(
                "payload length {payload_len} > max payload {max_payload}"
            ));
        }
        if kind == Kind::Bye && (meta_len != 0 || payload_len != 0) {
            return Err("goodbye frame with a body".into());
        }
        Ok(Header {
            kind,
            meta_len,
            payload_len,
        })
    }
}

/// `CHECK_SEED` XOR every header byte but the check byte itself.
fn check_byte(b: &[u8; HEADER_LEN]) -> u8 {
    b.iter()
        .enumerate()
        .filter(|&(i, _)| i != 3)
        .fold(CHECK_SEED, |acc, (_, &x)| acc ^ x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello() -> Hello {
        Hello {
            cookie: 0xDEAD_BEEF_0123_4567,
            rank: 3,
            size: 8,
            max_payload: 256 * 1024,
        }
    }

    #[test]
    fn hello_round_trips() {
        let h = hello();
        let b = h.encode();
        assert_eq!(&b[0..4], b"nf9t");
        assert_eq!(Hello::decode(&b), Ok(h));
        assert_eq!(h.check_against(&h), Ok(()));
    }

    #[test]
    fn hello_rejects_bad_magic_version_and_reserved() {
        let good = hello().encode();
        for (at, val, want) in [
            (0, b'X', "not a ninefold"),
            (4, 9, "wire version"),
            (7, 1, "reserved"),
        ] {
            let mut b = good;
            b[at] = val;
            let err = Hello::decode(&b).unwrap_err();
            assert!(err.contains(want), "byte {at}: {err}");
        }
    }

    #[test]
    fn hello_check_catches_other_jobs() {
        let ours = hello();
        let cases = [
            (Hello { cookie: 1, ..ours }, "cookie"),
            (Hello { size: 9, ..ours }, "job size"),
            (Hello { rank: 8, ..ours }, "outside"),
            (
                Hello {
                    max_payload: 1,
                    ..ours
                },
                "max payload",
            ),
        ];
        for (theirs, want) in cases {
            let err = theirs.check_against(&ours).unwrap_err();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn header_round_trips() {
        for h in [
            Header::data(0, 0),
            Header::data(META_MAX, 65536),
            Header::data(7, 1),
            Header::BYE,
        ] {
            assert_eq!(Header::decode(&h.encode(), 65536), Ok(h));
        }
        assert_eq!(Header::data(5, 10).body_len(), 15);
    }

    #[test]
    fn header_rejects_garbage_and_oversized_lengths() {
        let good = Header::data(4, 100).encode();
        let mut b = good;
        b[0] = 0;
        assert!(Header::decode(&b, 1000).unwrap_err().contains("framing"));
        let mut b = good;
        b[5] ^= 1;
        assert!(Header::decode(&b, 1 << 20)
            .unwrap_err()
            .contains("check byte"));
        let mut b = good;
        b[1] = 7;
        b[3] = check_byte(&b);
        assert!(Header::decode(&b, 1000).unwrap_err().contains("kind"));
        let big = Header {
            kind: Kind::Data,
            meta_len: 0,
            payload_len: u32::MAX,
        };
        assert!(Header::decode(&big.encode(), 1000)
            .unwrap_err()
            .contains("payload length"));
        let fat_meta = Header {
            kind: Kind::Data,
            meta_len: META_MAX as u8 + 1,
            payload_len: 0,
        };
        assert!(Header::decode(&fat_meta.encode(), 1000)
            .unwrap_err()
            .contains("metadata"));
        let fat_bye = Header {
            kind: Kind::Bye,
            meta_len: 0,
            payload_len: 1,
        };
        assert!(Header::decode(&fat_bye.encode(), 1000)
            .unwrap_err()
            .contains("goodbye"));
        assert_eq!(
            Header::decode(&good, 99).map_err(|e| e.contains("payload")),
            Err(true)
        );
    }
}
