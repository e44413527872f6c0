//! [`Job`]: a request that passed its checks, with its fids resolved to entries.

use std::sync::Arc;

use crate::fid::FidEntry;
use nf_ninep::message::*;

/// A fid entry held by a job.
pub(crate) type FidRef<S> = Arc<FidEntry<S>>;

/// A checked request: fids resolved, new fids reserved, counts capped.
pub(crate) enum Job<S> {
    Auth {
        req: Tauth,
    },
    Attach {
        req: Tattach,
        afid: Option<FidRef<S>>,
    },
    Walk {
        fid: FidRef<S>,
        req: Twalk,
    },
    Lopen {
        fid: FidRef<S>,
        req: Tlopen,
    },
    Lcreate {
        dir: FidRef<S>,
        req: Tlcreate,
    },
    Read {
        fid: FidRef<S>,
        req: Tread,
    },
    Write {
        fid: FidRef<S>,
        req: Twrite,
    },
    Readdir {
        dir: FidRef<S>,
        req: Treaddir,
    },
    Clunk {
        fid: FidRef<S>,
    },
    Remove {
        fid: FidRef<S>,
    },
    Getattr {
        fid: FidRef<S>,
        req: Tgetattr,
    },
    Setattr {
        fid: FidRef<S>,
        req: Tsetattr,
    },
    Statfs {
        fid: FidRef<S>,
        req: Tstatfs,
    },
    Fsync {
        fid: FidRef<S>,
        req: Tfsync,
    },
    Mkdir {
        dir: FidRef<S>,
        req: Tmkdir,
    },
    Mknod {
        dir: FidRef<S>,
        req: Tmknod,
    },
    Symlink {
        dir: FidRef<S>,
        req: Tsymlink,
    },
    Readlink {
        fid: FidRef<S>,
        req: Treadlink,
    },
    Link {
        dir: FidRef<S>,
        fid: FidRef<S>,
        req: Tlink,
    },
    Rename {
        fid: FidRef<S>,
        dir: FidRef<S>,
        req: Trename,
    },
    Renameat {
        olddir: FidRef<S>,
        newdir: FidRef<S>,
        req: Trenameat,
    },
    Unlinkat {
        dir: FidRef<S>,
        req: Tunlinkat,
    },
    Xattrwalk {
        fid: FidRef<S>,
        req: Txattrwalk,
    },
    Xattrcreate {
        fid: FidRef<S>,
        req: Txattrcreate,
    },
    Lock {
        fid: FidRef<S>,
        req: Tlock,
    },
    Getlock {
        fid: FidRef<S>,
        req: Tgetlock,
    },
}
