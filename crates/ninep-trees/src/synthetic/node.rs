//! The nodes of a [`super::SyntheticTree`], and the traits its files and directories
//! implement.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

use crate::now;
use nf_ninep::errno::{EOPNOTSUPP, EROFS};
use nf_ninep::types::{LOpenFlags, Qid, QidType, Timespec};
use nf_ninep_server::lock;
use nf_ninep_server::FsError;
use nf_ninep_server::{Ctx, FsResult};

/// A file of a synthetic tree: its attributes and how to open it.
///
/// Each open gets its own [`OpenFile`], dropped when the fid is released — so a file
/// can count its readers and writers (a pipe's end of file) or take a snapshot per open.
pub trait FileNode: Send + Sync + 'static {
    /// True if `open` and the open file's `read` and `write` either return promptly or,
    /// where [`Ctx::may_block`] is false, answer [`FsError::WouldBlock`] instead of
    /// waiting ([`Ctx::wait`] does both). Default false: every request on this file then
    /// runs on a worker thread.
    fn runs_inline(&self) -> bool {
        false
    }

    /// Permission bits (the server adds the file-type bits).
    fn mode(&self) -> u32 {
        0o644
    }

    /// Owner and group (uid, gid); `None`: the tree's own (the server's).
    fn owner(&self) -> Option<(u32, u32)> {
        None
    }

    /// Size reported by getattr (0 for files whose content is made at open).
    fn size(&self) -> u64 {
        0
    }

    /// True if a write lands at its offset whatever order writes arrive in (a file on
    /// disk), so a client may keep several in flight. Default false: writes are taken
    /// in arrival order and their offset is ignored (streams, pipes, control files),
    /// which the file's qid says with `QTAPPEND`.
    fn positional(&self) -> bool {
        false
    }

    /// Opens the file with `flags` (access mode in the low two bits).
    fn open(&self, ctx: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>>;
}

/// One open of a [`FileNode`].
#[allow(unused_variables)]
pub trait OpenFile: Send + Sync + 'static {
    /// Reads at most `count` bytes at `offset`; an empty result is end of file. A read
    /// that blocks must wait with [`Ctx::wait`] (or `ctx.cancel()`, see
    /// [`nf_ninep_server::Cancel::wait`]).
    fn read(&self, ctx: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        Err(FsError::Errno(EOPNOTSUPP))
    }

    /// Writes `data` at `offset`, returning the bytes taken.
    fn write(&self, ctx: &Ctx, offset: u64, data: &[u8]) -> FsResult<u32> {
        Err(FsError::Errno(EROFS))
    }
}

/// What clients may do inside one directory of a synthetic tree. Every method answers
/// `EROFS` unless implemented; the tree itself adds or removes the entry afterwards.
#[allow(unused_variables)]
pub trait DirOps: Send + Sync + 'static {
    /// As [`FileNode::runs_inline`], for these methods. Default false.
    fn runs_inline(&self) -> bool {
        false
    }

    /// Permission bits of the directory (the server adds the file-type bits). Clients
    /// acting as a user ([`Ctx::creds`]) need write permission here to create or
    /// remove; with the sticky bit (`0o1000`, as `/tmp`) only a file's owner, the
    /// directory's owner or root may remove it. Default `0o755`.
    fn mode(&self) -> u32 {
        0o755
    }

    /// Owner and group (uid, gid) of the directory; `None`: the tree's own.
    fn owner(&self) -> Option<(u32, u32)> {
        None
    }

    /// A walk to `name`, which does not exist here: a file to add under that name
    /// (the walk then goes on to it), or `None` for `ENOENT` (the default). The walker
    /// has write permission on the directory.
    fn walk_missing(&self, ctx: &Ctx, name: &str) -> FsResult<Option<Arc<dyn FileNode>>> {
        Ok(None)
    }

    /// `Tlcreate` of `name`: the file to add (it is then opened with the request's flags).
    /// Called again, the first file dropped, when that file does not run inline and
    /// the request had to move to a worker.
    fn create(&self, ctx: &Ctx, name: &str, mode: u32) -> FsResult<Arc<dyn FileNode>> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tmkdir` of `name`: approve it, and the tree adds an empty directory.
    fn mkdir(&self, ctx: &Ctx, name: &str, mode: u32) -> FsResult<()> {
        Err(FsError::Errno(EROFS))
    }

    /// `Tremove` / `Tunlinkat` of `name`: approve it, and the tree drops the entry.
    fn remove(&self, ctx: &Ctx, name: &str) -> FsResult<()> {
        Err(FsError::Errno(EROFS))
    }
}

/// A directory's contents.
#[derive(Default)]
pub(crate) struct DirNode {
    pub children: RwLock<BTreeMap<String, Arc<Node>>>,
    pub ops: RwLock<Option<Arc<dyn DirOps>>>,
}

/// What a node is.
pub(crate) enum NodeKind {
    Dir(DirNode),
    File(Arc<dyn FileNode>),
}

/// One file or directory.
pub(crate) struct Node {
    /// Unique within the tree: the qid.path.
    pub id: u64,
    pub parent: Weak<Node>,
    pub kind: NodeKind,
    version: AtomicU32,
    mtime: Mutex<Timespec>,
}

impl Node {
    pub fn new(id: u64, parent: Weak<Node>, kind: NodeKind) -> Arc<Node> {
        Arc::new(Node {
            id,
            parent,
            kind,
            version: AtomicU32::new(0),
            mtime: Mutex::new(now()),
        })
    }

    pub fn dir(&self) -> Option<&DirNode> {
        match &self.kind {
            NodeKind::Dir(d) => Some(d),
            NodeKind::File(_) => None,
        }
    }

    pub fn qid(&self) -> Qid {
        Qid {
            ty: match self.kind {
                NodeKind::Dir(_) => QidType::DIR,
                NodeKind::File(ref f) if f.positional() => QidType::FILE,
                // Writes ignore their offset: a client must not reorder them.
                NodeKind::File(_) => QidType::APPEND,
            },
            version: self.version.load(Ordering::Relaxed),
            path: self.id,
        }
    }

    pub fn mtime(&self) -> Timespec {
        *lock(&self.mtime)
    }

    /// Records a change of content: bumps qid.version and mtime.
    pub fn touch(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
        *lock(&self.mtime) = now();
    }
}
