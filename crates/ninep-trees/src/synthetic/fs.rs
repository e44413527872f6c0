//! The [`Filesystem`] impl of [`SyntheticTree`].

use std::sync::{Arc, OnceLock, PoisonError};

use crate::listing::Listing;
use crate::synthetic::node::{DirNode, DirOps, Node, NodeKind, OpenFile};
use crate::synthetic::SyntheticTree;
use nf_ninep::errno::{EBADF, EEXIST, EISDIR, ENOENT, ENOTDIR, ENOTEMPTY, EROFS};
use nf_ninep::message::*;
use nf_ninep::types::{Attr, Dirent, GetattrMask, Qid, UnlinkatFlags};
use nf_ninep_server::{Ctx, Filesystem, FsError, FsResult};

const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;

/// A [`SyntheticTree`] fid: the node it names and, once opened, its open file.
pub struct SynFid {
    node: Arc<Node>,
    open: OnceLock<SynOpen>,
}

enum SynOpen {
    File(Box<dyn OpenFile>),
    Dir(Listing),
}

impl SynFid {
    fn new(node: Arc<Node>) -> Self {
        SynFid {
            node,
            open: OnceLock::new(),
        }
    }

    fn file(&self) -> FsResult<&dyn OpenFile> {
        match self.open.get() {
            Some(SynOpen::File(f)) => Ok(f.as_ref()),
            Some(SynOpen::Dir(_)) => Err(FsError::Errno(EISDIR)),
            None => Err(FsError::Errno(EBADF)),
        }
    }
}

fn dir_of(node: &Node) -> FsResult<&DirNode> {
    node.dir().ok_or(FsError::Errno(ENOTDIR))
}

/// [`FsError::WouldBlock`] where the request may not block but the code it would run
/// may wait (`inline`: that code's `runs_inline`).
fn may_run(ctx: &Ctx, inline: bool) -> FsResult<()> {
    if inline || ctx.may_block() {
        Ok(())
    } else {
        Err(FsError::WouldBlock)
    }
}

/// The directory's operations, if the request may run them now.
fn ops_of(ctx: &Ctx, dir: &DirNode) -> FsResult<Arc<dyn DirOps>> {
    let ops = dir
        .ops
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .ok_or(FsError::Errno(EROFS))?;
    may_run(ctx, ops.runs_inline())?;
    Ok(ops)
}

impl SynFid {
    /// The open file, if the request may use it now.
    fn file_for(&self, ctx: &Ctx) -> FsResult<&dyn OpenFile> {
        if let NodeKind::File(node) = &self.node.kind {
            may_run(ctx, node.runs_inline())?;
        }
        self.file()
    }
}

/// What an open with `flags` needs: 4 to read, 2 to write (truncating is writing).
fn wanted(flags: nf_ninep::types::LOpenFlags) -> u32 {
    use nf_ninep::types::LOpenFlags;
    let access = match flags.access_mode() {
        m if m == LOpenFlags::WRONLY.0 => 2,
        m if m == LOpenFlags::RDWR.0 => 6,
        _ => 4,
    };
    if flags.contains(LOpenFlags::TRUNC) {
        access | 2
    } else {
        access
    }
}

fn lookup(dir: &DirNode, name: &str) -> Option<Arc<Node>> {
    dir.children
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .cloned()
}

fn dtype(node: &Node) -> u8 {
    match node.kind {
        NodeKind::Dir(_) => Dirent::DT_DIR,
        NodeKind::File(_) => Dirent::DT_REG,
    }
}

impl SyntheticTree {
    fn node_id(&self) -> u64 {
        self.new_id()
    }

    /// Owner, group and permission bits (with the type bits) of `node`.
    fn perms(&self, node: &Node) -> ((u32, u32), u32) {
        match &node.kind {
            NodeKind::Dir(d) => {
                let ops = d.ops.read().unwrap_or_else(PoisonError::into_inner);
                let bits = ops.as_ref().map_or(0o755, |o| o.mode() & 0o7777);
                let owner = ops.as_ref().and_then(|o| o.owner());
                (owner.unwrap_or((self.uid, self.gid)), S_IFDIR | bits)
            }
            NodeKind::File(f) => (
                f.owner().unwrap_or((self.uid, self.gid)),
                S_IFREG | (f.mode() & 0o7777),
            ),
        }
    }

