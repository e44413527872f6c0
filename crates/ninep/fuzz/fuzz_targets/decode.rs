//! Feeds arbitrary bytes to the frame decoder and both message decoders.
//!
//! Properties checked: nothing panics; a frame never claims more bytes than it was
//! given or than msize; a frame that decodes re-encodes to exactly its input bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use nf_ninep::{FrameDecoder, Message, RawFrame, Rmessage, Tmessage};

/// Small enough that the fuzzer also hits the msize limit.
const MSIZE: u32 = 8192;

fn check<M: Message + std::fmt::Debug>(raw: &RawFrame<'_>, bytes: &[u8]) {
    if let Ok(frame) = raw.decode::<M>() {
        let mut again = Vec::new();
        frame
            .encode(MSIZE, &mut again)
            .expect("a decoded frame re-encodes");
        assert_eq!(again, bytes, "{frame:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let decoder = FrameDecoder::new(MSIZE);
    let mut rest = data;
    while let Ok(Some(raw)) = decoder.split(rest) {
        let size = raw.size();
        assert!(size <= rest.len() && size <= MSIZE as usize);
        check::<Tmessage>(&raw, &rest[..size]);
        check::<Rmessage>(&raw, &rest[..size]);
        rest = &rest[size..];
    }
});
