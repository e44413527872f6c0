//! Every 9P2000.L message: one plain struct per message, grouped by family, and the
//! [`Tmessage`] (requests) and [`Rmessage`] (replies) enums that wrap them.
//!
//! Each struct's doc gives its wire layout after the common header
//! `size[4] type[1] tag[2]`. Its fields are listed in wire order, and a
//! `wire_struct!` line below the struct generates its [`Wire`] impl from that list.
//!
//! | file        | messages                                                         |
//! |-------------|------------------------------------------------------------------|
//! | `session`   | version, auth, attach, flush, lerror                             |
//! | `file`      | lopen, lcreate, read, write, clunk, remove, fsync                |
//! | `dir`       | walk, readdir, mkdir, mknod, symlink, readlink, link, rename, renameat, unlinkat |
//! | `attr`      | getattr, setattr, statfs, xattrwalk, xattrcreate                 |
//! | `lock`      | lock, getlock                                                    |

mod attr;
mod dir;
mod file;
mod lock;
mod session;

pub use attr::*;
pub use dir::*;
pub use file::*;
pub use lock::*;
pub use session::*;

use crate::error::{DecodeError, EncodeError};
use crate::wire::{Reader, TrailingData, Wire};

/// Defines [`MsgType`] from a table of names and type bytes.
macro_rules! msg_types {
    ($($name:ident = $num:literal,)*) => {
        /// The type byte of every 9P2000.L message. Requests are even, replies odd.
        ///
        /// Plan 9 messages that 9P2000.L replaces (`Topen`, `Tcreate`, `Tstat`,
        /// `Twstat`, `Rerror`) are not listed: their type bytes decode as unknown.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum MsgType {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                $name = $num,
            )*
        }

        impl MsgType {
            /// Every message type, in type-byte order.
            pub const ALL: &'static [MsgType] = &[$(MsgType::$name),*];

            /// The message type with this type byte, if 9P2000.L has one.
            pub const fn from_u8(byte: u8) -> Option<MsgType> {
                match byte {
                    $($num => Some(MsgType::$name),)*
                    _ => None,
                }
            }

            /// The message's name, e.g. `"Twalk"`.
            pub const fn name(self) -> &'static str {
                match self {
                    $(MsgType::$name => stringify!($name),)*
                }
            }
        }
    };
}

msg_types! {
    Rlerror = 7,
    Tstatfs = 8, Rstatfs = 9,
    Tlopen = 12, Rlopen = 13,
    Tlcreate = 14, Rlcreate = 15,
    Tsymlink = 16, Rsymlink = 17,
    Tmknod = 18, Rmknod = 19,
    Trename = 20, Rrename = 21,
    Treadlink = 22, Rreadlink = 23,
    Tgetattr = 24, Rgetattr = 25,
    Tsetattr = 26, Rsetattr = 27,
    Txattrwalk = 30, Rxattrwalk = 31,
    Txattrcreate = 32, Rxattrcreate = 33,
    Treaddir = 40, Rreaddir = 41,
    Tfsync = 50, Rfsync = 51,
    Tlock = 52, Rlock = 53,
    Tgetlock = 54, Rgetlock = 55,
    Tlink = 70, Rlink = 71,
    Tmkdir = 72, Rmkdir = 73,
    Trenameat = 74, Rrenameat = 75,
    Tunlinkat = 76, Runlinkat = 77,
    Tversion = 100, Rversion = 101,
    Tauth = 102, Rauth = 103,
    Tattach = 104, Rattach = 105,
    Tflush = 108, Rflush = 109,
    Twalk = 110, Rwalk = 111,
    Tread = 116, Rread = 117,
    Twrite = 118, Rwrite = 119,
    Tclunk = 120, Rclunk = 121,
    Tremove = 122, Rremove = 123,
}

impl MsgType {
    /// True for T-messages (requests), false for R-messages (replies).
    pub const fn is_request(self) -> bool {
        (self as u8) & 1 == 0
    }
}

