//! The [`Wire`] trait and the primitive encodings every 9P2000.L message is built from.
//!
//! | notation  | encoding                                   | Rust type      |
//! |-----------|--------------------------------------------|----------------|
//! | `n[1]`…`n[8]` | little-endian unsigned integer          | `u8`…`u64`     |
//! | `s[s]`    | `len[2]` then `len` bytes of UTF-8, no NUL | `String`       |
//! | `qid[13]` | `type[1] version[4] path[8]`               | [`crate::Qid`] |
//! | `data`    | `count[4]` then `count` bytes              | [`Data`]       |
//! | walk list | `n[2]` then `n` elements, `n ≤ 16`         | `Vec<String>`, `Vec<Qid>` |
//!
//! Rules the decoder keeps, so that hostile input can do no harm:
//!
//! 1. Every read goes through a [`Reader`], which never reads past the end of its slice.
//! 2. Memory is allocated in exactly three places: strings and data copy a slice that was
//!    already checked to lie inside the input (so they are never larger than the input),
//!    and walk lists reserve at most [`MAXWELEM`] elements after the count was checked.
//!    (Outside frame decoding, [`crate::decode_dirents`] grows its list one decoded
//!    entry at a time, so it too stays proportional to its input.)
//! 3. Strings that are not valid UTF-8 are rejected ([`DecodeError::InvalidUtf8`]):
//!    names in this runtime's trees are Rust strings.

use crate::error::{DecodeError, EncodeError, FieldPath};
use crate::types::MAXWELEM;

/// A value with a fixed 9P2000.L wire encoding.
pub trait Wire: Sized {
    /// Number of bytes [`Wire::encode`] appends.
    fn byte_size(&self) -> usize;
    /// Appends the encoding to `buf`; on error `buf` may hold a partial encoding.
    fn encode(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError>;
    /// Reads one value from `r`, advancing it.
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError>;
}

/// A bounds-checked cursor over the bytes of one frame (or any byte slice).
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    /// A reader over `buf`; error offsets count from the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader::at_offset(buf, 0)
    }

    /// A reader over `buf` whose error offsets start at `base` (e.g. 7 for a frame body).
    pub fn at_offset(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// Offset of the next byte to read, as reported in errors.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Reads exactly `n` bytes of a fixed-size field.
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated {
                field: FieldPath::root(),
                offset: self.offset(),
                needed: n,
                remaining: self.remaining(),
            });
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// Reads `len` bytes announced by a length prefix that started at `prefix_offset`.
    fn read_counted(&mut self, len: u64, prefix_offset: usize) -> Result<&'a [u8], DecodeError> {
        match usize::try_from(len) {
            Ok(n) if n <= self.remaining() => self.read_bytes(n),
            _ => Err(DecodeError::LengthBeyondFrame {
                field: FieldPath::root(),
                offset: prefix_offset,
                len,
                remaining: self.remaining(),
            }),
        }
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.read_bytes(N)?);
        Ok(out)
    }

    /// Succeeds only if every byte was read; otherwise reports the trailing bytes.
    pub fn finish(&self) -> Result<(), DecodeError> {
        match self.remaining() {
            0 => Ok(()),
            extra => Err(DecodeError::TrailingBytes {
                field: FieldPath::root(),
                offset: self.offset(),
                extra,
            }),
        }
    }
}

/// Implements [`Wire`] for little-endian unsigned integers.
macro_rules! wire_int {
    ($($ty:ty),*) => {$(
        impl Wire for $ty {
            fn byte_size(&self) -> usize {
                std::mem::size_of::<$ty>()
            }
            fn encode(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
                buf.extend_from_slice(&self.to_le_bytes());
                Ok(())
            }
            fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                r.array().map(<$ty>::from_le_bytes)
            }
        }
    )*};
}
wire_int!(u8, u16, u32, u64);

impl Wire for String {
    fn byte_size(&self) -> usize {
        2 + self.len()
    }

    fn encode(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        let len = u16::try_from(self.len()).map_err(|_| EncodeError::StringTooLong {
            field: FieldPath::root(),
            len: self.len(),
        })?;
        len.encode(buf)?;
        buf.extend_from_slice(self.as_bytes());
        Ok(())
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let start = r.offset();
        let len = u16::decode(r)?;
        let bytes = r.read_counted(u64::from(len), start)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => Err(DecodeError::InvalidUtf8 {
                field: FieldPath::root(),
                offset: start,
            }),
        }
    }
}