    /// `EACCES` unless the request's user may write (add or remove entries) in `dir`.
    fn may_change(&self, ctx: &Ctx, dir: &Node) -> FsResult<()> {
        let (owner, mode) = self.perms(dir);
        ctx.permit(owner, mode, 3)
    }

    /// Adds a node made by a client request under `parent`.
    fn add_child(&self, parent: &Arc<Node>, name: &str, kind: NodeKind) -> FsResult<Arc<Node>> {
        let dir = dir_of(parent)?;
        let mut children = dir.children.write().unwrap_or_else(PoisonError::into_inner);
        if children.contains_key(name) {
            return Err(FsError::Errno(EEXIST));
        }
        let node = Node::new(self.node_id(), Arc::downgrade(parent), kind);
        children.insert(name.to_string(), Arc::clone(&node));
        parent.touch();
        Ok(node)
    }

    /// Removes `name` from `parent` for a client request (`want_dir`: rmdir).
    fn remove_child(
        &self,
        ctx: &Ctx,
        parent: &Arc<Node>,
        name: &str,
        want_dir: Option<bool>,
    ) -> FsResult<()> {
        let dir = dir_of(parent)?;
        let node = lookup(dir, name).ok_or(FsError::Errno(ENOENT))?;
        match (&node.kind, want_dir) {
            (NodeKind::Dir(d), Some(true) | None) => {
                if !d
                    .children
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .is_empty()
                {
                    return Err(FsError::Errno(ENOTEMPTY));
                }
            }
            (NodeKind::Dir(_), Some(false)) => return Err(FsError::Errno(EISDIR)),
            (NodeKind::File(_), Some(true)) => return Err(FsError::Errno(ENOTDIR)),
            (NodeKind::File(_), _) => {}
        }
        self.may_change(ctx, parent)?;
        let (dir_owner, dir_mode) = self.perms(parent);
        if let Some(c) = ctx.creds() {
            let sticky = dir_mode & 0o1000 != 0;
            let owner = self.perms(&node).0 .0;
            if sticky && !c.is_root() && c.uid() != owner && c.uid() != dir_owner.0 {
                return Err(FsError::Errno(nf_ninep::errno::EPERM));
            }
        }
        ops_of(ctx, dir)?.remove(ctx, name)?;
        dir.children
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        parent.touch();
        Ok(())
    }

    /// Rule of [`DirOps::walk_missing`]: a file the directory makes for a walk to a
    /// name it lacks, added to it; else `ENOENT`.
    fn walk_missing(&self, ctx: &Ctx, dir: &Arc<Node>, name: &str) -> FsResult<Arc<Node>> {
        let d = dir_of(dir)?;
        let missing = || FsError::Errno(ENOENT);
        let Some(ops) = d.ops.read().unwrap_or_else(PoisonError::into_inner).clone() else {
            return Err(missing());
        };
        may_run(ctx, ops.runs_inline())?;
        if self.may_change(ctx, dir).is_err() {
            return Err(missing());
        }
        let file = ops.walk_missing(ctx, name)?.ok_or_else(missing)?;
        match self.add_child(dir, name, NodeKind::File(file)) {
            Ok(node) => Ok(node),
            // Another walk made it first: use theirs (ours is dropped, giving back
            // whatever it took).
            Err(FsError::Errno(EEXIST)) => lookup(d, name).ok_or_else(missing),
            Err(e) => Err(e),
        }
    }

    fn entries(&self, node: &Arc<Node>) -> FsResult<Vec<Dirent>> {
        let dir = dir_of(node)?;
        let up = node.parent.upgrade().unwrap_or_else(|| Arc::clone(node));
        let dot = |name: &str, n: &Node| Dirent {
            qid: n.qid(),
            offset: 0,
            dtype: Dirent::DT_DIR,
            name: name.to_string(),
        };
        let mut out = vec![dot(".", node), dot("..", &up)];
        for (name, child) in dir
            .children
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            out.push(Dirent {
                qid: child.qid(),
                offset: 0,
                dtype: dtype(child),
                name: name.clone(),
            });
        }
        Ok(out)
    }
}

