//! Value types carried inside messages: qids, flag words, attributes, directory entries.
//!
//! Flag words are plain newtypes over the wire integer with named constants, so any
//! value the peer sends decodes unchanged; deciding which bits are acceptable is the
//! server's job, not the codec's.

use crate::wire::{wire_newtype, wire_struct};

/// Tag that `Tversion`/`Rversion` must carry.
pub const NOTAG: u16 = u16::MAX;
/// "No fid": the `afid` of an unauthenticated `Tattach`.
pub const NOFID: u32 = u32::MAX;
/// "No numeric user": `n_uname` when `uname` is to be used instead.
pub const NONUNAME: u32 = u32::MAX;
/// Most names one `Twalk` may carry (and most qids one `Rwalk` may return).
pub const MAXWELEM: usize = 16;

/// Adds `contains` and `|` to a flag newtype.
macro_rules! flag_ops {
    ($name:ident) => {
        impl $name {
            /// True when every bit of `other` is set in `self`.
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
        }
        impl std::ops::BitOr for $name {
            type Output = Self;
            fn bitor(self, rhs: Self) -> Self {
                Self(self.0 | rhs.0)
            }
        }
        impl std::ops::BitOrAssign for $name {
            fn bitor_assign(&mut self, rhs: Self) {
                self.0 |= rhs.0;
            }
        }
    };
}

/// Kind of object a qid names (the high byte of a Plan 9 mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QidType(pub u8);

impl QidType {
    /// Directory.
    pub const DIR: Self = Self(0x80);
    /// Append-only file.
    pub const APPEND: Self = Self(0x40);
    /// Exclusive-use file.
    pub const EXCL: Self = Self(0x20);
    /// Mount point (Plan 9 only).
    pub const MOUNT: Self = Self(0x10);
    /// Authentication file (an afid).
    pub const AUTH: Self = Self(0x08);
    /// Not backed up.
    pub const TMP: Self = Self(0x04);
    /// Symbolic link.
    pub const SYMLINK: Self = Self(0x02);
    /// Hard link (9P2000.u).
    pub const LINK: Self = Self(0x01);
    /// Plain file (no bits set).
    pub const FILE: Self = Self(0x00);
}
flag_ops!(QidType);
wire_newtype!(QidType(u8));

/// The server's unique identity of a file: `type[1] version[4] path[8]` (13 bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Qid {
    /// Kind of object.
    pub ty: QidType,
    /// Changes whenever the file's content changes (0 if the server does not track it).
    pub version: u32,
    /// Unique among all files of the tree (typically the inode number).
    pub path: u64,
}
wire_struct!(Qid { ty, version, path });

/// Linux open(2) flags as 9P2000.L encodes them (`Tlopen.flags`, `Tlcreate.flags`).
///
/// The values are the kernel's `P9_DOTL_*` constants, which match x86 Linux `O_*`
/// except [`LOpenFlags::SYNC`]. The low two bits are an access mode, not flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LOpenFlags(pub u32);

impl LOpenFlags {
    /// Mask of the access-mode bits.
    pub const ACCMODE: u32 = 0o3;
    /// Read only (access mode).
    pub const RDONLY: Self = Self(0o0);
    /// Write only (access mode).
    pub const WRONLY: Self = Self(0o1);
    /// Read and write (access mode).
    pub const RDWR: Self = Self(0o2);
    /// No access, for ioctl-style opens (access mode).
    pub const NOACCESS: Self = Self(0o3);
    /// Create if missing.
    pub const CREATE: Self = Self(0o100);
    /// With CREATE: fail if it exists.
    pub const EXCL: Self = Self(0o200);
    /// Do not become the controlling terminal.
    pub const NOCTTY: Self = Self(0o400);
    /// Truncate to zero length.
    pub const TRUNC: Self = Self(0o1000);
    /// Writes append.
    pub const APPEND: Self = Self(0o2000);
    /// Non-blocking I/O.
    pub const NONBLOCK: Self = Self(0o4000);
    /// Synchronous data writes.
    pub const DSYNC: Self = Self(0o10000);
    /// Signal-driven I/O.
    pub const FASYNC: Self = Self(0o20000);
    /// Bypass caches.
    pub const DIRECT: Self = Self(0o40000);
    /// Large-file open.
    pub const LARGEFILE: Self = Self(0o100000);
    /// Fail unless a directory.
    pub const DIRECTORY: Self = Self(0o200000);
    /// Do not follow a final symlink.
    pub const NOFOLLOW: Self = Self(0o400000);
    /// Do not update atime.
    pub const NOATIME: Self = Self(0o1000000);
    /// Close on exec.
    pub const CLOEXEC: Self = Self(0o2000000);
    /// Synchronous writes (9P value; Linux x86 `O_SYNC` is `0o4010000`).
    pub const SYNC: Self = Self(0o4000000);

