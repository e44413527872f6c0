//! Qids that stay unique across members.
//!
//! Every member numbers its files on its own, so two nodes may hand out the same
//! `qid.path`; a client (the Linux kernel above all, which keys inodes on it) must never
//! see one path for two files. The gateway therefore stamps each member's number into
//! bits 40–55 of every qid it passes on (XOR). A node's own paths leave those bits clear
//! (a node's mount table uses the top 8 bits, its files' inode numbers stay below
//! 2^40).
//!
//! Gateways nest, so the field is shared by two levels: a *node* member's number goes
//! in **bit-reversed** (member 1 sets bit 55, member 2 bit 54, …), a *cluster* member's
//! (another gateway) as it is (from bit 40 up). The gateway below has stamped its nodes
//! from the top, the one above stamps the cluster from the bottom, so the two numbers
//! do not meet while together they need at most 16 bits (say 256 nodes behind each of
//! 255 clusters). The gateway's own files use paths below 2^40.

use nf_ninep::types::{Dirent, Qid};

/// Where the member number goes.
const SHIFT: u32 = 40;

/// The mask XORed into `qid.path` for member `index` (1-based), a gateway when
/// `cluster`.
pub fn stamp(index: u16, cluster: bool) -> u64 {
    let bits = if cluster { index } else { index.reverse_bits() };
    u64::from(bits) << SHIFT
}

/// `qid` with `stamp` applied.
pub fn remap(stamp: u64, qid: Qid) -> Qid {
    Qid {
        path: qid.path ^ stamp,
        ..qid
    }
}

/// Every entry's qid of a member's directory listing, remapped.
pub fn remap_dirents(stamp: u64, entries: &mut [Dirent]) {
    for e in entries {
        e.qid = remap(stamp, e.qid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep::types::QidType;

    fn q(path: u64) -> Qid {
        Qid {
            ty: QidType::FILE,
            version: 0,
            path,
        }
    }

    #[test]
    fn members_do_not_collide_and_nesting_keeps_apart() {
        let a = remap(stamp(1, false), q(7));
        let b = remap(stamp(2, false), q(7));
        assert_ne!(a.path, b.path);
        assert_eq!(
            a.path & ((1 << 40) - 1),
            7,
            "the member's own bits are kept"
        );
        let mut seen = std::collections::HashSet::new();
        // Nodes of this gateway, and nodes behind 8 gateways below it.
        for node in 1..=64u16 {
            assert!(seen.insert(remap(stamp(node, false), q(5)).path));
        }
        for cluster in 65..=72u16 {
            for node in 1..=64u16 {
                let below = remap(stamp(node, false), q(5));
                let shown = remap(stamp(cluster, true), below);
                assert!(seen.insert(shown.path), "cluster {cluster} node {node}");
            }
        }
        assert!(seen
            .iter()
            .all(|p| p & ((1 << 40) - 1) == 5 && p >> 56 == 0));
    }
}
