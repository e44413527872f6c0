//! The in-memory layer of a [`super::ReadOnlyView`]: files and directories clients
//! created or changed, and whiteouts for host entries they removed.
//!
//! Rules:
//!
//! 1. Entries are keyed by the path relative to the root, names joined by `/`.
//! 2. A `Whiteout` hides the host entry at its path (and everything below it).
//! 3. A memory directory is opaque: nothing of the host shows below it, since it was
//!    created where the host had nothing (or a whiteout).
//! 4. A memory file created by copy-up keeps the host file's qid.path, so a client sees
//!    the same file before and after its first write.
//! 5. All file contents, and every entry (charged [`ENTRY_COST`] plus its key's
//!    length: directories and whiteouts hold no content but still take memory),
//!    together stay within the view's memory budget; growing past it fails with
//!    `ENOSPC`.
//! 6. Attributes change as the kernel changes them: a write or truncation by anyone
//!    but root drops a file's setuid bit (and setgid with group execute), as does a
//!    change of owner or group by anyone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::now;
use nf_ninep::errno::ENOSPC;
use nf_ninep::types::{Attr, Qid, QidType, Timespec};
use nf_ninep_server::lock;
use nf_ninep_server::Ctx;
use nf_ninep_server::FsError;
use nf_ninep_server::FsResult;

/// The setuid bit.
const S_ISUID: u32 = 0o4000;
/// The setgid bit.
pub(crate) const S_ISGID: u32 = 0o2000;

/// `mode` without the bits the kernel drops when a file changes hands, or is written
/// by someone without `CAP_FSETID` (rule 6): setuid, and setgid where it means "run
/// as the group" (with group execute; without it, it marks mandatory locking).
pub(crate) fn without_set_id(mode: u32) -> u32 {
    let sgid = if mode & 0o010 != 0 { S_ISGID } else { 0 };
    mode & !(S_ISUID | sgid)
}

/// The key of a path (rule 1).
pub(crate) fn key(path: &[String]) -> String {
    path.join("/")
}

/// True if `k` lies strictly below `dir_key`.
pub(crate) fn is_below(k: &str, dir_key: &str) -> bool {
    if dir_key.is_empty() {
        return !k.is_empty();
    }
    k.len() > dir_key.len() && k.starts_with(dir_key) && k.as_bytes()[dir_key.len()] == b'/'
}

/// The name of `k` if it is a direct child of `dir_key`.
pub(crate) fn child_name<'k>(k: &'k str, dir_key: &str) -> Option<&'k str> {
    if !is_below(k, dir_key) {
        return None;
    }
    let rest = if dir_key.is_empty() {
        k
    } else {
        &k[dir_key.len() + 1..]
    };
    (!rest.contains('/')).then_some(rest)
}

/// Bytes of file content held, against a limit (rule 5).
pub(crate) struct Budget {
    used: AtomicU64,
    limit: u64,
}

impl Budget {
    pub fn new(limit: u64) -> Arc<Self> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            limit,
        })
    }

    /// Takes `bytes` from the budget, or fails with `ENOSPC`.
    pub fn take(&self, bytes: u64) -> FsResult<()> {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&u| u <= self.limit)
            })
            .map(|_| ())
            .map_err(|_| FsError::Errno(ENOSPC))
    }

    /// Gives `bytes` back.
    pub fn give(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::SeqCst);
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }
}

/// Attributes of a memory file or directory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemMeta {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub atime: Timespec,
    pub mtime: Timespec,
    pub ctime: Timespec,
}

impl MemMeta {
    pub fn new(mode: u32, uid: u32, gid: u32) -> Self {
        let t = now();
        MemMeta {
            mode,
            uid,
            gid,
            atime: t,
            mtime: t,
            ctime: t,
        }
    }

    pub fn from_attr(a: &Attr) -> Self {
        MemMeta {
            mode: a.mode,
            uid: a.uid,
            gid: a.gid,
            atime: a.atime,
            mtime: a.mtime,
            ctime: a.ctime,
        }
    }
}

/// A file whose content lives in memory.
pub(crate) struct MemFile {
    pub qid_path: u64,
    data: RwLock<Vec<u8>>,
    pub meta: Mutex<MemMeta>,
    version: AtomicU32,
    budget: Arc<Budget>,
}

impl MemFile {
    /// A file holding `data`, whose size was already taken from `budget`.
    pub fn new(qid_path: u64, data: Vec<u8>, meta: MemMeta, budget: Arc<Budget>) -> Arc<Self> {
        Arc::new(MemFile {
            qid_path,
            data: RwLock::new(data),
            meta: Mutex::new(meta),
            version: AtomicU32::new(0),
            budget,
        })
    }

    pub fn qid(&self) -> Qid {
        Qid {
            ty: QidType::FILE,
            version: self.version.load(Ordering::Relaxed),
            path: self.qid_path,
        }
    }

    pub fn len(&self) -> u64 {
        self.data
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len() as u64
    }

    pub fn attr(&self) -> Attr {
        let m = *lock(&self.meta);
        let size = self.len();
        Attr {
            mode: m.mode,
            uid: m.uid,
            gid: m.gid,
            nlink: 1,
            size,
            blksize: 4096,
            blocks: size.div_ceil(512),
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
            ..Attr::default()
        }
    }

    pub fn read(&self, offset: u64, count: u32) -> Vec<u8> {
        let data = self
            .data
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(data.len());
        let end = start.saturating_add(count as usize).min(data.len());
        data[start..end].to_vec()
    }

