//! Feeds arbitrary bytes to the frame decoder and both message decoders. The properties
//! live in `tests/common/decode_check.rs`, shared with the bounded stable run in the
//! test suite (`tests/codec_fuzz.rs`).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/decode_check.rs"]
mod decode_check;

fuzz_target!(|data: &[u8]| {
    decode_check::check_decoder(data);
});
