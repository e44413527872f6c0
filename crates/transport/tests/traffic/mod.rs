//! Test traffic shared by the transport test binaries (the conformance suite, tcp,
//! ofi): deterministic packets and their check on arrival. Each binary uses a
//! different subset, hence `allow(dead_code)`.
#![allow(dead_code)]

use nf_transport::{Packet, META_MAX};

/// splitmix64: a small deterministic generator for sizes and contents.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Packet `seq` from `src` to `dest`: metadata (≥ 4 B, starting with `seq`) and payload.
pub fn packet(src: usize, dest: usize, seq: u32, max: usize) -> (Vec<u8>, Vec<u8>) {
    let key = mix(((src as u64) << 48) ^ ((dest as u64) << 32) ^ seq as u64);
    let len = match seq {
        0 => 0,
        1 => max,
        _ => (key % (max as u64 + 1)) as usize,
    };
    let meta_len = 4 + (key >> 40) as usize % (META_MAX - 3);
    let mut meta = seq.to_le_bytes().to_vec();
    meta.extend((4..meta_len).map(|i| (key >> (i % 8)) as u8));
    let payload = (0..len).map(|i| (key as usize + i * 7) as u8).collect();
    (meta, payload)
}

/// Checks that `pkt`, arrived at `dest`, is the next one expected from its sender.
pub fn check(pkt: &impl Packet, dest: usize, next: &mut [u32], max: usize) {
    let src = pkt.src();
    let seq = u32::from_le_bytes(pkt.meta()[..4].try_into().unwrap());
    assert_eq!(seq, next[src], "packet from {src} to {dest} out of order");
    let (meta, payload) = packet(src, dest, seq, max);
    assert_eq!(pkt.meta(), &meta[..], "metadata of {src}→{dest} #{seq}");
    assert!(
        pkt.payload() == &payload[..],
        "payload of {src}→{dest} #{seq}"
    );
    next[src] += 1;
}
