//! Framing: every message travels as `size[4] type[1] tag[2] body`, where `size`
//! counts the whole frame, itself included.
//!
//! Receiving is two steps, so a server can still answer a frame whose body is bad:
//!
//! 1. [`FrameDecoder::split`] looks only at `size`. It returns `Ok(None)` until the
//!    whole frame is buffered, and fails at once — without waiting for more bytes — if
//!    `size < 7` or `size > msize`. Those errors are fatal: the stream cannot be resynced.
//! 2. [`RawFrame::decode`] checks the type byte and decodes the body, which must be used
//!    up exactly. Its errors concern one frame only: the tag is known and the next frame
//!    starts [`RawFrame::size`] bytes further on.
//!
//! [`FrameDecoder::decode`] does both. Nothing is allocated before step 2, and step 2
//! only reads inside the frame, which is at most msize bytes.
//!
//! Sending: [`encode_frame`] appends a whole frame to a buffer. [`encode_frame_parts`]
//! does the same except for a message that ends in [`DATA_APART`] or more bytes of
//! data ([`crate::wire::TrailingData`]: `Rread`, `Rreaddir`, `Twrite`): it appends
//! only the head and hands the data back, to go behind the buffer in one vectored
//! send, uncopied.

use crate::error::{DecodeError, EncodeError};
use crate::message::{Message, MsgType};
use crate::wire::{Reader, Wire};

/// Bytes of `size[4] type[1] tag[2]`.
pub const HEADER_SIZE: usize = 7;

/// Room to leave below msize for the header of `Twrite`/`Rread`/`Rreaddir`, as Plan 9's
/// IOHDRSZ: a server's iounit, and the data it returns, is at most `msize − IOHDRSZ`.
pub const IOHDRSZ: u32 = 24;

/// The most data bytes one read, write or readdir should carry: `requested`, capped
/// at `msize − IOHDRSZ`.
pub fn io_count_limit(msize: u32, requested: u32) -> u32 {
    requested.min(msize.saturating_sub(IOHDRSZ))
}

/// A decoded message and the tag that pairs a request with its reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<M> {
    /// Request tag, echoed by the reply (`NOTAG` for version).
    pub tag: u16,
    /// The message.
    pub body: M,
}

impl<M: Message> Frame<M> {
    /// A frame carrying `body` under `tag`.
    pub fn new(tag: u16, body: impl Into<M>) -> Self {
        Frame {
            tag,
            body: body.into(),
        }
    }

    /// Encoded size of the frame, header included.
    pub fn size(&self) -> usize {
        HEADER_SIZE + self.body.body_size()
    }

    /// Appends the encoded frame to `buf`; see [`encode_frame`].
    pub fn encode(&self, msize: u32, buf: &mut Vec<u8>) -> Result<usize, EncodeError> {
        encode_frame(self.tag, &self.body, msize, buf)
    }
}

/// Appends `size[4] type[1] tag[2] body` to `buf` and returns the frame's size.
///
/// Fails without touching `buf` if the frame would exceed `msize`; on any other error
/// `buf` is restored to its previous length.
pub fn encode_frame<M: Message>(
    tag: u16,
    msg: &M,
    msize: u32,
    buf: &mut Vec<u8>,
) -> Result<usize, EncodeError> {
    let size = HEADER_SIZE + msg.body_size();
    encode_checked(size, 0, msg.msg_type(), tag, msize, buf, |buf| {
        msg.encode_body(buf)
    })?;
    Ok(size)
}

/// Data of at least this many bytes (a read's reply, a write) is worth sending apart
/// from its frame's head ([`encode_frame_parts`]) rather than copying it behind it;
/// less goes in whole, one write of one buffer.
pub const DATA_APART: usize = 1024;

/// Encodes `msg`'s frame for one vectored send: appends it to `buf` and returns the
/// bytes to send right after `buf`, so that the two together are exactly what
/// [`encode_frame`] would append.
///
/// A message that ends in at least [`DATA_APART`] bytes of data
/// ([`Message::trailing_data`]: `Rread`, `Rreaddir`, `Twrite`) gets only its head into
/// `buf` — size and count as if the data were there — and its data back, not copied;
/// any other message is encoded whole and gets an empty slice back. Fails as
/// [`encode_frame`] does, `buf` as it was.
pub fn encode_frame_parts<'m, M: Message>(
    tag: u16,
    msg: &'m M,
    msize: u32,
    buf: &mut Vec<u8>,
) -> Result<&'m [u8], EncodeError> {
    match msg.trailing_data() {
        Some(t) if t.data().len() >= DATA_APART => {
            let data = t.data().len();
            let size = HEADER_SIZE + t.head_size() + data;
            encode_checked(size, data, msg.msg_type(), tag, msize, buf, |buf| {
                t.encode_head(buf)
            })?;
            Ok(t.data())
        }
        _ => encode_frame(tag, msg, msize, buf).map(|_| &[][..]),
    }
}

