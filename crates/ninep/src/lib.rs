//! 9P2000.L, the Linux dialect of the Plan 9 file protocol: the sans-IO codec (diod's
//! libnpfs marshalling).
//!
//! ninefold nodes export their resources as 9P2000.L file trees. The codec turns
//! bytes into typed messages and back and does no I/O, so the same code serves tcp,
//! unix sockets, TLS and the shared-memory transport; the server (`nf-ninep-server`) and
//! the client (`nf-ninep-client`) sit above it and above the byte transports of
//! `nf-link` (its three-method `Transport`). The wire layout of every message, and the
//! server's semantics, are written out in `docs/protocol.md`.
//!
//! # Glossary
//!
//! - **T-message / R-message**: a request from client to server, and the server's
//!   reply. Each `Txxx` is answered by `Rxxx` or by [`Rlerror`].
//! - **tag**: a 16-bit number the client picks for each outstanding request; the reply
//!   carries the same tag, so requests can be answered out of order. `Tversion` uses
//!   [`NOTAG`].
//! - **fid**: a 32-bit number the client picks to name a file on the server, like a file
//!   descriptor that has not necessarily been opened. Fids are created by attach, walk
//!   and xattrwalk and released by clunk (and remove). [`NOFID`] means "none".
//! - **qid**: the server's 13-byte identity of a file ([`Qid`]): a type byte
//!   (directory, symlink, …), a version that changes with the content, and a path
//!   unique within the tree (typically the inode number).
//! - **msize**: the largest frame either side may send, header included, agreed by
//!   `Tversion`/`Rversion` ([`negotiate`]). Every decode is bounded by it.
//! - **iounit**: returned when a file is opened: the most bytes one read or write on it
//!   is guaranteed to move in one message; 0 means "msize − [`IOHDRSZ`]".
//!
//! # Layers
//!
//! | module | job |
//! |---|---|
//! | [`wire`] | the [`Wire`] trait, the bounds-checked [`Reader`], integers, strings, [`Data`] |
//! | [`types`] | [`Qid`], flag words, [`Attr`], [`Dirent`], lock types |
//! | [`message`] | one struct per message; [`Tmessage`] and [`Rmessage`] |
//! | [`frame`] | `size[4] type[1] tag[2]` framing; [`FrameDecoder`] |
//! | [`readdir`] | packing directory entries into `Rreaddir` data |
//! | [`version`] | msize and version negotiation |
//! | [`errno`] | Linux errno values for [`Rlerror`] |
//! | [`error`] | [`DecodeError`] and [`EncodeError`], naming field, offset and limit |
//!
//! # Example
//!
//! ```
//! use nf_ninep::{encode_frame, FrameDecoder, Frame, Tclunk, Tmessage};
//!
//! let mut wire = Vec::new();
//! encode_frame(7, &Tmessage::from(Tclunk { fid: 42 }), 8192, &mut wire)?;
//!
//! let decoder = FrameDecoder::new(8192);
//! assert_eq!(decoder.decode::<Tmessage>(&wire[..5])?, None); // incomplete
//! let (frame, used) = decoder.decode::<Tmessage>(&wire)?.expect("complete");
//! assert_eq!(frame, Frame::new(7, Tclunk { fid: 42 }));
//! assert_eq!(used, wire.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

pub mod errno;
pub mod error;
pub mod frame;
pub mod message;
pub mod readdir;
pub mod types;
pub mod version;
pub mod wire;

pub use error::{DecodeError, EncodeError, FieldPath};
pub use frame::{
    encode_frame, encode_frame_parts, io_count_limit, Frame, FrameDecoder, RawFrame, DATA_APART,
    HEADER_SIZE, IOHDRSZ,
};
pub use message::*;
pub use readdir::{decode_dirents, encode_dirents, DirentWriter};
pub use types::*;
pub use version::{negotiate, DEFAULT_MAX_MSIZE, MIN_MSIZE, VERSION, VERSION_UNKNOWN};
pub use wire::{Data, Reader, TrailingData, Wire};