    /// The access mode: one of `RDONLY`, `WRONLY`, `RDWR`, `NOACCESS` (as a raw value).
    pub const fn access_mode(self) -> u32 {
        self.0 & Self::ACCMODE
    }
}
flag_ops!(LOpenFlags);
wire_newtype!(LOpenFlags(u32));

/// Which attributes `Tgetattr` asks for and `Rgetattr` fills in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct GetattrMask(pub u64);

impl GetattrMask {
    /// `mode`.
    pub const MODE: Self = Self(0x0001);
    /// `nlink`.
    pub const NLINK: Self = Self(0x0002);
    /// `uid`.
    pub const UID: Self = Self(0x0004);
    /// `gid`.
    pub const GID: Self = Self(0x0008);
    /// `rdev`.
    pub const RDEV: Self = Self(0x0010);
    /// `atime`.
    pub const ATIME: Self = Self(0x0020);
    /// `mtime`.
    pub const MTIME: Self = Self(0x0040);
    /// `ctime`.
    pub const CTIME: Self = Self(0x0080);
    /// `qid.path` (the inode number).
    pub const INO: Self = Self(0x0100);
    /// `size`.
    pub const SIZE: Self = Self(0x0200);
    /// `blocks`.
    pub const BLOCKS: Self = Self(0x0400);
    /// `btime` (birth time).
    pub const BTIME: Self = Self(0x0800);
    /// `gen`.
    pub const GEN: Self = Self(0x1000);
    /// `data_version`.
    pub const DATA_VERSION: Self = Self(0x2000);
    /// Everything up to `BLOCKS`: what stat(2) returns.
    pub const BASIC: Self = Self(0x07ff);
    /// Every attribute.
    pub const ALL: Self = Self(0x3fff);
}
flag_ops!(GetattrMask);
wire_newtype!(GetattrMask(u64));

/// Which attributes `Tsetattr` changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetattrMask(pub u32);

impl SetattrMask {
    /// Set `mode` (chmod).
    pub const MODE: Self = Self(0x0001);
    /// Set `uid` (chown).
    pub const UID: Self = Self(0x0002);
    /// Set `gid` (chown).
    pub const GID: Self = Self(0x0004);
    /// Set `size` (truncate).
    pub const SIZE: Self = Self(0x0008);
    /// Set atime: to the given value with `ATIME_SET`, else to the server's now.
    pub const ATIME: Self = Self(0x0010);
    /// Set mtime: to the given value with `MTIME_SET`, else to the server's now.
    pub const MTIME: Self = Self(0x0020);
    /// Set ctime to the server's now.
    pub const CTIME: Self = Self(0x0040);
    /// Use the atime in the message rather than now.
    pub const ATIME_SET: Self = Self(0x0080);
    /// Use the mtime in the message rather than now.
    pub const MTIME_SET: Self = Self(0x0100);
}
flag_ops!(SetattrMask);
wire_newtype!(SetattrMask(u32));

/// A time as seconds and nanoseconds since the Unix epoch: `sec[8] nsec[8]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Timespec {
    /// Seconds.
    pub sec: u64,
    /// Nanoseconds.
    pub nsec: u64,
}
wire_struct!(Timespec { sec, nsec });

/// File attributes in `Rgetattr`, after `valid` and `qid` (stat(2) without `st_dev`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Attr {
    /// Linux `st_mode`: file type and permission bits.
    pub mode: u32,
    /// Owner uid.
    pub uid: u32,
    /// Group gid.
    pub gid: u32,
    /// Hard-link count.
    pub nlink: u64,
    /// Device number, for device files.
    pub rdev: u64,
    /// Size in bytes.
    pub size: u64,
    /// Preferred I/O block size.
    pub blksize: u64,
    /// Allocated 512-byte blocks.
    pub blocks: u64,
    /// Last access.
    pub atime: Timespec,
    /// Last modification.
    pub mtime: Timespec,
    /// Last status change.
    pub ctime: Timespec,
    /// Creation (reserved; 0 unless `GetattrMask::BTIME` is valid).
    pub btime: Timespec,
    /// Inode generation (reserved).
    pub gen: u64,
    /// Data version (reserved).
    pub data_version: u64,
}
wire_struct!(Attr {
    mode,
    uid,
    gid,
    nlink,
    rdev,
    size,
    blksize,
    blocks,
    atime,
    mtime,
    ctime,
    btime,
    gen,
    data_version,
});