/// Appends the header of a frame of `size` bytes, then what `body` appends: all of
/// the frame but its last `apart` bytes. Fails without touching `buf` if `size`
/// exceeds `msize`, and restores `buf` if `body` fails.
fn encode_checked(
    size: usize,
    apart: usize,
    ty: MsgType,
    tag: u16,
    msize: u32,
    buf: &mut Vec<u8>,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), EncodeError>,
) -> Result<(), EncodeError> {
    let wire_size = u32::try_from(size)
        .ok()
        .filter(|&s| s <= msize)
        .ok_or(EncodeError::FrameTooLarge { size, msize })?;
    let start = buf.len();
    buf.reserve(size - apart);
    let result = wire_size
        .encode(buf)
        .and_then(|()| (ty as u8).encode(buf))
        .and_then(|()| tag.encode(buf))
        .and_then(|()| body(buf));
    if let Err(e) = result {
        buf.truncate(start);
        return Err(e.in_field(ty.name()));
    }
    debug_assert_eq!(
        buf.len() - start,
        size - apart,
        "byte_size disagrees with encode"
    );
    Ok(())
}

/// One complete frame, split from the stream but not decoded yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawFrame<'a> {
    /// The type byte (not yet checked).
    pub ty: u8,
    /// The tag.
    pub tag: u16,
    /// The body: the frame minus its 7-byte header.
    pub body: &'a [u8],
}

impl RawFrame<'_> {
    /// Size of the whole frame: how many stream bytes it used.
    pub fn size(&self) -> usize {
        HEADER_SIZE + self.body.len()
    }

    /// Decodes the body as a request ([`crate::Tmessage`]) or reply ([`crate::Rmessage`]).
    pub fn decode<M: Message>(&self) -> Result<Frame<M>, DecodeError> {
        let ty = MsgType::from_u8(self.ty).ok_or(DecodeError::UnknownType { ty: self.ty })?;
        let mut r = Reader::at_offset(self.body, HEADER_SIZE);
        let body = M::decode_body(ty, &mut r).map_err(|e| e.in_field(ty.name()))?;
        r.finish().map_err(|e| e.in_field(ty.name()))?;
        Ok(Frame {
            tag: self.tag,
            body,
        })
    }
}

/// Splits and decodes frames from a byte buffer, enforcing the negotiated msize.
///
/// It keeps no buffer of its own: the caller appends received bytes to its buffer,
/// calls [`FrameDecoder::decode`] (or [`FrameDecoder::split`]) and drops the bytes
/// consumed. A server starts with its largest msize and lowers it after `Tversion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameDecoder {
    msize: u32,
}

impl FrameDecoder {
    /// A decoder that refuses frames larger than `msize`.
    pub fn new(msize: u32) -> Self {
        FrameDecoder { msize }
    }

    /// The msize being enforced.
    pub fn msize(&self) -> u32 {
        self.msize
    }

    /// Enforces a new msize (after version negotiation).
    pub fn set_msize(&mut self, msize: u32) {
        self.msize = msize;
    }

