//! A stable hash: FNV-1a over bytes.
//!
//! Ranks derive shared names (shared-memory files, connection cookies) by hashing
//! the same text independently, so the hash must be equal in every process, every
//! binary and every Rust release; `std`'s `DefaultHasher` promises none of that.

/// FNV-1a (64-bit) of `bytes`: the same value in every process.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_published_test_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