/// Attribute values in `Tsetattr`, after `valid`; only the fields `valid` selects apply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SetAttr {
    /// New permission bits (chmod).
    pub mode: u32,
    /// New owner (chown).
    pub uid: u32,
    /// New group (chown).
    pub gid: u32,
    /// New size (truncate).
    pub size: u64,
    /// New access time.
    pub atime: Timespec,
    /// New modification time.
    pub mtime: Timespec,
}
wire_struct!(SetAttr {
    mode,
    uid,
    gid,
    size,
    atime,
    mtime,
});

/// One directory entry inside `Rreaddir` data: `qid[13] offset[8] type[1] name[s]`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dirent {
    /// The entry's qid.
    pub qid: Qid,
    /// Offset to pass in the next `Treaddir` to continue after this entry.
    pub offset: u64,
    /// Linux `d_type` (`DT_*` constants below).
    pub dtype: u8,
    /// Entry name (no `/`).
    pub name: String,
}
wire_struct!(Dirent {
    qid,
    offset,
    dtype,
    name
});

impl Dirent {
    /// Type unknown.
    pub const DT_UNKNOWN: u8 = 0;
    /// Named pipe.
    pub const DT_FIFO: u8 = 1;
    /// Character device.
    pub const DT_CHR: u8 = 2;
    /// Directory.
    pub const DT_DIR: u8 = 4;
    /// Block device.
    pub const DT_BLK: u8 = 6;
    /// Regular file.
    pub const DT_REG: u8 = 8;
    /// Symbolic link.
    pub const DT_LNK: u8 = 10;
    /// Unix socket.
    pub const DT_SOCK: u8 = 12;
}

/// POSIX record-lock type in `Tlock`, `Tgetlock` and `Rgetlock`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LockType(pub u8);

impl LockType {
    /// Shared (read) lock.
    pub const RDLCK: Self = Self(0);
    /// Exclusive (write) lock.
    pub const WRLCK: Self = Self(1);
    /// Unlock; in `Rgetlock`, "no conflicting lock".
    pub const UNLCK: Self = Self(2);
}
wire_newtype!(LockType(u8));

/// Flags of `Tlock`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LockFlags(pub u32);

impl LockFlags {
    /// The client will retry while the answer is `BLOCKED` (F_SETLKW).
    pub const BLOCK: Self = Self(1);
    /// Reclaim after server restart (reserved).
    pub const RECLAIM: Self = Self(2);
}
flag_ops!(LockFlags);
wire_newtype!(LockFlags(u32));

/// Outcome in `Rlock`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LockStatus(pub u8);

impl LockStatus {
    /// The lock was taken (or released).
    pub const SUCCESS: Self = Self(0);
    /// A conflicting lock is held; try again.
    pub const BLOCKED: Self = Self(1);
    /// The request failed.
    pub const ERROR: Self = Self(2);
    /// The server is in its grace period after restart.
    pub const GRACE: Self = Self(3);
}
wire_newtype!(LockStatus(u8));

/// Flags of `Tunlinkat`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UnlinkatFlags(pub u32);

impl UnlinkatFlags {
    /// Remove a directory (rmdir) rather than a file.
    pub const REMOVEDIR: Self = Self(0x200);
}
flag_ops!(UnlinkatFlags);
wire_newtype!(UnlinkatFlags(u32));

/// Flags of `Txattrcreate`, as setxattr(2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct XattrFlags(pub u32);

impl XattrFlags {
    /// Fail if the attribute exists.
    pub const CREATE: Self = Self(1);
    /// Fail if the attribute does not exist.
    pub const REPLACE: Self = Self(2);
}
flag_ops!(XattrFlags);
wire_newtype!(XattrFlags(u32));

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Wire;

    #[test]
    fn fixed_sizes_match_the_spec() {
        assert_eq!(Qid::default().byte_size(), 13);
        assert_eq!(Attr::default().byte_size(), 153 - 8 - 13);
        assert_eq!(SetAttr::default().byte_size(), 60 - 4 - 4);
    }

    #[test]
    fn flags_combine() {
        let f = LOpenFlags::RDWR | LOpenFlags::CREATE | LOpenFlags::TRUNC;
        assert!(f.contains(LOpenFlags::CREATE));
        assert!(!f.contains(LOpenFlags::EXCL));
        assert_eq!(f.access_mode(), LOpenFlags::RDWR.0);
        assert!(GetattrMask::ALL.contains(GetattrMask::BASIC | GetattrMask::GEN));
    }
}
