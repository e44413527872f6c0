//! [`SyntheticTree`]: an in-memory tree built in code from directories and files.
//!
//! Files are [`FileNode`]s: ready-made ones are [`StaticFile`] (fixed bytes),
//! [`DynamicFile`] (a snapshot made at each open, plus an optional write handler) and
//! [`Stream`] (append-only, readers block for more like `tail -f`); anything else
//! (a pipe with reader and writer counts) implements [`FileNode`] and [`OpenFile`].
//! Directories refuse creation and removal unless given [`DirOps`].
//!
//! ```
//! use nf_ninep_trees::synthetic::{DynamicFile, StaticFile, Stream, SyntheticTree};
//!
//! let tree = SyntheticTree::new();
//! tree.add_file("/motd", StaticFile::new("hello\n"))?;
//! tree.add_file("/status", DynamicFile::new(|| b"load 0.1\n".to_vec()))?;
//! let log = Stream::new().writable();
//! tree.add_file("/log", log.clone())?;
//! log.push(b"started\n");
//! assert!(tree.contains("/log"));
//! # Ok::<(), nf_ninep_trees::synthetic::TreeError>(())
//! ```
//!
//! Qid paths are node numbers, unique for the tree's life; a successful write bumps the
//! file's qid.version and mtime. Removing a node leaves fids that hold it working, as an
//! unlinked file stays readable while open.

mod files;
mod fs;
mod node;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, Weak};

pub use files::{slice_at, wants_read, wants_write, DynamicFile, StaticFile, Stream};
pub use fs::SynFid;
pub use node::{DirOps, FileNode, OpenFile};

use node::{DirNode, Node, NodeKind};

/// Why a tree could not be changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TreeError {
    /// Nothing at the path.
    #[error("synthetic tree: no entry at {path}")]
    NotFound {
        /// The path asked for.
        path: String,
    },
    /// Something is already at the path.
    #[error("synthetic tree: {path} already exists; remove it first")]
    AlreadyExists {
        /// The path asked for.
        path: String,
    },
    /// A file stands where a directory is needed.
    #[error("synthetic tree: {path} is a file, not a directory")]
    NotADirectory {
        /// The path of the file.
        path: String,
    },
    /// The path is empty, the root, or holds `.`/`..`.
    #[error("synthetic tree: bad path {path:?}: use /name/name with no . or .. elements")]
    BadPath {
        /// The path given.
        path: String,
    },
}

/// An in-memory file tree (see the [module documentation](self)). Clones share the
/// tree, so code can keep adding and removing entries after it is mounted.
#[derive(Clone)]
pub struct SyntheticTree {
    root: Arc<Node>,
    next_id: Arc<AtomicU64>,
    uid: u32,
    gid: u32,
}

impl Default for SyntheticTree {
    fn default() -> Self {
        SyntheticTree::new()
    }
}

/// Splits `/a/b/c` into its names; refuses `.`, `..` and an empty path.
fn names(path: &str) -> Result<Vec<&str>, TreeError> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.is_empty()
        || parts
            .iter()
            .any(|p| *p == "." || *p == ".." || p.contains('\0'))
    {
        return Err(TreeError::BadPath {
            path: path.to_string(),
        });
    }
    Ok(parts)
}

impl SyntheticTree {
    /// An empty tree: just the root directory.
    pub fn new() -> Self {
        SyntheticTree {
            root: Node::new(1, Weak::new(), NodeKind::Dir(DirNode::default())),
            next_id: Arc::new(AtomicU64::new(2)),
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
        }
    }

    fn new_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The directory at `names`, creating missing ones when `create` is set.
    fn dir_at(&self, path: &str, names: &[&str], create: bool) -> Result<Arc<Node>, TreeError> {
        let mut node = Arc::clone(&self.root);
        for name in names {
            let dir = node.dir().ok_or_else(|| TreeError::NotADirectory {
                path: path.to_string(),
            })?;
            let next = {
                let mut children = dir.children.write().unwrap_or_else(PoisonError::into_inner);
                match children.get(*name) {
                    Some(n) => Arc::clone(n),
                    None if create => {
                        let n = Node::new(
                            self.new_id(),
                            Arc::downgrade(&node),
                            NodeKind::Dir(DirNode::default()),
                        );
                        children.insert(name.to_string(), Arc::clone(&n));
                        node.touch();
                        n
                    }
                    None => {
                        return Err(TreeError::NotFound {
                            path: path.to_string(),
                        })
                    }
                }
            };
            node = next;
        }
        if node.dir().is_none() {
            return Err(TreeError::NotADirectory {
                path: path.to_string(),
            });
        }
        Ok(node)
    }

