//! The decoder's fuzz properties, shared by the cargo-fuzz target (`fuzz/`, nightly)
//! and the bounded stable run (`tests/codec_fuzz.rs`): on any bytes, nothing panics; a
//! frame never claims more bytes than it was given or than msize; a frame that decodes
//! re-encodes to exactly its input bytes.

use nf_ninep::{FrameDecoder, Message, RawFrame, Rmessage, Tmessage};

/// Small enough that mutated size fields also hit the msize limit.
pub const FUZZ_MSIZE: u32 = 8192;

fn reencodes<M: Message + std::fmt::Debug>(raw: &RawFrame<'_>, bytes: &[u8]) {
    if let Ok(frame) = raw.decode::<M>() {
        let mut again = Vec::new();
        frame
            .encode(FUZZ_MSIZE, &mut again)
            .expect("a decoded frame re-encodes");
        assert_eq!(again, bytes, "{frame:?}");
    }
}

/// Splits `data` into frames and checks every property on each; returns how many
/// frames it split.
pub fn check_decoder(data: &[u8]) -> usize {
    let decoder = FrameDecoder::new(FUZZ_MSIZE);
    let mut rest = data;
    let mut frames = 0;
    while let Ok(Some(raw)) = decoder.split(rest) {
        let size = raw.size();
        assert!(size <= rest.len() && size <= FUZZ_MSIZE as usize);
        reencodes::<Tmessage>(&raw, &rest[..size]);
        reencodes::<Rmessage>(&raw, &rest[..size]);
        rest = &rest[size..];
        frames += 1;
    }
    frames
}