/// Opaque bytes with a 32-bit count: the payload of `Rread`, `Twrite` and `Rreaddir`.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Data(pub Vec<u8>);

impl Data {
    /// Number of payload bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when there are no payload bytes.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The payload bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    /// Appends the `count[4]` that goes before `len` payload bytes; fails if `len`
    /// does not fit in 32 bits.
    pub(crate) fn encode_count(len: usize, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        let count = u32::try_from(len).map_err(|_| EncodeError::DataTooLong {
            field: FieldPath::root(),
            len,
        })?;
        count.encode(buf)
    }
}

/// A message whose wire form ends in `count[4] data[count]` (`Rread`, `Twrite`), so
/// its data can travel apart from the rest of its frame
/// ([`crate::frame::encode_frame_parts`]).
///
/// Only `wire_struct!` implements it, for a struct whose field list ends in `; data`
/// with `data` a [`Data`]: the data is the last field on the wire by construction, and
/// the head is encoded by the same field list as the whole message.
pub trait TrailingData {
    /// The data bytes, which end the message.
    fn data(&self) -> &[u8];
    /// Bytes of the body up to and including `count[4]`: all of it but the data.
    fn head_size(&self) -> usize;
    /// Appends the body up to and including `count[4]`.
    fn encode_head(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError>;
}

impl std::fmt::Debug for Data {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 32;
        write!(f, "Data({} bytes", self.0.len())?;
        if !self.0.is_empty() {
            write!(f, ": {:02x?}", &self.0[..self.0.len().min(SHOWN)])?;
            if self.0.len() > SHOWN {
                f.write_str("…")?;
            }
        }
        f.write_str(")")
    }
}

impl From<Vec<u8>> for Data {
    fn from(bytes: Vec<u8>) -> Self {
        Data(bytes)
    }
}

impl From<&[u8]> for Data {
    fn from(bytes: &[u8]) -> Self {
        Data(bytes.to_vec())
    }
}

impl Wire for Data {
    fn byte_size(&self) -> usize {
        4 + self.0.len()
    }

    fn encode(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        Data::encode_count(self.0.len(), buf)?;
        buf.extend_from_slice(&self.0);
        Ok(())
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let start = r.offset();
        let count = u32::decode(r)?;
        r.read_counted(u64::from(count), start)
            .map(|bytes| Data(bytes.to_vec()))
    }
}

/// Size of a walk list (`n[2]` then the elements).
pub(crate) fn walk_list_size<T: Wire>(items: &[T]) -> usize {
    2 + items.iter().map(Wire::byte_size).sum::<usize>()
}

/// Encodes a walk list, refusing more than [`MAXWELEM`] elements.
pub(crate) fn encode_walk_list<T: Wire>(items: &[T], buf: &mut Vec<u8>) -> Result<(), EncodeError> {
    if items.len() > MAXWELEM {
        return Err(EncodeError::TooManyElements {
            field: FieldPath::root(),
            count: items.len(),
            limit: MAXWELEM,
        });
    }
    (items.len() as u16).encode(buf)?;
    items.iter().try_for_each(|item| item.encode(buf))
}

/// Decodes a walk list; the count is checked against [`MAXWELEM`] before anything is reserved.
pub(crate) fn decode_walk_list<T: Wire>(r: &mut Reader<'_>) -> Result<Vec<T>, DecodeError> {
    let start = r.offset();
    let count = usize::from(u16::decode(r)?);
    if count > MAXWELEM {
        return Err(DecodeError::TooManyElements {
            field: FieldPath::root(),
            offset: start,
            count,
            limit: MAXWELEM,
        });
    }
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(T::decode(r)?);
    }
    Ok(items)
}

