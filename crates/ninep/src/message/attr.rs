//! Attribute messages: getattr, setattr, statfs, and extended attributes.

use crate::types::{Attr, GetattrMask, Qid, SetAttr, SetattrMask, XattrFlags};
use crate::wire::wire_struct;

/// Asks for the attributes of `fid`: `fid[4] request_mask[8]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tgetattr {
    /// Fid of the file.
    pub fid: u32,
    /// Attributes wanted.
    pub request_mask: GetattrMask,
}
wire_struct!(Tgetattr { fid, request_mask });

/// The attributes: `valid[8] qid[13] mode[4] uid[4] gid[4] nlink[8] rdev[8] size[8]
/// blksize[8] blocks[8] atime_sec[8] atime_nsec[8] mtime_sec[8] mtime_nsec[8]
/// ctime_sec[8] ctime_nsec[8] btime_sec[8] btime_nsec[8] gen[8] data_version[8]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rgetattr {
    /// Which attributes hold real values.
    pub valid: GetattrMask,
    /// The file's qid.
    pub qid: Qid,
    /// Everything from `mode` to `data_version`.
    pub attr: Attr,
}
wire_struct!(Rgetattr { valid, qid, attr });

/// Changes attributes of `fid`: `fid[4] valid[4] mode[4] uid[4] gid[4] size[8]
/// atime_sec[8] atime_nsec[8] mtime_sec[8] mtime_nsec[8]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tsetattr {
    /// Fid of the file.
    pub fid: u32,
    /// Which of the values apply.
    pub valid: SetattrMask,
    /// The new values.
    pub attr: SetAttr,
}
wire_struct!(Tsetattr { fid, valid, attr });

/// The attributes were changed: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rsetattr;
wire_struct!(Rsetattr {});

/// Asks about the file system holding `fid`: `fid[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tstatfs {
    /// Any fid on the file system.
    pub fid: u32,
}
wire_struct!(Tstatfs { fid });

/// File-system figures as statfs(2): `type[4] bsize[4] blocks[8] bfree[8] bavail[8]
/// files[8] ffree[8] fsid[8] namelen[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rstatfs {
    /// File-system type magic (`f_type`).
    pub fs_type: u32,
    /// Block size.
    pub bsize: u32,
    /// Total blocks.
    pub blocks: u64,
    /// Free blocks.
    pub bfree: u64,
    /// Free blocks available to unprivileged users.
    pub bavail: u64,
    /// Total inodes.
    pub files: u64,
    /// Free inodes.
    pub ffree: u64,
    /// File-system id.
    pub fsid: u64,
    /// Longest file name.
    pub namelen: u32,
}
wire_struct!(Rstatfs {
    fs_type,
    bsize,
    blocks,
    bfree,
    bavail,
    files,
    ffree,
    fsid,
    namelen,
});

/// Opens extended attribute `name` of `fid` for reading as `newfid`:
/// `fid[4] newfid[4] name[s]`. An empty name lists the attribute names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txattrwalk {
    /// Fid of the file.
    pub fid: u32,
    /// New fid to read the value (or the name list) from.
    pub newfid: u32,
    /// Attribute name, or empty for the list.
    pub name: String,
}
wire_struct!(Txattrwalk { fid, newfid, name });

/// Size of the attribute value (or name list): `size[8]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rxattrwalk {
    /// Bytes readable from `newfid`.
    pub size: u64,
}
wire_struct!(Rxattrwalk { size });

/// Turns `fid` into a writer for extended attribute `name`:
/// `fid[4] name[s] attr_size[8] flags[4]`. The value is set when `fid` is clunked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Txattrcreate {
    /// Fid of the file; becomes the attribute writer.
    pub fid: u32,
    /// Attribute name.
    pub name: String,
    /// Exact number of bytes that will be written.
    pub attr_size: u64,
    /// setxattr(2) flags.
    pub flags: XattrFlags,
}
wire_struct!(Txattrcreate {
    fid,
    name,
    attr_size,
    flags
});

/// The fid is ready for the value: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rxattrcreate;
wire_struct!(Rxattrcreate {});
