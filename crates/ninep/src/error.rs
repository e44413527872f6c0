//! Typed codec errors: which field failed, at which byte offset, against which limit.
//!
//! Decode errors fall in two groups. *Framing* errors ([`DecodeError::FrameTooSmall`],
//! [`DecodeError::FrameTooLarge`]) mean the byte stream itself can no longer be trusted:
//! the connection should be closed. Every other error concerns one frame whose size and
//! tag are known, so a server can answer that tag with `Rlerror` and carry on.

use std::fmt;

/// Where in a message a field sits, outermost first, e.g. `Rgetattr.attr.atime.sec`.
///
/// Paths are built while an error travels outwards through nested [`crate::Wire`]
/// impls; only the outermost [`FieldPath::DEPTH`] names are kept.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FieldPath {
    parts: [&'static str; FieldPath::DEPTH],
    len: u8,
}

impl FieldPath {
    /// How many names a path keeps.
    pub const DEPTH: usize = 4;

    /// The empty path: the error is not inside any named field.
    pub const fn root() -> Self {
        FieldPath {
            parts: [""; FieldPath::DEPTH],
            len: 0,
        }
    }

    /// This path with `outer` in front (dropping the innermost name when full).
    pub fn within(mut self, outer: &'static str) -> Self {
        let kept = usize::from(self.len).min(Self::DEPTH - 1);
        self.parts.copy_within(0..kept, 1);
        self.parts[0] = outer;
        self.len = (kept + 1) as u8;
        self
    }

    /// The names in the path, outermost first.
    pub fn names(&self) -> &[&'static str] {
        &self.parts[..usize::from(self.len)]
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len == 0 {
            return f.write_str("<value>");
        }
        f.write_str(&self.names().join("."))
    }
}

impl fmt::Debug for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{self}\"")
    }
}

/// Why bytes could not be decoded into a frame or message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The size field is below the 7-byte header (size, type, tag). Fatal to the stream.
    #[error("frame size {size} is smaller than the 7-byte header")]
    FrameTooSmall {
        /// The size field as received.
        size: u32,
    },
    /// The size field exceeds the negotiated msize. Fatal to the stream.
    #[error("frame size {size} exceeds msize {msize}")]
    FrameTooLarge {
        /// The size field as received.
        size: u32,
        /// The msize the decoder enforces.
        msize: u32,
    },
    /// The type byte names no 9P2000.L message.
    #[error("unknown 9P2000.L message type {ty}")]
    UnknownType {
        /// The type byte as received.
        ty: u8,
    },
    /// A reply arrived where a request was expected, or the other way round.
    #[error("message type {ty} is not a {expected}")]
    UnexpectedType {
        /// The type byte as received.
        ty: u8,
        /// `"request"` or `"reply"`.
        expected: &'static str,
    },
    /// A fixed-size field runs past the end of the frame.
    #[error("{field} at offset {offset}: needs {needed} bytes, {remaining} left")]
    Truncated {
        /// The field being read.
        field: FieldPath,
        /// Byte offset of the field (from the start of the frame when decoding frames).
        offset: usize,
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the frame.
        remaining: usize,
    },
    /// A length or count prefix announces more bytes than the frame has left.
    #[error("{field} at offset {offset}: length {len} exceeds the {remaining} bytes left")]
    LengthBeyondFrame {
        /// The string or data field.
        field: FieldPath,
        /// Byte offset of the length prefix.
        offset: usize,
        /// The announced length.
        len: u64,
        /// Bytes left in the frame after the prefix.
        remaining: usize,
    },
    /// An element count exceeds the protocol limit (e.g. more than 16 walk names).
    #[error("{field} at offset {offset}: {count} elements exceed the limit of {limit}")]
    TooManyElements {
        /// The list field.
        field: FieldPath,
        /// Byte offset of the count prefix.
        offset: usize,
        /// The announced count.
        count: usize,
        /// The largest count allowed.
        limit: usize,
    },
    /// A string is not valid UTF-8.
    #[error("{field} at offset {offset} is not valid UTF-8")]
    InvalidUtf8 {
        /// The string field.
        field: FieldPath,
        /// Byte offset of the string's length prefix.
        offset: usize,
    },
    /// Bytes are left inside the frame after the message's last field.
    #[error("{field}: {extra} trailing bytes at offset {offset}")]
    TrailingBytes {
        /// The message (or value) that ended early.
        field: FieldPath,
        /// Byte offset of the first unused byte.
        offset: usize,
        /// How many bytes were left over.
        extra: usize,
    },
}

/// Why a value could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A string is longer than its 16-bit length prefix can say.
    #[error("{field}: string of {len} bytes exceeds the 65535-byte limit")]
    StringTooLong {
        /// The string field.
        field: FieldPath,
        /// The string's length in bytes.
        len: usize,
    },
    /// A data buffer is longer than its 32-bit count can say.
    #[error("{field}: {len} bytes exceed the 32-bit count")]
    DataTooLong {
        /// The data field.
        field: FieldPath,
        /// The buffer's length in bytes.
        len: usize,
    },
    /// A list has more elements than the protocol allows.
    #[error("{field}: {count} elements exceed the limit of {limit}")]
    TooManyElements {
        /// The list field.
        field: FieldPath,
        /// How many elements were given.
        count: usize,
        /// The largest count allowed.
        limit: usize,
    },
    /// The encoded frame would exceed the negotiated msize.
    #[error("frame of {size} bytes exceeds msize {msize}")]
    FrameTooLarge {
        /// The frame size the message needs.
        size: usize,
        /// The msize in force.
        msize: u32,
    },
}

impl DecodeError {
    /// The same error with `outer` prepended to its field path (no-op for framing errors).
    pub fn in_field(mut self, outer: &'static str) -> Self {
        match &mut self {
            DecodeError::Truncated { field, .. }
            | DecodeError::LengthBeyondFrame { field, .. }
            | DecodeError::TooManyElements { field, .. }
            | DecodeError::InvalidUtf8 { field, .. }
            | DecodeError::TrailingBytes { field, .. } => *field = field.within(outer),
            DecodeError::FrameTooSmall { .. }
            | DecodeError::FrameTooLarge { .. }
            | DecodeError::UnknownType { .. }
            | DecodeError::UnexpectedType { .. } => {}
        }
        self
    }

    /// True when the byte stream can no longer be parsed and the connection must close.
    pub fn is_fatal(&self) -> bool {
        matches!(
            self,
            DecodeError::FrameTooSmall { .. } | DecodeError::FrameTooLarge { .. }
        )
    }
}

impl EncodeError {
    /// The same error with `outer` prepended to its field path (no-op for frame errors).
    pub fn in_field(mut self, outer: &'static str) -> Self {
        match &mut self {
            EncodeError::StringTooLong { field, .. }
            | EncodeError::DataTooLong { field, .. }
            | EncodeError::TooManyElements { field, .. } => *field = field.within(outer),
            EncodeError::FrameTooLarge { .. } => {}
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::FieldPath;

    #[test]
    fn field_path_keeps_outermost_names() {
        let p = FieldPath::root()
            .within("sec")
            .within("atime")
            .within("attr");
        assert_eq!(p.to_string(), "attr.atime.sec");
        let p = p.within("Rgetattr").within("outer");
        assert_eq!(p.names(), ["outer", "Rgetattr", "attr", "atime"]);
        assert_eq!(FieldPath::root().to_string(), "<value>");
    }
}
