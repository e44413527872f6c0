//! [`ReadOnlyView`] (#R): a host directory that clients may change, privately.
//!
//! The host directory is never written. What clients write, create, rename or remove
//! lives in an in-memory overlay owned by the view (shared by every connection of the
//! server that serves it) and disappears with it:
//!
//! 1. Reading an unchanged file reads the host file.
//! 2. Opening a host file for writing (or truncating, or changing its attributes)
//!    copies it into memory first ("copy-up"); from then on every client sees the copy.
//! 3. Creating files and directories adds memory entries; removing a host entry adds a
//!    whiteout that hides it.
//! 4. Files can be renamed (they are copied up first); directories cannot (`EXDEV`, so
//!    `mv` falls back to copying). Symlinks, hard links and device nodes cannot be
//!    created (`EROFS`).
//! 5. All memory file contents and overlay entries (each charged its bookkeeping)
//!    together stay below a budget (default 256 MiB); beyond it writes, creates,
//!    mkdirs and removes of host entries fail with `ENOSPC`.
//! 6. Changes take the rights changing the host would: a user (the request's
//!    [`Ctx::creds`]) needs write permission on a file to write or truncate it, on a
//!    directory to add or remove its entries, and must own a file to chmod it; what a
//!    user creates is theirs.
//! 7. The sticky bit holds for every entry, the host's as well as the overlay's: in
//!    a sticky directory (1777, as `/tmp`) only the entry's owner (on the host, or in
//!    memory), the directory's owner or root may remove it, rename it or rename
//!    something over it; removing a host entry is a whiteout, so it takes the same
//!    right. Without this, a user could white out root's file in such a directory
//!    and put their own in its place for every other client to read.
//! 8. chmod and chown follow the kernel: chmod by the owner (or root), which drops
//!    setgid for a user outside the file's group; chown by root, or by the owner to
//!    change only the group, to one of their own; either drops set-id bits (overlay
//!    rule 6), as does a write by anyone but root.
//!
//! Host paths are resolved with the same rules as [`super::PassthroughFs`]: `..` stops at
//! the root and symlinks are never followed.

mod fs;
mod overlay;

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use rustix::fs::{FileType, Mode, OFlags, Stat};

use crate::host::{self, attr, dtype, step, HostRoot, PathRegistry, SharedPath, Versions};
use crate::listing::Listing;
use crate::ExportError;
use nf_ninep::errno::{EFBIG, ENOENT, ENOTDIR};
use nf_ninep::types::{Attr, Dirent, Qid};
use nf_ninep_server::lock;
use nf_ninep_server::Ctx;
use nf_ninep_server::FsError;
use nf_ninep_server::FsResult;

use overlay::{child_name, key, Budget, Entry, MemDir, MemFile, MemMeta, Overlay};

/// Default memory budget for private copies: 256 MiB.
pub const DEFAULT_MEMORY_LIMIT: u64 = 256 << 20;

/// A host directory served read-only, with private in-memory writes (#R).
pub struct ReadOnlyView {
    export: PathBuf,
    root: HostRoot,
    versions: Versions,
    paths: PathRegistry,
    overlay: Mutex<Overlay>,
    budget: Arc<Budget>,
}

/// A [`ReadOnlyView`] fid: a path below the root, and what it has open.
pub struct RoFid {
    path: SharedPath,
    open: OnceLock<RoOpen>,
}

enum RoOpen {
    /// A host file open for reading, charged to its connection (`host.rs` rule 6).
    Host(host::Kept<File>),
    Mem {
        file: Arc<MemFile>,
        append: bool,
    },
    Dir(Listing),
}

/// What a path names in the merged view.
enum Found {
    Host(Stat),
    File(Arc<MemFile>),
    Dir(Arc<MemDir>),
}

impl Found {
    fn is_dir(&self) -> bool {
        match self {
            Found::Host(st) => FileType::from_raw_mode(st.st_mode) == FileType::Directory,
            Found::File(_) => false,
            Found::Dir(_) => true,
        }
    }
}

impl RoFid {
    fn path(&self) -> Vec<String> {
        lock(&self.path).clone()
    }
}

impl ReadOnlyView {
    /// Serves the directory `dir` read-only, with the default memory budget.
    pub fn new(dir: impl AsRef<Path>) -> Result<Self, ExportError> {
        let (export, root) = HostRoot::export(dir.as_ref())?;
        let budget = Budget::new(DEFAULT_MEMORY_LIMIT);
        Ok(ReadOnlyView {
            export,
            root,
            versions: Versions::default(),
            paths: PathRegistry::default(),
            overlay: Mutex::new(Overlay::new(Arc::clone(&budget))),
            budget,
        })
    }

