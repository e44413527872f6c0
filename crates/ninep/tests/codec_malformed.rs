//! Malformed input, one named case each: the decoder must return the right error.

use nf_ninep::*;

const MSIZE: u32 = 8192;

/// Builds `size[4] type[1] tag[2] body` with a correct size field.
fn frame(ty: u8, body: &[u8]) -> Vec<u8> {
    let mut f = ((HEADER_SIZE + body.len()) as u32).to_le_bytes().to_vec();
    f.push(ty);
    f.extend_from_slice(&[1, 0]);
    f.extend_from_slice(body);
    f
}

fn decode_t(bytes: &[u8]) -> Result<Option<(Frame<Tmessage>, usize)>, DecodeError> {
    FrameDecoder::new(MSIZE).decode(bytes)
}

fn decode_r(bytes: &[u8]) -> Result<Option<(Frame<Rmessage>, usize)>, DecodeError> {
    FrameDecoder::new(MSIZE).decode(bytes)
}

fn field(err: &DecodeError) -> String {
    match err {
        DecodeError::Truncated { field, .. }
        | DecodeError::LengthBeyondFrame { field, .. }
        | DecodeError::TooManyElements { field, .. }
        | DecodeError::InvalidUtf8 { field, .. }
        | DecodeError::TrailingBytes { field, .. } => field.to_string(),
        other => panic!("no field in {other:?}"),
    }
}

#[test]
fn size_below_header_is_fatal() {
    for size in 0u32..7 {
        let mut bytes = size.to_le_bytes().to_vec();
        bytes.extend_from_slice(&[120, 0, 0]);
        let err = decode_t(&bytes).unwrap_err();
        assert_eq!(err, DecodeError::FrameTooSmall { size });
        assert!(err.is_fatal());
    }
}

#[test]
fn size_above_msize_fails_before_the_frame_arrives() {
    let bytes = (MSIZE + 1).to_le_bytes();
    let err = decode_t(&bytes).unwrap_err();
    assert_eq!(
        err,
        DecodeError::FrameTooLarge {
            size: MSIZE + 1,
            msize: MSIZE
        }
    );
    assert!(err.is_fatal());
    let err = decode_t(&u32::MAX.to_le_bytes()).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::FrameTooLarge { size: u32::MAX, .. }
    ));
}

#[test]
fn unknown_type_byte() {
    // 6 is Tlerror (never sent), 106/107 Terror/Rerror, 112 Topen, 124 Tstat: all
    // absent from 9P2000.L.
    for ty in [0u8, 6, 106, 107, 112, 124, 200, 255] {
        let err = decode_t(&frame(ty, &[])).unwrap_err();
        assert_eq!(err, DecodeError::UnknownType { ty });
        assert!(!err.is_fatal());
    }
}

#[test]
fn walk_of_17_names() {
    let mut body = vec![0, 0, 0, 0, 1, 0, 0, 0, 17, 0];
    for _ in 0..17 {
        body.extend_from_slice(&[1, 0, b'a']);
    }
    let err = decode_t(&frame(MsgType::Twalk as u8, &body)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TooManyElements {
            field: FieldPath::root().within("wnames").within("Twalk"),
            offset: 15,
            count: 17,
            limit: MAXWELEM,
        }
    );
    // And the encoder refuses to produce one.
    let walk = Twalk {
        fid: 0,
        newfid: 1,
        wnames: vec!["a".into(); 17],
    };
    let err = encode_frame(1, &Tmessage::from(walk), MSIZE, &mut Vec::new()).unwrap_err();
    assert!(matches!(
        err,
        EncodeError::TooManyElements {
            count: 17,
            limit: 16,
            ..
        }
    ));
}

#[test]
fn rwalk_of_17_qids() {
    let mut body = vec![17, 0];
    body.extend_from_slice(&[0; 17 * 13]);
    let err = decode_r(&frame(MsgType::Rwalk as u8, &body)).unwrap_err();
    assert!(
        matches!(err, DecodeError::TooManyElements { count: 17, .. }),
        "{err}"
    );
}

#[test]
fn string_length_beyond_frame() {
    // Tmkdir whose name claims 65535 bytes with one byte left.
    let body = [1, 0, 0, 0, 0xff, 0xff, b'x'];
    let err = decode_t(&frame(MsgType::Tmkdir as u8, &body)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::LengthBeyondFrame {
            field: FieldPath::root().within("name").within("Tmkdir"),
            offset: 11,
            len: 0xffff,
            remaining: 1,
        }
    );
}

