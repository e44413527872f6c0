//! Name-space messages: walk, readdir, and creating, linking, renaming and unlinking names.

use crate::error::{DecodeError, EncodeError};
use crate::types::{Qid, UnlinkatFlags};
use crate::wire::{
    decode_walk_list, encode_walk_list, walk_list_size, wire_struct, Data, Reader, Wire,
};

/// Walks from `fid` through `wnames` to `newfid`:
/// `fid[4] newfid[4] nwname[2] nwname*(wname[s])`, at most 16 names.
/// With no names it clones `fid`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Twalk {
    /// Starting fid (a directory unless `wnames` is empty).
    pub fid: u32,
    /// New fid for the result (may equal `fid`).
    pub newfid: u32,
    /// Path elements, at most [`crate::MAXWELEM`].
    pub wnames: Vec<String>,
}

// Hand-written because the name list has a u16 count and the MAXWELEM limit.
impl Wire for Twalk {
    fn byte_size(&self) -> usize {
        self.fid.byte_size() + self.newfid.byte_size() + walk_list_size(&self.wnames)
    }

    fn encode(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        self.fid.encode(buf).map_err(|e| e.in_field("fid"))?;
        self.newfid.encode(buf).map_err(|e| e.in_field("newfid"))?;
        encode_walk_list(&self.wnames, buf).map_err(|e| e.in_field("wnames"))
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Twalk {
            fid: u32::decode(r).map_err(|e| e.in_field("fid"))?,
            newfid: u32::decode(r).map_err(|e| e.in_field("newfid"))?,
            wnames: decode_walk_list(r).map_err(|e| e.in_field("wnames"))?,
        })
    }
}

/// Qids of the names walked: `nwqid[2] nwqid*(wqid[13])`.
///
/// Fewer qids than names means the walk stopped early and `newfid` was not created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rwalk {
    /// One qid per name successfully walked, at most [`crate::MAXWELEM`].
    pub wqids: Vec<Qid>,
}

// Hand-written for the same reason as `Twalk`.
impl Wire for Rwalk {
    fn byte_size(&self) -> usize {
        walk_list_size(&self.wqids)
    }

    fn encode(&self, buf: &mut Vec<u8>) -> Result<(), EncodeError> {
        encode_walk_list(&self.wqids, buf).map_err(|e| e.in_field("wqids"))
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Rwalk {
            wqids: decode_walk_list(r).map_err(|e| e.in_field("wqids"))?,
        })
    }
}

/// Reads directory entries of open directory `fid`: `fid[4] offset[8] count[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Treaddir {
    /// Open directory fid.
    pub fid: u32,
    /// 0 to start, else the `offset` of the last entry received.
    pub offset: u64,
    /// Most bytes of entries wanted.
    pub count: u32,
}
wire_struct!(Treaddir { fid, offset, count });

/// Packed directory entries: `count[4] data[count]`; see [`crate::readdir`].
/// No bytes means the end of the directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rreaddir {
    /// Whole [`crate::Dirent`] records back to back.
    pub data: Data,
}
wire_struct!(Rreaddir { ; data });

/// Creates directory `name` in `dfid`: `dfid[4] name[s] mode[4] gid[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tmkdir {
    /// Parent directory fid.
    pub dfid: u32,
    /// New directory's name.
    pub name: String,
    /// Permission bits (mkdir(2) mode).
    pub mode: u32,
    /// Effective gid of the caller.
    pub gid: u32,
}
wire_struct!(Tmkdir {
    dfid,
    name,
    mode,
    gid
});

/// The directory exists: `qid[13]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rmkdir {
    /// Qid of the new directory.
    pub qid: Qid,
}
wire_struct!(Rmkdir { qid });

/// Creates a device node, fifo or socket `name` in `dfid`:
/// `dfid[4] name[s] mode[4] major[4] minor[4] gid[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tmknod {
    /// Parent directory fid.
    pub dfid: u32,
    /// New node's name.
    pub name: String,
    /// File type and permission bits (mknod(2) mode).
    pub mode: u32,
    /// Device major number.
    pub major: u32,
    /// Device minor number.
    pub minor: u32,
    /// Effective gid of the caller.
    pub gid: u32,
}
wire_struct!(Tmknod {
    dfid,
    name,
    mode,
    major,
    minor,
    gid
});

/// The node exists: `qid[13]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rmknod {
    /// Qid of the new node.
    pub qid: Qid,
}
wire_struct!(Rmknod { qid });

/// Creates symlink `name` in `fid` pointing at `symtgt`:
/// `fid[4] name[s] symtgt[s] gid[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tsymlink {
    /// Parent directory fid.
    pub fid: u32,
    /// Link name.
    pub name: String,
    /// Link target.
    pub symtgt: String,
    /// Effective gid of the caller.
    pub gid: u32,
}
wire_struct!(Tsymlink {
    fid,
    name,
    symtgt,
    gid
});

/// The symlink exists: `qid[13]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rsymlink {
    /// Qid of the new link.
    pub qid: Qid,
}
wire_struct!(Rsymlink { qid });

/// Reads the target of symlink `fid`: `fid[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Treadlink {
    /// Fid of the symlink.
    pub fid: u32,
}
wire_struct!(Treadlink { fid });

/// The link's target: `target[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rreadlink {
    /// Link target.
    pub target: String,
}
wire_struct!(Rreadlink { target });

/// Makes hard link `name` in `dfid` to the file `fid` names: `dfid[4] fid[4] name[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tlink {
    /// Directory to hold the new name.
    pub dfid: u32,
    /// Existing file.
    pub fid: u32,
    /// New name.
    pub name: String,
}
wire_struct!(Tlink { dfid, fid, name });

/// The link exists: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rlink;
wire_struct!(Rlink {});

/// Moves the file `fid` names to `name` in `dfid`: `fid[4] dfid[4] name[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trename {
    /// File to move.
    pub fid: u32,
    /// Destination directory.
    pub dfid: u32,
    /// New name.
    pub name: String,
}
wire_struct!(Trename { fid, dfid, name });

/// The file was moved: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rrename;
wire_struct!(Rrename {});

/// Renames `oldname` in `olddirfid` to `newname` in `newdirfid`:
/// `olddirfid[4] oldname[s] newdirfid[4] newname[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trenameat {
    /// Source directory.
    pub olddirfid: u32,
    /// Source name.
    pub oldname: String,
    /// Destination directory.
    pub newdirfid: u32,
    /// Destination name.
    pub newname: String,
}
wire_struct!(Trenameat {
    olddirfid,
    oldname,
    newdirfid,
    newname
});

/// The name was moved: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rrenameat;
wire_struct!(Rrenameat {});

/// Removes `name` from directory `dirfid`: `dirfid[4] name[s] flags[4]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tunlinkat {
    /// Directory holding the name.
    pub dirfid: u32,
    /// Name to remove.
    pub name: String,
    /// `REMOVEDIR` to remove a directory.
    pub flags: UnlinkatFlags,
}
wire_struct!(Tunlinkat {
    dirfid,
    name,
    flags
});

/// The name is gone: (empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Runlinkat;
wire_struct!(Runlinkat {});