    /// This view with a memory budget of `bytes` for private copies.
    pub fn with_memory_limit(mut self, bytes: u64) -> Self {
        self.budget = Budget::new(bytes);
        self.overlay = Mutex::new(Overlay::new(Arc::clone(&self.budget)));
        self
    }

    /// The directory served.
    pub fn export(&self) -> &Path {
        &self.export
    }

    /// Bytes of private copies held now.
    pub fn memory_used(&self) -> u64 {
        self.budget.used()
    }

    fn fid(&self, path: Vec<String>) -> RoFid {
        RoFid {
            path: self.paths.track(path),
            open: OnceLock::new(),
        }
    }

    fn overlay(&self) -> MutexGuard<'_, Overlay> {
        lock(&self.overlay)
    }

    /// What `path` names, the overlay being locked by the caller.
    fn find_in(&self, ov: &Overlay, path: &[String]) -> FsResult<Found> {
        let mut host_visible = true;
        for i in 1..=path.len() {
            match ov.entries.get(&key(&path[..i])) {
                Some(Entry::Whiteout) => return Err(FsError::Errno(ENOENT)),
                Some(Entry::File(f)) if i == path.len() => return Ok(Found::File(Arc::clone(f))),
                Some(Entry::File(_)) => return Err(FsError::Errno(ENOTDIR)),
                Some(Entry::Dir(d)) if i == path.len() => return Ok(Found::Dir(Arc::clone(d))),
                Some(Entry::Dir(_)) => host_visible = false,
                None => {}
            }
        }
        if !host_visible {
            return Err(FsError::Errno(ENOENT));
        }
        self.root.lstat(path).map(Found::Host)
    }

    fn find(&self, path: &[String]) -> FsResult<Found> {
        let ov = self.overlay();
        self.find_in(&ov, path)
    }

    fn qid(&self, found: &Found) -> Qid {
        match found {
            Found::Host(st) => self.root.qid(st, &self.versions),
            Found::File(f) => f.qid(),
            Found::Dir(d) => d.qid(),
        }
    }

    fn attr(found: &Found) -> Attr {
        match found {
            Found::Host(st) => attr(st),
            Found::File(f) => f.attr(),
            Found::Dir(d) => d.attr(),
        }
    }

    /// Fails unless `path` is a directory in the merged view.
    fn need_dir(&self, path: &[String]) -> FsResult<()> {
        if self.find(path)?.is_dir() {
            Ok(())
        } else {
            Err(FsError::Errno(ENOTDIR))
        }
    }

    /// The memory copy of the file at `path`, copying the host file up if needed
    /// (empty when `truncate`); opening the host file waits as `ctx` allows.
    fn copy_up(&self, path: &[String], truncate: bool, ctx: &Ctx) -> FsResult<Arc<MemFile>> {
        let st = match self.find(path)? {
            Found::File(f) => return Ok(f),
            Found::Dir(_) => return Err(FsError::Errno(nf_ninep::errno::EISDIR)),
            Found::Host(st) => st,
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(FsError::Errno(nf_ninep::errno::EOPNOTSUPP));
        }
        let data = if truncate {
            Vec::new()
        } else {
            let size = u64::try_from(st.st_size).unwrap_or(0);
            self.budget.take(size)?;
            match self.read_host(path, size, ctx) {
                Ok(d) => {
                    self.budget.give(size);
                    self.budget.take(d.len() as u64)?;
                    d
                }
                Err(e) => {
                    self.budget.give(size);
                    return Err(e);
                }
            }
        };
        let meta = MemMeta::from_attr(&attr(&st));
        let qid_path = self.root.qid(&st, &self.versions).path;
        let mut ov = self.overlay();
        // Another request may have copied it meanwhile: keep the first copy.
        if let Some(Entry::File(f)) = ov.entries.get(&key(path)) {
            return Ok(Arc::clone(f));
        }
        let file = MemFile::new(qid_path, data, meta, Arc::clone(&self.budget));
        ov.insert(key(path), Entry::File(Arc::clone(&file)))?;
        Ok(file)
    }

    fn read_host(&self, path: &[String], size: u64, ctx: &Ctx) -> FsResult<Vec<u8>> {
        let (file, _) = self
            .root
            .open_file(path, OFlags::RDONLY, Mode::empty(), ctx)?;
        let mut data = vec![0u8; usize::try_from(size).map_err(|_| FsError::Errno(EFBIG))?];
        let mut filled = 0;
        while filled < data.len() {
            match file.read_at(&mut data[filled..], filled as u64)? {
                0 => break,
                n => filled += n,
            }
        }
        data.truncate(filled);
        Ok(data)
    }

    /// Entries of directory `path` in the merged view.
    fn entries(&self, path: &[String]) -> FsResult<Vec<Dirent>> {
        let here = self.find(path)?;
        let mut up_path = path.to_vec();
        step(&mut up_path, "..");
        let up = self.find(&up_path)?;
        let mut map: BTreeMap<String, Dirent> = BTreeMap::new();
        if matches!(here, Found::Host(_)) {
            for e in self.root.list(path)? {
                if e.name == "." || e.name == ".." {
                    continue;
                }
                let qid = Qid {
                    ty: host::qid_type(e.ftype),
                    version: 0,
                    path: e.ino,
                };
                let entry = Dirent {
                    qid,
                    offset: 0,
                    dtype: dtype(e.ftype),
                    name: e.name.clone(),
                };
                map.insert(e.name, entry);
            }
        }
        let dir_key = key(path);
        for (k, entry) in self.overlay().entries.iter() {
            let Some(name) = child_name(k, &dir_key) else {
                continue;
            };
            let (qid, dtype) = match entry {
                Entry::Whiteout => {
                    map.remove(name);
                    continue;
                }
                Entry::File(f) => (f.qid(), Dirent::DT_REG),
                Entry::Dir(d) => (d.qid(), Dirent::DT_DIR),
            };
            let dirent = Dirent {
                qid,
                offset: 0,
                dtype,
                name: name.to_string(),
            };
            map.insert(name.to_string(), dirent);
        }
        let dot = |name: &str, found: &Found| Dirent {
            qid: self.qid(found),
            offset: 0,
            dtype: Dirent::DT_DIR,
            name: name.to_string(),
        };
        let mut out = vec![dot(".", &here), dot("..", &up)];
        out.extend(map.into_values());
        Ok(out)
    }

    /// Removes `path` from the merged view (`want_dir`: as rmdir, unlink, or either).
    fn unlink(&self, path: &[String], want_dir: Option<bool>) -> FsResult<()> {
        if path.is_empty() {
            return Err(FsError::Errno(nf_ninep::errno::EBUSY));
        }
        let found = self.find(path)?;
        match (found.is_dir(), want_dir) {
            (true, Some(false)) => return Err(FsError::Errno(nf_ninep::errno::EISDIR)),
            (false, Some(true)) => return Err(FsError::Errno(ENOTDIR)),
            _ => {}
        }
        if found.is_dir() && self.entries(path)?.len() > 2 {
            return Err(FsError::Errno(nf_ninep::errno::ENOTEMPTY));
        }
        self.hide(path)
    }

    /// Drops the overlay entries at and below `path`, and whites out a host entry left.
    fn hide(&self, path: &[String]) -> FsResult<()> {
        let mut ov = self.overlay();
        let k = key(path);
        ov.remove_tree(&k);
        if matches!(self.find_in(&ov, path), Ok(Found::Host(_))) {
            ov.insert(k, Entry::Whiteout)?;
        }
        Ok(())
    }

    /// Renames a file (copying it up); directories get `EXDEV`.
    fn move_file(&self, from: Vec<String>, to: Vec<String>, ctx: &Ctx) -> FsResult<()> {
        if from.is_empty() || to.is_empty() {
            return Err(FsError::Errno(nf_ninep::errno::EBUSY));
        }
        if self.find(&from)?.is_dir() {
            return Err(FsError::Errno(nf_ninep::errno::EXDEV));
        }
        let parent = &to[..to.len() - 1];
        self.need_dir(parent)?;
        if let Ok(existing) = self.find(&to) {
            if existing.is_dir() {
                return Err(FsError::Errno(nf_ninep::errno::EISDIR));
            }
        }
        let file = self.copy_up(&from, false, ctx)?;
        self.hide(&from)?;
        let mut ov = self.overlay();
        ov.remove_tree(&key(&to));
        ov.insert(key(&to), Entry::File(file))?;
        drop(ov);
        self.paths.renamed(&from, &to);
        Ok(())
    }
}

impl std::fmt::Debug for ReadOnlyView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadOnlyView")
            .field("export", &self.export)
            .field("memory_used", &self.budget.used())
            .finish()
    }
}
