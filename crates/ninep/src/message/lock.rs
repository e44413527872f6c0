//! POSIX record-lock messages: lock and getlock (fcntl F_SETLK / F_GETLK).

use crate::types::{LockFlags, LockStatus, LockType};
use crate::wire::wire_struct;

/// Takes or releases a record lock on open `fid`:
/// `fid[4] type[1] flags[4] start[8] length[8] proc_id[4] client_id[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tlock {
    /// Open fid.
    pub fid: u32,
    /// Read lock, write lock or unlock.
    pub lock_type: LockType,
    /// `BLOCK` when the client will retry a blocked lock.
    pub flags: LockFlags,
    /// First byte of the range.
    pub start: u64,
    /// Length of the range; 0 means to end of file.
    pub length: u64,
    /// Process id of the lock owner on the client.
    pub proc_id: u32,
    /// Client identity (Linux sends its node name).
    pub client_id: String,
}
wire_struct!(Tlock {
    fid,
    lock_type,
    flags,
    start,
    length,
    proc_id,
    client_id,
});

/// Outcome of the lock request: `status[1]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rlock {
    /// Success, blocked, error or grace.
    pub status: LockStatus,
}
wire_struct!(Rlock { status });

/// Tests whether a lock could be taken:
/// `fid[4] type[1] start[8] length[8] proc_id[4] client_id[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tgetlock {
    /// Open fid.
    pub fid: u32,
    /// Lock type that would be requested.
    pub lock_type: LockType,
    /// First byte of the range.
    pub start: u64,
    /// Length of the range; 0 means to end of file.
    pub length: u64,
    /// Process id of the would-be owner.
    pub proc_id: u32,
    /// Client identity.
    pub client_id: String,
}
wire_struct!(Tgetlock {
    fid,
    lock_type,
    start,
    length,
    proc_id,
    client_id,
});

/// The conflicting lock, or type `UNLCK` if none:
/// `type[1] start[8] length[8] proc_id[4] client_id[s]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rgetlock {
    /// Type of the conflicting lock, or `UNLCK`.
    pub lock_type: LockType,
    /// First byte of the conflicting range.
    pub start: u64,
    /// Length of the conflicting range.
    pub length: u64,
    /// Owner of the conflicting lock.
    pub proc_id: u32,
    /// Client holding the conflicting lock.
    pub client_id: String,
}
wire_struct!(Rgetlock {
    lock_type,
    start,
    length,
    proc_id,
    client_id,
});