impl Filesystem for SyntheticTree {
    type Fid = SynFid;

    /// Decided per request: directories never wait, and a file or a directory's
    /// operations run inline when they say so
    /// ([`FileNode::runs_inline`](super::FileNode::runs_inline), [`DirOps::runs_inline`]);
    /// the others answer [`FsError::WouldBlock`] where the request may not block, and run
    /// on a worker.
    fn runs_inline(&self) -> bool {
        true
    }

    fn attach(&self, _: &Ctx, _: &Tattach, _: Option<&SynFid>) -> FsResult<(Rattach, SynFid)> {
        Ok((
            Rattach {
                qid: self.root.qid(),
            },
            SynFid::new(Arc::clone(&self.root)),
        ))
    }

    fn walk1(&self, ctx: &Ctx, dir: &SynFid, name: &str) -> FsResult<(Qid, SynFid)> {
        let node = match name {
            "." => Arc::clone(&dir.node),
            ".." => dir
                .node
                .parent
                .upgrade()
                .unwrap_or_else(|| Arc::clone(&dir.node)),
            _ => {
                let d = dir_of(&dir.node)?;
                // Searching a directory needs its execute bit, as on a host tree.
                let (owner, mode) = self.perms(&dir.node);
                ctx.permit(owner, mode, 1)?;
                match lookup(d, name) {
                    Some(node) => node,
                    None => self.walk_missing(ctx, &dir.node, name)?,
                }
            }
        };
        Ok((node.qid(), SynFid::new(node)))
    }

    fn clone_fid(&self, _: &Ctx, fid: &SynFid) -> FsResult<SynFid> {
        Ok(SynFid::new(Arc::clone(&fid.node)))
    }

    /// Truncating a file to nothing (what a kernel client sends for `O_TRUNC`, as in
    /// `echo x > ctl`) and touching its times are accepted on a file the caller may
    /// write, and change nothing: a synthetic file's content is made by code, and the
    /// write that follows says what it is. Anything else is `EPERM`.
    fn setattr(&self, ctx: &Ctx, fid: &SynFid, req: &Tsetattr) -> FsResult<Rsetattr> {
        use nf_ninep::types::SetattrMask as M;
        let harmless =
            M::SIZE.0 | M::ATIME.0 | M::MTIME.0 | M::CTIME.0 | M::ATIME_SET.0 | M::MTIME_SET.0;
        if req.valid.0 & !harmless != 0 {
            return Err(FsError::Errno(nf_ninep::errno::EPERM));
        }
        if req.valid.contains(M::SIZE) && req.attr.size != 0 {
            return Err(FsError::Errno(nf_ninep::errno::EINVAL));
        }
        match &fid.node.kind {
            NodeKind::File(_) => {
                let (owner, mode) = self.perms(&fid.node);
                ctx.permit(owner, mode, 2)?;
                Ok(Rsetattr)
            }
            NodeKind::Dir(_) if req.valid.contains(M::SIZE) => Err(FsError::Errno(EISDIR)),
            NodeKind::Dir(_) => Ok(Rsetattr),
        }
    }

    fn getattr(&self, _: &Ctx, fid: &SynFid, _: &Tgetattr) -> FsResult<Rgetattr> {
        let node = &fid.node;
        let ((uid, gid), mode) = self.perms(node);
        let (nlink, size) = match &node.kind {
            NodeKind::Dir(_) => (2, 0),
            NodeKind::File(f) => (1, f.size()),
        };
        let mtime = node.mtime();
        Ok(Rgetattr {
            valid: GetattrMask::BASIC,
            qid: node.qid(),
            attr: Attr {
                mode,
                uid,
                gid,
                nlink,
                size,
                blksize: 4096,
                blocks: size.div_ceil(512),
                atime: mtime,
                mtime,
                ctime: mtime,
                ..Attr::default()
            },
        })
    }