/// Implements [`Wire`] for a struct by encoding the listed fields in order.
///
/// The list must name every field in wire order; decoding builds the struct with a
/// struct literal, so a missing field is a compile error. Errors get the field's name
/// prepended to their [`FieldPath`]. A list ending in `; data` (a [`Data`] field)
/// implements [`TrailingData`] as well.
macro_rules! wire_struct {
    ($name:ident { $($field:ident),* ; $data:ident }) => {
        $crate::wire::wire_struct!($name { $($field,)* $data });

        impl $crate::wire::TrailingData for $name {
            fn data(&self) -> &[u8] {
                $crate::wire::Data::as_slice(&self.$data)
            }

            fn head_size(&self) -> usize {
                4 $(+ $crate::wire::Wire::byte_size(&self.$field))*
            }

            fn encode_head(&self, buf: &mut Vec<u8>) -> Result<(), $crate::error::EncodeError> {
                $(
                    $crate::wire::Wire::encode(&self.$field, buf)
                        .map_err(|e| e.in_field(stringify!($field)))?;
                )*
                $crate::wire::Data::encode_count($crate::wire::Data::len(&self.$data), buf)
                    .map_err(|e| e.in_field(stringify!($data)))
            }
        }
    };
    ($name:ident { $($field:ident),* $(,)? }) => {
        impl $crate::wire::Wire for $name {
            fn byte_size(&self) -> usize {
                0 $(+ $crate::wire::Wire::byte_size(&self.$field))*
            }

            #[allow(unused_variables)]
            fn encode(&self, buf: &mut Vec<u8>) -> Result<(), $crate::error::EncodeError> {
                $(
                    $crate::wire::Wire::encode(&self.$field, buf)
                        .map_err(|e| e.in_field(stringify!($field)))?;
                )*
                Ok(())
            }

            #[allow(unused_variables)]
            fn decode(
                r: &mut $crate::wire::Reader<'_>,
            ) -> Result<Self, $crate::error::DecodeError> {
                Ok($name {
                    $(
                        $field: $crate::wire::Wire::decode(r)
                            .map_err(|e| e.in_field(stringify!($field)))?,
                    )*
                })
            }
        }
    };
}
pub(crate) use wire_struct;

/// Implements [`Wire`] for a one-field tuple struct by delegating to the inner integer.
macro_rules! wire_newtype {
    ($name:ident($inner:ty)) => {
        impl $crate::wire::Wire for $name {
            fn byte_size(&self) -> usize {
                std::mem::size_of::<$inner>()
            }
            fn encode(&self, buf: &mut Vec<u8>) -> Result<(), $crate::error::EncodeError> {
                $crate::wire::Wire::encode(&self.0, buf)
            }
            fn decode(
                r: &mut $crate::wire::Reader<'_>,
            ) -> Result<Self, $crate::error::DecodeError> {
                <$inner as $crate::wire::Wire>::decode(r).map($name)
            }
        }
    };
}
pub(crate) use wire_newtype;

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all<T: Wire>(bytes: &[u8]) -> Result<T, DecodeError> {
        let mut r = Reader::new(bytes);
        let v = T::decode(&mut r)?;
        r.finish()?;
        Ok(v)
    }

    #[test]
    fn integers_are_little_endian() {
        let mut buf = Vec::new();
        0x0102_0304u32.encode(&mut buf).unwrap();
        0x0506u16.encode(&mut buf).unwrap();
        assert_eq!(buf, [4, 3, 2, 1, 6, 5]);
        assert_eq!(
            decode_all::<u64>(&[1, 0, 0, 0, 0, 0, 0, 0x80]),
            Ok(0x8000_0000_0000_0001)
        );
    }

    #[test]
    fn string_has_u16_length_and_no_nul() {
        let mut buf = Vec::new();
        "ab".to_string().encode(&mut buf).unwrap();
        assert_eq!(buf, [2, 0, b'a', b'b']);
        assert_eq!(decode_all::<String>(&buf).as_deref(), Ok("ab"));
    }

    #[test]
    fn too_long_string_is_refused() {
        let s = "x".repeat(usize::from(u16::MAX) + 1);
        let err = s.encode(&mut Vec::new()).unwrap_err();
        assert!(matches!(err, EncodeError::StringTooLong { len: 65536, .. }));
    }

    #[test]
    fn truncated_integer_reports_offset() {
        let mut r = Reader::at_offset(&[1, 2], 7);
        let err = u32::decode(&mut r).unwrap_err();
        assert_eq!(
            err,
            DecodeError::Truncated {
                field: FieldPath::root(),
                offset: 7,
                needed: 4,
                remaining: 2
            }
        );
    }

    #[test]
    fn data_count_beyond_input_is_refused_before_allocating() {
        let err = decode_all::<Data>(&[0xff, 0xff, 0xff, 0xff, 1, 2]).unwrap_err();
        assert!(matches!(
            err,
            DecodeError::LengthBeyondFrame {
                len: 0xffff_ffff,
                remaining: 2,
                ..
            }
        ));
    }
}