#[test]
fn count_beyond_msize() {
    // Twrite announcing more data than msize allows, in a 30-byte frame.
    let mut body = vec![2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    body.extend_from_slice(&(MSIZE + 1).to_le_bytes());
    body.extend_from_slice(b"hello!");
    let err = decode_t(&frame(MsgType::Twrite as u8, &body)).unwrap_err();
    assert!(
        matches!(err, DecodeError::LengthBeyondFrame { len, remaining: 6, offset: 19, .. } if len == u64::from(MSIZE) + 1),
        "{err}"
    );
    assert_eq!(field(&err), "Twrite.data");

    // The encoder will not build an Rread that overflows msize either.
    let rread = Rread {
        data: Data(vec![0; (MSIZE - 10) as usize]),
    };
    let err = encode_frame(1, &Rmessage::from(rread), MSIZE, &mut Vec::new()).unwrap_err();
    assert_eq!(
        err,
        EncodeError::FrameTooLarge {
            size: MSIZE as usize + 1,
            msize: MSIZE
        }
    );
}

#[test]
fn four_gib_claim_in_twenty_bytes() {
    // Rread whose count says 4 GiB − 1 in a 20-byte frame: refused before any allocation.
    let mut body = u32::MAX.to_le_bytes().to_vec();
    body.extend_from_slice(&[0xaa; 9]);
    let bytes = frame(MsgType::Rread as u8, &body);
    assert_eq!(bytes.len(), 20);
    let err = decode_r(&bytes).unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::LengthBeyondFrame {
                len: 0xffff_ffff,
                remaining: 9,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn count_smaller_than_payload_is_trailing_garbage() {
    let mut body = 2u32.to_le_bytes().to_vec();
    body.extend_from_slice(b"abc");
    let err = decode_r(&frame(MsgType::Rread as u8, &body)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::TrailingBytes {
            field: FieldPath::root().within("Rread"),
            offset: 13,
            extra: 1,
        }
    );
}

#[test]
fn trailing_bytes_after_fixed_fields() {
    let err = decode_t(&frame(MsgType::Tclunk as u8, &[1, 0, 0, 0, 9])).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::TrailingBytes {
            offset: 11,
            extra: 1,
            ..
        }
    ));
    let err = decode_r(&frame(MsgType::Rclunk as u8, &[0])).unwrap_err();
    assert!(matches!(
        err,
        DecodeError::TrailingBytes {
            offset: 7,
            extra: 1,
            ..
        }
    ));
}

#[test]
fn truncated_fixed_field() {
    // Rgetattr cut after the qid: `mode` is missing.
    let body = [0u8; 8 + 13 + 2];
    let err = decode_r(&frame(MsgType::Rgetattr as u8, &body)).unwrap_err();
    assert_eq!(
        err,
        DecodeError::Truncated {
            field: FieldPath::root()
                .within("mode")
                .within("attr")
                .within("Rgetattr"),
            offset: 28,
            needed: 4,
            remaining: 2,
        }
    );
}

#[test]
fn invalid_utf8() {
    let body = [0, 0, 0, 0, 2, 0, 0xc3, 0x28];
    let err = decode_t(&frame(
        MsgType::Txattrwalk as u8,
        &[&[0, 0, 0, 0], &body[..]].concat(),
    ))
    .unwrap_err();
    assert_eq!(
        err,
        DecodeError::InvalidUtf8 {
            field: FieldPath::root().within("name").within("Txattrwalk"),
            offset: 15,
        }
    );
}

#[test]
fn body_errors_leave_the_stream_usable() {
    // A bad frame followed by a good one: split still finds both.
    let mut stream = frame(MsgType::Tclunk as u8, &[1, 0]);
    encode_frame(2, &Tmessage::from(Tclunk { fid: 3 }), MSIZE, &mut stream).unwrap();
    let decoder = FrameDecoder::new(MSIZE);
    let bad = decoder.split(&stream).unwrap().unwrap();
    assert_eq!(bad.tag, 1);
    assert!(bad.decode::<Tmessage>().is_err());
    let (good, _) = decoder
        .decode::<Tmessage>(&stream[bad.size()..])
        .unwrap()
        .unwrap();
    assert_eq!(good, Frame::new(2, Tclunk { fid: 3 }));
}

#[test]
fn error_messages_name_field_offset_and_limit() {
    let err = decode_t(&frame(MsgType::Tmkdir as u8, &[1, 0, 0, 0, 0xff, 0xff])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Tmkdir.name at offset 11: length 65535 exceeds the 0 bytes left"
    );
}
