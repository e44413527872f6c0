//! File I/O messages: lopen, lcreate, read, write, clunk, remove, fsync.

use crate::types::{LOpenFlags, Qid};
use crate::wire::{wire_struct, Data};

/// Opens `fid` for I/O: `fid[4] flags[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tlopen {
    /// Fid to open; it must not be open yet.
    pub fid: u32,
    /// Linux open flags.
    pub flags: LOpenFlags,
}
wire_struct!(Tlopen { fid, flags });

/// The file is open: `qid[13] iounit[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rlopen {
    /// Qid of the opened file.
    pub qid: Qid,
    /// Largest read/write the server guarantees to do in one message (0: msize − 24).
    pub iounit: u32,
}
wire_struct!(Rlopen { qid, iounit });

/// Creates and opens a regular file in directory `fid`:
/// `fid[4] name[s] flags[4] mode[4] gid[4]`. Afterwards `fid` names the new file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tlcreate {
    /// Directory fid; becomes the new, open file.
    pub fid: u32,
    /// Name of the new file.
    pub name: String,
    /// Linux open flags.
    pub flags: LOpenFlags,
    /// Permission bits (creat(2) mode).
    pub mode: u32,
    /// Effective gid of the caller.
    pub gid: u32,
}
wire_struct!(Tlcreate {
    fid,
    name,
    flags,
    mode,
    gid
});

/// The file was created and opened: `qid[13] iounit[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rlcreate {
    /// Qid of the new file.
    pub qid: Qid,
    /// As in [`Rlopen::iounit`].
    pub iounit: u32,
}
wire_struct!(Rlcreate { qid, iounit });

/// Reads up to `count` bytes at `offset`: `fid[4] offset[8] count[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tread {
    /// Open fid (not a directory: use `Treaddir`).
    pub fid: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// Most bytes wanted.
    pub count: u32,
}
wire_struct!(Tread { fid, offset, count });

/// The bytes read: `count[4] data[count]`; 0 bytes means end of file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rread {
    /// The bytes, at most the requested count.
    pub data: Data,
}
wire_struct!(Rread { ; data });

/// Writes bytes at `offset`: `fid[4] offset[8] count[4] data[count]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Twrite {
    /// Open fid.
    pub fid: u32,
    /// Byte offset in the file.
    pub offset: u64,
    /// The bytes to write.
    pub data: Data,
}
wire_struct!(Twrite { fid, offset; data });

/// How many bytes were written: `count[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rwrite {
    /// Bytes written.
    pub count: u32,
}
wire_struct!(Rwrite { count });

/// Forgets `fid` (closing it if open): `fid[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tclunk {
    /// Fid to release.
    pub fid: u32,
}
wire_struct!(Tclunk { fid });

/// The fid is released: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rclunk;
wire_struct!(Rclunk {});

/// Removes the file `fid` names, then clunks `fid` (even on failure): `fid[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tremove {
    /// Fid of the file to remove.
    pub fid: u32,
}
wire_struct!(Tremove { fid });

/// The file is removed: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rremove;
wire_struct!(Rremove {});

/// Flushes cached data of open `fid` to stable storage: `fid[4] datasync[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tfsync {
    /// Open fid.
    pub fid: u32,
    /// Non-zero: data only, as fdatasync(2).
    pub datasync: u32,
}
wire_struct!(Tfsync { fid, datasync });

/// The data is on stable storage: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rfsync;
wire_struct!(Rfsync {});
