//! Property tests: round-trips of the variable-size messages, and hostile input
//! (random bytes, truncations, mutations of valid frames) that must never panic.

use nf_ninep::*;
use nf_testkit::ninep::{encoded_samples, MSIZE};
use proptest::collection::vec;
use proptest::prelude::*;

fn name() -> impl Strategy<Value = String> {
    prop_oneof!["[a-zA-Z0-9._-]{0,24}", "\\PC{0,12}"]
}

fn qid() -> impl Strategy<Value = Qid> {
    (any::<u8>(), any::<u32>(), any::<u64>()).prop_map(|(ty, version, path)| Qid {
        ty: QidType(ty),
        version,
        path,
    })
}

fn dirent() -> impl Strategy<Value = Dirent> {
    (qid(), any::<u64>(), any::<u8>(), name()).prop_map(|(qid, offset, dtype, name)| Dirent {
        qid,
        offset,
        dtype,
        name,
    })
}

/// Encodes `msg` under `tag`, decodes it back and checks equality and size.
fn roundtrip<M: Message + std::fmt::Debug + PartialEq>(
    tag: u16,
    msg: M,
) -> Result<(), TestCaseError> {
    let mut buf = Vec::new();
    let size =
        encode_frame(tag, &msg, MSIZE, &mut buf).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(size, buf.len());
    prop_assert_eq!(size, HEADER_SIZE + msg.body_size());
    let decoded = FrameDecoder::new(MSIZE).decode::<M>(&buf);
    prop_assert_eq!(decoded, Ok(Some((Frame { tag, body: msg }, size))));
    Ok(())
}

/// Whatever `bytes` holds, decoding must not panic; a frame that decodes must re-encode
/// to exactly the bytes it came from (every field has one encoding).
fn decode_is_total_and_canonical(bytes: &[u8], msize: u32) -> Result<(), TestCaseError> {
    let decoder = FrameDecoder::new(msize);
    let split = decoder.split(bytes);
    if let Ok(Some(raw)) = split {
        prop_assert!(raw.size() <= bytes.len() && raw.size() <= msize as usize);
    }
    check_direction::<Tmessage>(&decoder, bytes)?;
    check_direction::<Rmessage>(&decoder, bytes)
}

fn check_direction<M: Message + std::fmt::Debug>(
    decoder: &FrameDecoder,
    bytes: &[u8],
) -> Result<(), TestCaseError> {
    if let Ok(Some((frame, used))) = decoder.decode::<M>(bytes) {
        let mut again = Vec::new();
        frame
            .encode(decoder.msize(), &mut again)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&again[..], &bytes[..used], "{:?}", frame);
    }
    Ok(())
}

proptest! {
    #[test]
    fn twalk_roundtrips(fid: u32, newfid: u32, wnames in vec(name(), 0..=MAXWELEM)) {
        roundtrip(1, Tmessage::from(Twalk { fid, newfid, wnames }))?;
    }

    #[test]
    fn rwalk_roundtrips(wqids in vec(qid(), 0..=MAXWELEM)) {
        roundtrip(2, Rmessage::from(Rwalk { wqids }))?;
    }

    #[test]
    fn data_roundtrips(fid: u32, offset: u64, bytes in vec(any::<u8>(), 0..4096)) {
        roundtrip(3, Tmessage::from(Twrite { fid, offset, data: Data(bytes.clone()) }))?;
        roundtrip(4, Rmessage::from(Rread { data: Data(bytes) }))?;
    }

    #[test]
    fn strings_roundtrip(dfid: u32, name in name(), mode: u32, gid: u32) {
        roundtrip(5, Tmessage::from(Tmkdir { dfid, name: name.clone(), mode, gid }))?;
        roundtrip(6, Rmessage::from(Rreadlink { target: name }))?;
    }

    #[test]
    fn dirents_pack_whole_entries_within_count(
        entries in vec(dirent(), 0..40),
        count in 0u32..2048,
    ) {
        let (data, packed) = encode_dirents(&entries, count).unwrap();
        prop_assert!(data.len() <= count as usize);
        prop_assert_eq!(decode_dirents(data.as_slice()).unwrap(), &entries[..packed]);
        if let Some(next) = entries.get(packed) {
            prop_assert!(data.len() + next.byte_size() > count as usize);
        }
        roundtrip(7, Rmessage::from(Rreaddir { data }))?;
    }

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..512), msize in 0u32..1024) {
        decode_is_total_and_canonical(&bytes, msize)?;
    }

    #[test]
    fn random_bodies_behind_valid_headers_never_panic(
        ty in prop::sample::select(MsgType::ALL.to_vec()),
        body in vec(any::<u8>(), 0..256),
    ) {
        let mut bytes = ((HEADER_SIZE + body.len()) as u32).to_le_bytes().to_vec();
        bytes.push(ty as u8);
        bytes.extend_from_slice(&[0, 0]);
        bytes.extend_from_slice(&body);
        decode_is_total_and_canonical(&bytes, MSIZE)?;
    }

    #[test]
    fn truncated_frames_are_incomplete(index in any::<prop::sample::Index>(), cut in any::<prop::sample::Index>()) {
        let samples = encoded_samples();
        let frame = index.get(&samples);
        let cut = cut.index(frame.len());
        prop_assert_eq!(FrameDecoder::new(MSIZE).decode::<Tmessage>(&frame[..cut]), Ok(None));
        prop_assert_eq!(FrameDecoder::new(MSIZE).decode::<Rmessage>(&frame[..cut]), Ok(None));
    }

    #[test]
    fn mutated_frames_never_panic(
        index in any::<prop::sample::Index>(),
        edits in vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut frame = index.get(&encoded_samples()).clone();
        for (at, byte) in edits {
            let at = at.index(frame.len());
            frame[at] = byte;
        }
        decode_is_total_and_canonical(&frame, MSIZE)?;
    }

    #[test]
    fn shortened_frames_with_fixed_size_never_panic(
        index in any::<prop::sample::Index>(),
        keep in any::<prop::sample::Index>(),
    ) {
        // Cut a frame's body short but rewrite `size` to match: every field length
        // now disagrees with what is left.
        let mut frame = index.get(&encoded_samples()).clone();
        let keep = HEADER_SIZE + keep.index(frame.len() - HEADER_SIZE + 1);
        frame.truncate(keep);
        frame[..4].copy_from_slice(&(keep as u32).to_le_bytes());
        decode_is_total_and_canonical(&frame, MSIZE)?;
    }
}