    fn lopen(&self, ctx: &Ctx, fid: &SynFid, req: &Tlopen) -> FsResult<Rlopen> {
        let opened = match &fid.node.kind {
            NodeKind::Dir(_) => {
                // Listing a directory needs its read bit.
                let (owner, mode) = self.perms(&fid.node);
                ctx.permit(owner, mode, 4)?;
                SynOpen::Dir(Listing::default())
            }
            NodeKind::File(f) => {
                may_run(ctx, f.runs_inline())?;
                let (owner, mode) = self.perms(&fid.node);
                ctx.permit(owner, mode, wanted(req.flags))?;
                SynOpen::File(f.open(ctx, req.flags)?)
            }
        };
        fid.open.set(opened).map_err(|_| FsError::Errno(EBADF))?;
        Ok(Rlopen {
            qid: fid.node.qid(),
            iounit: 0,
        })
    }

    fn lcreate(&self, ctx: &Ctx, dir: &SynFid, req: &Tlcreate) -> FsResult<(Rlcreate, SynFid)> {
        let parent = &dir.node;
        let d = dir_of(parent)?;
        if lookup(d, &req.name).is_some() {
            return Err(FsError::Errno(EEXIST));
        }
        let ops = ops_of(ctx, d)?;
        self.may_change(ctx, parent)?;
        let file = ops.create(ctx, &req.name, req.mode)?;
        may_run(ctx, file.runs_inline())?;
        let opened = file.open(ctx, req.flags)?;
        let node = self.add_child(parent, &req.name, NodeKind::File(file))?;
        let fid = SynFid::new(node);
        let _ = fid.open.set(SynOpen::File(opened));
        Ok((
            Rlcreate {
                qid: fid.node.qid(),
                iounit: 0,
            },
            fid,
        ))
    }

    fn read(&self, ctx: &Ctx, fid: &SynFid, req: &Tread) -> FsResult<Rread> {
        let data = fid.file_for(ctx)?.read(ctx, req.offset, req.count)?;
        Ok(Rread { data: data.into() })
    }

    fn write(&self, ctx: &Ctx, fid: &SynFid, req: &Twrite) -> FsResult<Rwrite> {
        let count = fid
            .file_for(ctx)?
            .write(ctx, req.offset, req.data.as_slice())?;
        fid.node.touch();
        Ok(Rwrite { count })
    }

    fn readdir(&self, ctx: &Ctx, dir: &SynFid, req: &Treaddir) -> FsResult<Rreaddir> {
        match dir.open.get() {
            Some(SynOpen::Dir(listing)) => {
                listing.read(ctx, req.offset, req.count, || self.entries(&dir.node))
            }
            _ => Err(FsError::Errno(EBADF)),
        }
    }

    fn mkdir(&self, ctx: &Ctx, dir: &SynFid, req: &Tmkdir) -> FsResult<Rmkdir> {
        let d = dir_of(&dir.node)?;
        if lookup(d, &req.name).is_some() {
            return Err(FsError::Errno(EEXIST));
        }
        let ops = ops_of(ctx, d)?;
        self.may_change(ctx, &dir.node)?;
        ops.mkdir(ctx, &req.name, req.mode)?;
        let node = self.add_child(&dir.node, &req.name, NodeKind::Dir(DirNode::default()))?;
        Ok(Rmkdir { qid: node.qid() })
    }

    fn unlinkat(&self, ctx: &Ctx, dir: &SynFid, req: &Tunlinkat) -> FsResult<Runlinkat> {
        let want_dir = req.flags.contains(UnlinkatFlags::REMOVEDIR);
        self.remove_child(ctx, &dir.node, &req.name, Some(want_dir))?;
        Ok(Runlinkat)
    }

    fn remove(&self, ctx: &Ctx, fid: &SynFid) -> FsResult<Rremove> {
        let parent = fid
            .node
            .parent
            .upgrade()
            .ok_or(FsError::Errno(nf_ninep::errno::EBUSY))?;
        let d = dir_of(&parent)?;
        let name = d
            .children
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(_, n)| Arc::ptr_eq(n, &fid.node))
            .map(|(name, _)| name.clone())
            .ok_or(FsError::Errno(ENOENT))?;
        self.remove_child(ctx, &parent, &name, None)?;
        Ok(Rremove)
    }
}