    /// Writes `bytes` at `offset` (at the end when `append`), growing within budget.
    pub fn write(&self, offset: u64, bytes: &[u8], append: bool) -> FsResult<u32> {
        let mut data = self
            .data
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = if append {
            data.len()
        } else {
            usize::try_from(offset).map_err(|_| FsError::Errno(nf_ninep::errno::EFBIG))?
        };
        let end = start
            .checked_add(bytes.len())
            .ok_or(FsError::Errno(nf_ninep::errno::EFBIG))?;
        if end > data.len() {
            self.budget.take((end - data.len()) as u64)?;
            data.resize(end, 0);
        }
        data[start..end].copy_from_slice(bytes);
        drop(data);
        self.touch();
        Ok(bytes.len() as u32)
    }

    /// Sets the length to `size`, within budget.
    pub fn truncate(&self, size: u64) -> FsResult<()> {
        let mut data = self
            .data
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let size = usize::try_from(size).map_err(|_| FsError::Errno(nf_ninep::errno::EFBIG))?;
        if size > data.len() {
            self.budget.take((size - data.len()) as u64)?;
        } else {
            self.budget.give((data.len() - size) as u64);
        }
        data.resize(size, 0);
        drop(data);
        self.touch();
        Ok(())
    }

    /// After a write or truncation by `ctx`'s user: drops the set-id bits unless the
    /// user is root (the kernel's `file_remove_privs`, rule 6).
    pub fn written_by(&self, ctx: &Ctx) {
        if ctx.creds().is_some_and(|c| !c.is_root()) {
            let mut m = lock(&self.meta);
            m.mode = without_set_id(m.mode);
        }
    }

    fn touch(&self) {
        self.version.fetch_add(1, Ordering::Relaxed);
        let t = now();
        let mut m = lock(&self.meta);
        m.mtime = t;
        m.ctime = t;
    }
}

impl Drop for MemFile {
    fn drop(&mut self) {
        let len = self.data.get_mut().map(|d| d.len()).unwrap_or(0);
        self.budget.give(len as u64);
    }
}

/// A directory that exists only in memory (opaque, rule 3).
pub(crate) struct MemDir {
    pub qid_path: u64,
    pub meta: Mutex<MemMeta>,
}

impl MemDir {
    pub fn qid(&self) -> Qid {
        Qid {
            ty: QidType::DIR,
            version: 0,
            path: self.qid_path,
        }
    }

    pub fn attr(&self) -> Attr {
        let m = *lock(&self.meta);
        Attr {
            mode: m.mode,
            uid: m.uid,
            gid: m.gid,
            nlink: 2,
            blksize: 4096,
            atime: m.atime,
            mtime: m.mtime,
            ctime: m.ctime,
            ..Attr::default()
        }
    }
}

/// One overlay entry.
#[derive(Clone)]
pub(crate) enum Entry {
    File(Arc<MemFile>),
    Dir(Arc<MemDir>),
    Whiteout,
}

/// Bytes an entry is charged besides its key (rule 5): the map slot, the entry and
/// its attributes, rounded up.
pub(crate) const ENTRY_COST: u64 = 192;

fn cost(k: &str) -> u64 {
    ENTRY_COST + k.len() as u64
}

/// Path key → entry.
pub(crate) struct Overlay {
    pub entries: HashMap<String, Entry>,
    next_id: u64,
    budget: Arc<Budget>,
}

impl Overlay {
    /// An empty overlay charging its entries to `budget`.
    pub fn new(budget: Arc<Budget>) -> Self {
        Overlay {
            entries: HashMap::new(),
            next_id: 0,
            budget,
        }
    }

    /// Sets `k` to `entry`, charging a new key to the budget (rule 5).
    pub fn insert(&mut self, k: String, entry: Entry) -> FsResult<()> {
        if !self.entries.contains_key(&k) {
            self.budget.take(cost(&k))?;
        }
        self.entries.insert(k, entry);
        Ok(())
    }

    /// A qid.path for a new memory entry: high bit set, so it never meets an inode number.
    pub fn new_qid_path(&mut self) -> u64 {
        self.next_id += 1;
        (1 << 63) | self.next_id
    }

    /// Removes `k` and everything below it, giving their charges back.
    pub fn remove_tree(&mut self, k: &str) {
        let mut freed = 0;
        if self.entries.remove(k).is_some() {
            freed += cost(k);
        }
        self.entries.retain(|other, _| {
            let below = is_below(other, k);
            if below {
                freed += cost(other);
            }
            !below
        });
        self.budget.give(freed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_children() {
        assert!(is_below("a/b", "a") && !is_below("ab", "a") && !is_below("a", "a"));
        assert!(is_below("a", ""));
        assert_eq!(child_name("a/b", "a"), Some("b"));
        assert_eq!(child_name("a/b/c", "a"), None);
        assert_eq!(child_name("x", ""), Some("x"));
    }

    #[test]
    fn budget_limits_growth() {
        let budget = Budget::new(10);
        let f = MemFile::new(
            1,
            Vec::new(),
            MemMeta::new(0o644, 0, 0),
            Arc::clone(&budget),
        );
        assert_eq!(f.write(0, b"hello", false).unwrap(), 5);
        assert_eq!(f.write(0, b"!", true).unwrap(), 1);
        assert_eq!(f.read(0, 100), b"hello!");
        assert_eq!(
            f.write(6, b"12345", false).unwrap_err(),
            FsError::Errno(ENOSPC)
        );
        f.truncate(2).unwrap();
        assert_eq!(budget.used(), 2);
        drop(f);
        assert_eq!(budget.used(), 0);
    }
}
