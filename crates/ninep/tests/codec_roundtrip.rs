//! Every message type survives encode → decode, and `byte_size` matches the encoding.

use std::collections::BTreeSet;

use nf_ninep::*;
use nf_testkit::ninep::{replies, requests, MSIZE};

fn roundtrip<M: Message + std::fmt::Debug + PartialEq + Clone>(tag: u16, msg: &M) {
    let mut buf = Vec::new();
    let size = encode_frame(tag, msg, MSIZE, &mut buf).unwrap();
    assert_eq!(size, buf.len(), "{msg:?}");
    assert_eq!(size, HEADER_SIZE + msg.body_size(), "{msg:?}");
    assert_eq!(
        u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize,
        size
    );
    assert_eq!(buf[4], msg.msg_type() as u8);

    let (frame, used) = FrameDecoder::new(MSIZE)
        .decode::<M>(&buf)
        .unwrap_or_else(|e| panic!("{msg:?}: {e}"))
        .expect("complete frame");
    assert_eq!(used, size);
    assert_eq!(frame.tag, tag);
    assert_eq!(&frame.body, msg);
}

#[test]
fn every_request_roundtrips() {
    for (i, msg) in requests().iter().enumerate() {
        roundtrip(i as u16, msg);
    }
}

#[test]
fn every_reply_roundtrips() {
    for (i, msg) in replies().iter().enumerate() {
        roundtrip(0xff00 + i as u16, msg);
    }
}

#[test]
fn samples_cover_every_message_type() {
    let covered: BTreeSet<MsgType> = requests()
        .iter()
        .map(Message::msg_type)
        .chain(replies().iter().map(Message::msg_type))
        .collect();
    let all: BTreeSet<MsgType> = MsgType::ALL.iter().copied().collect();
    let missing: Vec<_> = all.difference(&covered).collect();
    assert!(missing.is_empty(), "no round-trip sample for {missing:?}");
}

#[test]
fn frames_decode_back_to_back_from_one_buffer() {
    let mut stream = Vec::new();
    for (i, msg) in requests().iter().enumerate() {
        encode_frame(i as u16, msg, MSIZE, &mut stream).unwrap();
    }
    let decoder = FrameDecoder::new(MSIZE);
    let mut rest = &stream[..];
    let mut decoded = Vec::new();
    while let Some((frame, used)) = decoder.decode::<Tmessage>(rest).unwrap() {
        decoded.push(frame.body);
        rest = &rest[used..];
    }
    assert!(rest.is_empty());
    assert_eq!(decoded, requests());
}

#[test]
fn requests_and_replies_do_not_mix() {
    let mut buf = Vec::new();
    encode_frame(1, &Rmessage::from(Rclunk), MSIZE, &mut buf).unwrap();
    let err = FrameDecoder::new(MSIZE)
        .decode::<Tmessage>(&buf)
        .unwrap_err();
    assert_eq!(
        err,
        DecodeError::UnexpectedType {
            ty: MsgType::Rclunk as u8,
            expected: "request"
        }
    );
}

#[test]
fn rlerror_from_io_error() {
    let err = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "no");
    assert_eq!(Rlerror::from(&err), Rlerror::new(errno::EACCES));
    let err = std::io::Error::other("weird");
    assert_eq!(Rlerror::from(err).ecode, errno::EIO);
}
