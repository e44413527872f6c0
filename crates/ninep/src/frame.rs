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
    let wire_size = u32::try_from(size)
        .ok()
        .filter(|&s| s <= msize)
        .ok_or(EncodeError::FrameTooLarge { size, msize })?;
    let start = buf.len();
    buf.reserve(size);
    let result = encode_parts(wire_size, msg.msg_type(), tag, msg, buf);
    if let Err(e) = result {
        buf.truncate(start);
        return Err(e.in_field(msg.msg_type().name()));
    }
    debug_assert_eq!(buf.len() - start, size, "byte_size disagrees with encode");
    Ok(size)
}

/// Data of at least this many bytes (a read's reply, a write) is worth sending apart
/// from its frame's head ([`encode_frame_head`]) rather than copying it behind it;
/// less goes in whole, one write of one buffer.
pub const DATA_APART: usize = 1024;

/// Appends the start of a frame whose last field is `data_len` bytes of data (an
/// `Rread`'s, a `Twrite`'s): `head` is the message with that data left empty, and the
/// frame's size and the data's count are written as if it were there. The caller
/// sends the data right after `buf` (one vectored write) rather than copying it into
/// `buf`. Fails, leaving `buf` as it was, if the whole frame would exceed `msize`.
pub fn encode_frame_head<M: Message>(
    tag: u16,
    head: &M,
    data_len: usize,
    msize: u32,
    buf: &mut Vec<u8>,
) -> Result<usize, EncodeError> {
    let size = HEADER_SIZE + head.body_size() + data_len;
    let (wire_size, count) = u32::try_from(size)
        .ok()
        .filter(|&s| s <= msize)
        .zip(u32::try_from(data_len).ok())
        .ok_or(EncodeError::FrameTooLarge { size, msize })?;
    let start = buf.len();
    encode_frame(tag, head, msize, buf)?;
    buf[start..start + 4].copy_from_slice(&wire_size.to_le_bytes());
    let end = buf.len();
    buf[end - 4..].copy_from_slice(&count.to_le_bytes());
    Ok(size)
}

fn encode_parts<M: Message>(
    size: u32,
    ty: MsgType,
    tag: u16,
    msg: &M,
    buf: &mut Vec<u8>,
) -> Result<(), EncodeError> {
    size.encode(buf)?;
    (ty as u8).encode(buf)?;
    tag.encode(buf)?;
    msg.encode_body(buf)
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

    #[test]
    fn a_head_and_its_data_are_the_whole_frame() {
        use crate::message::{Rread, Twrite};
        use crate::wire::Data;
        let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
        let empty = || Data(Vec::new());
        let whole = |m: Rmessage| {
            let mut b = Vec::new();
            encode_frame(9, &m, 8192, &mut b).unwrap();
            b
        };
        let mut head = vec![0xEE];
        let n = encode_frame_head(
            9,
            &Rmessage::from(Rread { data: empty() }),
            data.len(),
            8192,
            &mut head,
        )
        .unwrap();
        assert_eq!(
            n,
            whole(
                Rread {
                    data: Data(data.clone())
                }
                .into()
            )
            .len()
        );
        assert_eq!(
            [&head[1..], &data[..]].concat(),
            whole(
                Rread {
                    data: Data(data.clone())
                }
                .into()
            )
        );
        let w = |data| {
            Tmessage::from(Twrite {
                fid: 3,
                offset: 77,
                data,
            })
        };
        let mut head = Vec::new();
        encode_frame_head(4, &w(empty()), data.len(), 8192, &mut head).unwrap();
        let mut full = Vec::new();
        encode_frame(4, &w(Data(data.clone())), 8192, &mut full).unwrap();
        assert_eq!([&head[..], &data[..]].concat(), full);
        // Too large for msize: refused, nothing written.
        let mut b = vec![1];
        assert!(encode_frame_head(4, &w(empty()), 8192, 8192, &mut b).is_err());
        assert_eq!(b, [1]);
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
