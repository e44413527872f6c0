//! The ofi packet header: what a receiver needs to know about a message that the
//! provider does not tell it (who sent it, in which order, and that it is ours).
//!
//! ```text
//!  0      2    3         4        8        12            16       20
//!  +------+----+---------+--------+--------+-------------+--------+------ ... ------+
//!  | "nf" | v1 | meta_len|  src   |  seq   | payload_len | check  | meta | payload  |
//!  +------+----+---------+--------+--------+-------------+--------+------ ... ------+
//! ```
//! All fields little-endian. `src` is the sender's rank (RDM receives do not name the
//! sender without `FI_SOURCE`, which not every provider offers); `seq` counts packets
//! per (sender, receiver) pair from 0 and wraps; `check` is FNV-1a over the job cookie
//! and bytes 0..16, so a packet of another job, or a damaged header, is refused.

/// Bytes of the header.
pub const HEADER_LEN: usize = 20;
const MAGIC: [u8; 2] = *b"nf";
const VERSION: u8 = 1;

/// The decoded header of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The sender's rank.
    pub src: u32,
    /// Per-pair sequence number.
    pub seq: u32,
    /// Bytes of metadata after the header.
    pub meta_len: u8,
    /// Bytes of payload after the metadata.
    pub payload_len: u32,
}

fn check_word(cookie: u64, head: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in cookie.to_le_bytes().iter().chain(head) {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

impl Header {
    /// Writes the header into `out[..HEADER_LEN]`.
    pub fn encode(&self, cookie: u64, out: &mut [u8]) {
        let out = &mut out[..HEADER_LEN];
        out[0..2].copy_from_slice(&MAGIC);
        out[2] = VERSION;
        out[3] = self.meta_len;
        out[4..8].copy_from_slice(&self.src.to_le_bytes());
        out[8..12].copy_from_slice(&self.seq.to_le_bytes());
        out[12..16].copy_from_slice(&self.payload_len.to_le_bytes());
        let c = check_word(cookie, &out[..16]);
        out[16..20].copy_from_slice(&c.to_le_bytes());
    }

    /// Reads and checks the header of a message of `bytes.len()` bytes: magic,
    /// version, check word, and that the lengths add up to the message's length.
    pub fn decode(cookie: u64, bytes: &[u8]) -> Result<Header, String> {
        if bytes.len() < HEADER_LEN {
            return Err(format!(
                "{} B is shorter than the {HEADER_LEN} B header",
                bytes.len()
            ));
        }
        let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        if bytes[0..2] != MAGIC || bytes[2] != VERSION {
            return Err(format!(
                "not a ninefold v{VERSION} packet (starts {:02x?})",
                &bytes[..3]
            ));
        }
        if word(16) != check_word(cookie, &bytes[..16]) {
            return Err("header check failed (another job's packet, or damaged)".into());
        }
        let h = Header {
            meta_len: bytes[3],
            src: word(4),
            seq: word(8),
            payload_len: word(12),
        };
        let want = HEADER_LEN + h.meta_len as usize + h.payload_len as usize;
        if want != bytes.len() {
            return Err(format!(
                "header says {} B of metadata and {} B of payload, but {} B arrived",
                h.meta_len,
                h.payload_len,
                bytes.len() - HEADER_LEN
            ));
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_rejects_damage() {
        let h = Header {
            src: 7,
            seq: u32::MAX,
            meta_len: 3,
            payload_len: 5,
        };
        let mut buf = vec![0u8; HEADER_LEN + 8];
        h.encode(42, &mut buf);
        assert_eq!(Header::decode(42, &buf), Ok(h));
        assert!(Header::decode(43, &buf).unwrap_err().contains("check"));
        assert!(Header::decode(42, &buf[..HEADER_LEN + 7])
            .unwrap_err()
            .contains("arrived"));
        assert!(Header::decode(42, &buf[..5])
            .unwrap_err()
            .contains("shorter"));
        buf[5] ^= 1;
        assert!(Header::decode(42, &buf).unwrap_err().contains("check"));
        buf[0] = b'x';
        assert!(Header::decode(42, &buf).unwrap_err().contains("not a"));
    }
}
