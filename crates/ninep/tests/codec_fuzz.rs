//! A bounded fuzz run of the decoder on stable Rust, in the test suite: 500,000 inputs
//! mutated from real frames (one of every 9P2000.L message) by a seeded mutator, each
//! checked for the cargo-fuzz target's properties (`common/decode_check.rs`): no
//! panic, no frame beyond its bytes or msize, decode ∘ encode = identity. The seeds are
//! fixed, so a failure reproduces; `NF_FUZZ_SEED` and `NF_FUZZ_ITERS` run other ones.
//! The open-ended run is `cargo +nightly fuzz run decode` in `crates/ninep/fuzz`.

#[path = "common/decode_check.rs"]
mod decode_check;

use decode_check::check_decoder;
use nf_testkit::ninep::{encoded_samples, Mutator};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn mutated_frames_never_break_the_decoder() {
    let corpus = encoded_samples();
    let seed = env_or("NF_FUZZ_SEED", 0x9f_2000);
    let iters = env_or("NF_FUZZ_ITERS", 500_000);
    let mut m = Mutator::new(seed);
    let (mut frames, mut decoded_any) = (0usize, 0usize);
    for i in 0..iters {
        let input = m.mutate(&corpus);
        let result = std::panic::catch_unwind(|| check_decoder(&input));
        match result {
            Ok(n) => {
                frames += n;
                decoded_any += usize::from(n > 0);
            }
            Err(_) => panic!("seed {seed:#x}, iteration {i}: input {input:02x?}"),
        }
    }
    // The mutations must leave many inputs framed (else only the framing was tested).
    assert!(
        decoded_any as u64 > iters / 10,
        "only {decoded_any} of {iters} inputs held a whole frame"
    );
    assert!(frames > 0);
}

#[test]
fn every_sample_survives_every_truncation() {
    for frame in encoded_samples() {
        for len in 0..=frame.len() {
            check_decoder(&frame[..len]);
        }
    }
}