    /// Finds the first frame in `buf`: `Ok(None)` while it is incomplete.
    pub fn split<'a>(&self, buf: &'a [u8]) -> Result<Option<RawFrame<'a>>, DecodeError> {
        let Some(size_bytes) = buf.get(..4) else {
            return Ok(None);
        };
        let mut r = Reader::new(size_bytes);
        let size = u32::decode(&mut r)?;
        if (size as usize) < HEADER_SIZE {
            return Err(DecodeError::FrameTooSmall { size });
        }
        if size > self.msize {
            return Err(DecodeError::FrameTooLarge {
                size,
                msize: self.msize,
            });
        }
        let Some(frame) = buf.get(..size as usize) else {
            return Ok(None);
        };
        Ok(Some(RawFrame {
            ty: frame[4],
            tag: u16::from_le_bytes([frame[5], frame[6]]),
            body: &frame[HEADER_SIZE..],
        }))
    }

    /// Decodes the first frame in `buf`, returning it with the number of bytes it used;
    /// `Ok(None)` while it is incomplete.
    pub fn decode<M: Message>(&self, buf: &[u8]) -> Result<Option<(Frame<M>, usize)>, DecodeError> {
        match self.split(buf)? {
            None => Ok(None),
            Some(raw) => raw.decode().map(|frame| Some((frame, raw.size()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Rclunk, Rmessage, Tclunk, Tmessage};

    /// `msg` through [`encode_frame_parts`] behind a prefix, checked against
    /// [`encode_frame`]: the same bytes, and the data apart exactly when it is long.
    fn parts_match_whole<M: Message>(msg: &M, msize: u32) -> Result<(), EncodeError> {
        let mut whole = Vec::new();
        let whole_result = encode_frame(5, msg, msize, &mut whole);
        let mut head = vec![0xEE, 0xEF];
        let parts_result = encode_frame_parts(5, msg, msize, &mut head);
        let data = match (whole_result, parts_result) {
            (Ok(n), Ok(data)) => {
                assert_eq!(n, head.len() - 2 + data.len(), "returned size");
                data
            }
            (Err(a), Err(b)) => {
                assert_eq!(a, b, "the same error");
                assert_eq!(head, [0xEE, 0xEF], "nothing written on error");
                return Err(a);
            }
            (a, b) => panic!("whole {a:?} but parts {:?}", b.map(<[u8]>::len)),
        };
        assert_eq!(&head[..2], [0xEE, 0xEF], "what was in buf stays");
        assert_eq!(
            [&head[2..], data].concat(),
            whole,
            "head + data = the frame"
        );
        let trailing = msg.trailing_data().map_or(&[][..], |t| t.data());
        if trailing.len() >= DATA_APART {
            // The caller's own bytes, not a copy.
            assert_eq!(data.as_ptr(), trailing.as_ptr());
            assert_eq!(data.len(), trailing.len());
        } else {
            assert!(data.is_empty(), "short data goes in whole");
        }
        Ok(())
    }

    #[test]
    fn a_head_and_its_data_are_the_whole_frame_at_every_size() {
        use crate::message::{Rread, Rreaddir, Twrite};
        use crate::wire::Data;
        const MSIZE: u32 = 8192;
        let bytes = |n: usize| Data((0..n).map(|i| (i * 7 + 3) as u8).collect());
        let rread = |n| Rmessage::from(Rread { data: bytes(n) });
        let rreaddir = |n| Rmessage::from(Rreaddir { data: bytes(n) });
        let twrite = |n| {
            Tmessage::from(Twrite {
                fid: 0x0102_0304,
                offset: 0x0A0B_0C0D_0E0F_1011,
                data: bytes(n),
            })
        };
        let limit = io_count_limit(MSIZE, u32::MAX) as usize;
        // The largest data each fits: msize less the header, `count[4]` and the fields.
        let rread_max = MSIZE as usize - HEADER_SIZE - 4;
        let twrite_max = MSIZE as usize - HEADER_SIZE - 4 - 4 - 8;
        for n in [0, 1, 100, DATA_APART - 1, DATA_APART, 5000, limit] {
            parts_match_whole(&rread(n), MSIZE).unwrap();
            parts_match_whole(&rreaddir(n), MSIZE).unwrap();
            parts_match_whole(&twrite(n), MSIZE).unwrap();
        }
        parts_match_whole(&rread(rread_max), MSIZE).unwrap();
        parts_match_whole(&twrite(twrite_max), MSIZE).unwrap();
        // One byte more than msize allows: refused, whether apart or not.
        let too_large = |size| EncodeError::FrameTooLarge { size, msize: MSIZE };
        let over = MSIZE as usize + 1;
        assert_eq!(
            parts_match_whole(&rread(rread_max + 1), MSIZE),
            Err(too_large(over))
        );
        assert_eq!(
            parts_match_whole(&twrite(twrite_max + 1), MSIZE),
            Err(too_large(over))
        );
        assert_eq!(
            parts_match_whole(&twrite(100), 64),
            Err(EncodeError::FrameTooLarge {
                size: 123,
                msize: 64
            })
        );
        // Messages that carry no data apart are encoded whole.
        parts_match_whole(&Tmessage::from(Tclunk { fid: 9 }), MSIZE).unwrap();
        parts_match_whole(&Rmessage::from(Rclunk), MSIZE).unwrap();
    }

    #[test]
    fn header_then_body() {
        let mut buf = Vec::new();
        let n = encode_frame(3, &Tmessage::from(Tclunk { fid: 9 }), 8192, &mut buf).unwrap();
        assert_eq!(n, 11);
        assert_eq!(buf, [11, 0, 0, 0, 120, 3, 0, 9, 0, 0, 0]);
        let dec = FrameDecoder::new(8192);
        let (frame, used) = dec.decode::<Tmessage>(&buf).unwrap().unwrap();
        assert_eq!(used, 11);
        assert_eq!(frame, Frame::new(3, Tclunk { fid: 9 }));
    }

    #[test]
    fn incomplete_is_none_until_the_last_byte() {
        let mut buf = Vec::new();
        encode_frame(1, &Rmessage::from(Rclunk), 64, &mut buf).unwrap();
        let dec = FrameDecoder::new(64);
        for cut in 0..buf.len() {
            assert_eq!(dec.decode::<Rmessage>(&buf[..cut]), Ok(None), "cut {cut}");
        }
        assert!(dec.decode::<Rmessage>(&buf).unwrap().is_some());
    }

    #[test]
    fn oversized_frame_is_not_encoded() {
        let mut buf = vec![1, 2, 3];
        let err = encode_frame(1, &Tmessage::from(Tclunk { fid: 1 }), 10, &mut buf).unwrap_err();
        assert_eq!(
            err,
            EncodeError::FrameTooLarge {
                size: 11,
                msize: 10
            }
        );
        assert_eq!(buf, [1, 2, 3]);
    }

    #[test]
    fn io_limit_leaves_room_for_the_header() {
        assert_eq!(io_count_limit(8192, 1 << 20), 8192 - 24);
        assert_eq!(io_count_limit(8192, 100), 100);
        assert_eq!(io_count_limit(10, 100), 0);
    }
}