    fn insert(
        &self,
        path: &str,
        kind: impl FnOnce() -> NodeKind,
        parents: bool,
    ) -> Result<(), TreeError> {
        let names = names(path)?;
        let (last, parent_names) = names.split_last().expect("names is not empty");
        let parent = self.dir_at(path, parent_names, parents)?;
        let dir = parent.dir().expect("dir_at returns directories");
        let mut children = dir.children.write().unwrap_or_else(PoisonError::into_inner);
        if children.contains_key(*last) {
            return Err(TreeError::AlreadyExists {
                path: path.to_string(),
            });
        }
        let node = Node::new(self.new_id(), Arc::downgrade(&parent), kind());
        children.insert(last.to_string(), node);
        parent.touch();
        Ok(())
    }

    /// Adds directory `path` and any missing parents (`mkdir -p`).
    pub fn add_dir(&self, path: &str) -> Result<(), TreeError> {
        let names = names(path)?;
        self.dir_at(path, &names, true).map(|_| ())
    }

    /// Adds `file` at `path`, creating missing parent directories.
    pub fn add_file(&self, path: &str, file: impl FileNode) -> Result<(), TreeError> {
        self.add_file_arc(path, Arc::new(file))
    }

    /// Adds a shared file at `path`, creating missing parent directories.
    pub fn add_file_arc(&self, path: &str, file: Arc<dyn FileNode>) -> Result<(), TreeError> {
        self.insert(path, || NodeKind::File(file), true)
    }

    /// Lets clients create, make directories or remove inside directory `path`
    /// (`/` for the root).
    pub fn set_dir_ops(&self, path: &str, ops: impl DirOps) -> Result<(), TreeError> {
        let names: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let dir = self.dir_at(path, &names, false)?;
        let slot = &dir.dir().expect("dir_at returns directories").ops;
        *slot.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(ops));
        Ok(())
    }

    /// Removes the file or directory (with its contents) at `path`.
    pub fn remove(&self, path: &str) -> Result<(), TreeError> {
        let names = names(path)?;
        let (last, parent_names) = names.split_last().expect("names is not empty");
        let parent = self.dir_at(path, parent_names, false)?;
        let dir = parent.dir().expect("dir_at returns directories");
        let removed = dir
            .children
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(*last);
        match removed {
            Some(_) => {
                parent.touch();
                Ok(())
            }
            None => Err(TreeError::NotFound {
                path: path.to_string(),
            }),
        }
    }

    /// True if something exists at `path` (`/` is the root).
    pub fn contains(&self, path: &str) -> bool {
        let mut node = Arc::clone(&self.root);
        for name in path.split('/').filter(|p| !p.is_empty()) {
            let next = match node.dir() {
                Some(dir) => dir
                    .children
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .get(name)
                    .cloned(),
                None => None,
            };
            match next {
                Some(n) => node = n,
                None => return false,
            }
        }
        true
    }

    /// Names inside directory `path`, sorted.
    pub fn list(&self, path: &str) -> Result<Vec<String>, TreeError> {
        let names: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let dir = self.dir_at(path, &names, false)?;
        let children = dir
            .dir()
            .expect("dir_at returns directories")
            .children
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        Ok(children)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_and_remove() {
        let t = SyntheticTree::new();
        t.add_file("/a/b/c", StaticFile::new("x")).unwrap();
        assert!(t.contains("/a/b") && t.contains("/a/b/c"));
        assert_eq!(
            t.add_file("/a/b/c", StaticFile::new("y")),
            Err(TreeError::AlreadyExists {
                path: "/a/b/c".into()
            })
        );
        assert!(matches!(
            t.add_dir("/a/b/c/d"),
            Err(TreeError::NotADirectory { .. })
        ));
        assert!(matches!(
            t.add_dir("/a/../b"),
            Err(TreeError::BadPath { .. })
        ));
        t.remove("/a/b").unwrap();
        assert!(!t.contains("/a/b/c"));
        assert_eq!(t.list("/a").unwrap(), Vec::<String>::new());
    }
}