/// A message enum that frames can carry: [`Tmessage`] or [`Rmessage`].
pub trait Message: Sized {
    /// The message's type byte.
    fn msg_type(&self) -> MsgType;
    /// Bytes of the body (everything after `size[4] type[1] tag[2]`).
    fn body_size(&self) -> usize;
    /// Appends the body to `buf`.
    fn encode_body(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError>;
    /// Decodes a body of type `ty`; fails with `UnexpectedType` for the other direction.
    fn decode_body(ty: MsgType, r: &mut Reader<'_>) -> Result<Self, DecodeError>;
    /// The message as one whose data may travel apart from its frame's head (`Twrite`,
    /// `Rread`, `Rreaddir`: [`crate::frame::encode_frame_parts`]); `None` for every
    /// other message.
    fn trailing_data(&self) -> Option<&dyn TrailingData>;
}

/// Defines a message enum with one variant per message struct, and its [`Message`] impl.
macro_rules! message_enum {
    (
        $(#[$doc:meta])* $name:ident expects $expected:literal
        { $($msg:ident,)* } apart { $($apart:ident),* }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub enum $name {
            $(
                #[doc = concat!("See [`", stringify!($msg), "`].")]
                $msg($msg),
            )*
        }

        impl Message for $name {
            fn msg_type(&self) -> MsgType {
                match self {
                    $($name::$msg(_) => MsgType::$msg,)*
                }
            }

            fn body_size(&self) -> usize {
                match self {
                    $($name::$msg(m) => m.byte_size(),)*
                }
            }

            fn encode_body(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
                match self {
                    $($name::$msg(m) => m.encode(buf),)*
                }
            }

            fn decode_body(ty: MsgType, r: &mut Reader<'_>) -> Result<Self, DecodeError> {
                match ty {
                    $(MsgType::$msg => $msg::decode(r).map($name::$msg),)*
                    #[allow(unreachable_patterns)]
                    _ => Err(DecodeError::UnexpectedType { ty: ty as u8, expected: $expected }),
                }
            }

            fn trailing_data(&self) -> Option<&dyn TrailingData> {
                match self {
                    $($name::$apart(m) => Some(m),)*
                    _ => None,
                }
            }
        }

        $(
            impl From<$msg> for $name {
                fn from(m: $msg) -> Self {
                    $name::$msg(m)
                }
            }
        )*
    };
}

message_enum! {
    /// A request (T-message), as a server receives it.
    Tmessage expects "request" {
        Tversion, Tauth, Tattach, Tflush,
        Twalk, Treaddir, Tmkdir, Tmknod, Tsymlink, Treadlink, Tlink, Trename, Trenameat,
        Tunlinkat,
        Tlopen, Tlcreate, Tread, Twrite, Tclunk, Tremove, Tfsync,
        Tgetattr, Tsetattr, Tstatfs, Txattrwalk, Txattrcreate,
        Tlock, Tgetlock,
    }
    apart { Twrite }
}

message_enum! {
    /// A reply (R-message), as a client receives it.
    Rmessage expects "reply" {
        Rversion, Rauth, Rattach, Rflush, Rlerror,
        Rwalk, Rreaddir, Rmkdir, Rmknod, Rsymlink, Rreadlink, Rlink, Rrename, Rrenameat,
        Runlinkat,
        Rlopen, Rlcreate, Rread, Rwrite, Rclunk, Rremove, Rfsync,
        Rgetattr, Rsetattr, Rstatfs, Rxattrwalk, Rxattrcreate,
        Rlock, Rgetlock,
    }
    apart { Rread, Rreaddir }
}

#[cfg(test)]
mod tests {
    use super::MsgType;

    #[test]
    fn type_table_is_consistent() {
        for &ty in MsgType::ALL {
            assert_eq!(MsgType::from_u8(ty as u8), Some(ty));
            assert_eq!(ty.is_request(), ty.name().starts_with('T'), "{ty:?}");
        }
        assert_eq!(MsgType::ALL.len(), 57);
        // Requests and replies pair up, except Rlerror which answers anything.
        let requests = MsgType::ALL.iter().filter(|t| t.is_request()).count();
        assert_eq!(requests, 28);
        for byte in [0u8, 6, 106, 107, 112, 113, 124, 126, 255] {
            assert_eq!(MsgType::from_u8(byte), None, "{byte}");
        }
    }
}
