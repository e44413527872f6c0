//! Host directories beneath an export root, shared by [`super::PassthroughFs`] (#U)
//! and [`super::ReadOnlyView`] (#R): resolution that never leaves the root, and stat
//! results turned into qids and attributes.
//!
//! Rules that keep every access inside the export:
//!
//! 1. A fid's path is a list of names relative to the root, kept lexically: `..` drops
//!    the last name (never going above the root) and `.` is ignored.
//! 2. Every access opens the path from the root's descriptor one name at a time with
//!    `O_PATH | O_NOFOLLOW | O_DIRECTORY`: no symlink is ever followed and `..` never
//!    reaches the kernel. A directory swapped for a symlink on the host fails with
//!    `ELOOP`/`ENOTDIR` instead of leading out.
//! 3. The last name is used with `*at` calls that do not follow symlinks
//!    (`AT_SYMLINK_NOFOLLOW`, `O_NOFOLLOW`). A symlink can be read and removed, never
//!    traversed: clients resolve links themselves, as Linux's v9fs does. `chmod`, which
//!    has no no-follow form, goes through the `O_PATH` descriptor's `/proc/self/fd` link.
//! 4. Only regular files and directories are opened; fifos, sockets and devices are
//!    refused (`EOPNOTSUPP`), so no read can block in the kernel out of cancellation's
//!    reach.
//! 5. Opening never blocks out of cancellation's reach either: files are opened with
//!    `O_NONBLOCK`, so an open that would wait for a lease break (another process holds
//!    a lease on the file) fails with `EWOULDBLOCK` at once; it is retried every
//!    [`LEASE_RETRY`] until it succeeds or the request is cancelled (`EINTR`). A Tflush
//!    of such an open is therefore answered at once, not after `lease-break-time`.
//!    On the connection's reader thread (`Ctx::may_block` false) it is not retried
//!    but answered [`FsError::WouldBlock`], so the server moves the request to a
//!    worker: this is the only wait in the host trees, which is why they run inline.
//!    The flag is cleared once the file is open, and a file that turns out not to be
//!    regular (swapped after a check) is closed again (rule 4).
//! 6. Every descriptor a tree keeps for a fid — an open file, a directory being
//!    listed — is charged to the connection's descriptor budgets before it is opened
//!    ([`Ctx::charge_fd`]) and travels with its charge ([`Kept`]): past a budget the
//!    open fails `EMFILE` and nothing is opened, so one user's open files never use up
//!    the server's descriptors. `O_PATH` descriptors held only while a request runs
//!    (walking a path) are not charged.

use std::collections::HashMap;
use std::fs::File;
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

use nf_ninep::errno::{EINVAL, EIO, EOPNOTSUPP};
use nf_ninep::message::Rstatfs;
use nf_ninep::types::{Attr, Dirent, GetattrMask, Qid, QidType, Timespec};
use nf_ninep_server::lock;
use nf_ninep_server::{Charge, Ctx, FsError, FsResult};

use crate::ExportError;

/// How often an open waiting for a lease break is retried (rule 5).
pub(crate) const LEASE_RETRY: Duration = Duration::from_millis(20);

/// A rustix error as a tree's errno.
pub(crate) fn os(e: rustix::io::Errno) -> FsError {
    FsError::Errno(u32::try_from(e.raw_os_error()).unwrap_or(EIO))
}

/// Applies one walk name to a lexical path (rule 1).
pub(crate) fn step(path: &mut Vec<String>, name: &str) {
    match name {
        "." => {}
        ".." => {
            path.pop();
        }
        _ => path.push(name.to_string()),
    }
}

/// `path` with `name` appended.
pub(crate) fn child(path: &[String], name: &str) -> Vec<String> {
    let mut p = path.to_vec();
    p.push(name.to_string());
    p
}

/// A descriptor kept for a fid, with its charge to the connection's descriptor
/// budgets (rule 6): both go when it is dropped.
pub(crate) struct Kept<T> {
    fd: T,
    _charge: Charge,
}

impl<T> Deref for Kept<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.fd
    }
}

impl<T: AsFd> AsFd for Kept<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An export root: a directory descriptor everything is resolved from.
pub(crate) struct HostRoot {
    fd: OwnedFd,
    dev: u64,
}

impl HostRoot {
    /// Opens the directory `dir` that a tree exports; returns its path with the root,
    /// or an error naming the directory.
    pub fn export(dir: &Path) -> Result<(PathBuf, Self), ExportError> {
        let export = dir.to_path_buf();
        match HostRoot::open(&export) {
            Ok(root) => Ok((export, root)),
            Err(source) => Err(ExportError {
                path: export,
                source,
            }),
        }
    }

    /// Opens the directory at `path` as an export root.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let fd = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let dev = rustix::fs::fstat(&fd)?.st_dev;
        #[allow(clippy::unnecessary_cast)] // st_dev's type differs between architectures
        Ok(HostRoot {
            fd,
            dev: dev as u64,
        })
    }

    /// Opens the directory `names` (rule 2) as an `O_PATH` descriptor.
    pub fn dir(&self, names: &[String]) -> FsResult<OwnedFd> {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut fd = rustix::fs::openat(&self.fd, ".", flags, Mode::empty()).map_err(os)?;
        for name in names {
            fd = rustix::fs::openat(&fd, name.as_str(), flags, Mode::empty()).map_err(os)?;
        }
        Ok(fd)
    }

    /// The parent directory of `path` and the last name (`.` for the root itself).
    pub fn locate<'p>(&self, path: &'p [String]) -> FsResult<(OwnedFd, &'p str)> {
        match path.split_last() {
            None => Ok((self.dir(&[])?, ".")),
            Some((last, parent)) => Ok((self.dir(parent)?, last.as_str())),
        }
    }

    /// lstat(2) of `path`.
    pub fn lstat(&self, path: &[String]) -> FsResult<Stat> {
        let (dir, name) = self.locate(path)?;
        rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).map_err(os)
    }

    /// Opens the regular file `path` (never following a final symlink) with `flags` and
    /// `mode`, charged to `ctx`'s connection (rule 6), and returns it with its stat.
    /// Waits for a lease break only where the request may block, and only until it is
    /// cancelled (rule 5).
    pub fn open_file(
        &self,
        path: &[String],
        flags: OFlags,
        mode: Mode,
        ctx: &Ctx,
    ) -> FsResult<(Kept<File>, Stat)> {
        let charge = ctx.charge_fd()?;
        let (dir, name) = self.locate(path)?;
        let flags = flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = loop {
            match rustix::fs::openat(&dir, name, flags, mode) {
                Ok(fd) => break fd,
                Err(rustix::io::Errno::WOULDBLOCK) if !ctx.may_block() => {
                    return Err(FsError::WouldBlock)
                }
                Err(rustix::io::Errno::WOULDBLOCK) => ctx.cancel().sleep(LEASE_RETRY)?,
                Err(e) => return Err(os(e)),
            }
        };
        let st = rustix::fs::fstat(&fd).map_err(os)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(FsError::Errno(EOPNOTSUPP));
        }
        // F_SETFL changes only the status flags (append, nonblock, …) and ignores the rest.
        rustix::fs::fcntl_setfl(&fd, flags.difference(OFlags::NONBLOCK)).map_err(os)?;
        let file = Kept {
            fd: File::from(fd),
            _charge: charge,
        };
        Ok((file, st))
    }

    /// An `O_PATH` descriptor of `path` itself (a symlink is not followed).
    pub fn path_fd(&self, path: &[String]) -> FsResult<OwnedFd> {
        let (dir, name) = self.locate(path)?;
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(&dir, name, flags, Mode::empty()).map_err(os)
    }

    /// chmod(2) of `path` without following a final symlink (rule 3).
    pub fn chmod(&self, path: &[String], mode: u32) -> FsResult<()> {
        let fd = self.path_fd(path)?;
        let st = rustix::fs::fstat(&fd).map_err(os)?;
        if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
            return Err(FsError::Errno(EOPNOTSUPP));
        }
        let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
        rustix::fs::chmod(link.as_str(), Mode::from_raw_mode(mode & 0o7777)).map_err(os)
    }

    /// Opens the directory `path` for reading its entries (never following a final
    /// symlink), to keep for a fid: charged to `ctx`'s connection (rule 6).
    pub fn open_dir(&self, path: &[String], ctx: &Ctx) -> FsResult<Kept<OwnedFd>> {
        let charge = ctx.charge_fd()?;
        Ok(Kept {
            fd: self.read_dir(path)?,
            _charge: charge,
        })
    }

    /// Opens the directory `path` for reading its entries now (never following a
    /// final symlink).
    fn read_dir(&self, path: &[String]) -> FsResult<OwnedFd> {
        let (dir, name) = self.locate(path)?;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        rustix::fs::openat(&dir, name, flags, Mode::empty()).map_err(os)
    }

    /// Directory entries of `path` in one go (names that are not UTF-8 are skipped).
    /// For small listings only: a large directory is read page by page
    /// ([`crate::hostdir::HostDir`]).
    pub fn list(&self, path: &[String]) -> FsResult<Vec<HostEntry>> {
        let fd = self.read_dir(path)?;
        let mut entries = Vec::new();
        for entry in rustix::fs::Dir::new(fd).map_err(os)? {
            let entry = entry.map_err(os)?;
            let Ok(name) = entry.file_name().to_str() else {
                tracing::debug!("skipping a directory entry whose name is not UTF-8");
                continue;
            };
            entries.push(HostEntry {
                name: name.to_string(),
                ino: entry.ino(),
                ftype: entry.file_type(),
            });
        }
        Ok(entries)
    }

    /// statfs(2) of the export's file system, as 9P reports it.
    #[allow(clippy::unnecessary_cast)] // statfs field types differ between architectures
    pub fn statfs(&self) -> FsResult<Rstatfs> {
        let s = rustix::fs::fstatfs(&self.fd).map_err(os)?;
        Ok(Rstatfs {
            fs_type: s.f_type as u32,
            bsize: s.f_bsize as u32,
            blocks: s.f_blocks as u64,
            bfree: s.f_bfree as u64,
            bavail: s.f_bavail as u64,
            files: s.f_files as u64,
            ffree: s.f_ffree as u64,
            fsid: 0,
            namelen: s.f_namelen as u32,
        })
    }

    /// The qid.path of inode `ino` on device `dev`: the inode number, mixed with the
    /// device when it is not the root's (an export crossing mount points).
    pub fn qid_path(&self, dev: u64, ino: u64) -> u64 {
        if dev == self.dev {
            ino
        } else {
            ino ^ dev.rotate_left(40)
        }
    }

    /// The qid of a stat result; `versions` adds the writes seen through the server.
    #[allow(clippy::unnecessary_cast)] // stat field types differ between architectures
    pub fn qid(&self, st: &Stat, versions: &Versions) -> Qid {
        let path = self.qid_path(st.st_dev as u64, st.st_ino as u64);
        let mtime = (st.st_mtime as u64 as u32) ^ (st.st_mtime_nsec as u32);
        Qid {
            ty: qid_type(FileType::from_raw_mode(st.st_mode)),
            version: mtime.wrapping_add(versions.get(path)),
            path,
        }
    }
}

/// One entry of a host directory listing.
pub(crate) struct HostEntry {
    pub name: String,
    pub ino: u64,
    pub ftype: FileType,
}

/// The qid type of a file type.
pub(crate) fn qid_type(ft: FileType) -> QidType {
    match ft {
        FileType::Directory => QidType::DIR,
        FileType::Symlink => QidType::SYMLINK,
        _ => QidType::FILE,
    }
}

/// The `d_type` of a file type.
pub(crate) fn dtype(ft: FileType) -> u8 {
    match ft {
        FileType::Directory => Dirent::DT_DIR,
        FileType::RegularFile => Dirent::DT_REG,
        FileType::Symlink => Dirent::DT_LNK,
        FileType::Fifo => Dirent::DT_FIFO,
        FileType::Socket => Dirent::DT_SOCK,
        FileType::CharacterDevice => Dirent::DT_CHR,
        FileType::BlockDevice => Dirent::DT_BLK,
        _ => Dirent::DT_UNKNOWN,
    }
}

/// The `Rgetattr` attributes of a stat result.
#[allow(clippy::unnecessary_cast)] // stat field types differ between architectures
pub(crate) fn attr(st: &Stat) -> Attr {
    let ts = |sec: i64, nsec: u64| Timespec {
        sec: sec.max(0) as u64,
        nsec,
    };
    Attr {
        mode: st.st_mode as u32,
        uid: st.st_uid as u32,
        gid: st.st_gid as u32,
        nlink: st.st_nlink as u64,
        rdev: st.st_rdev as u64,
        size: st.st_size.max(0) as u64,
        blksize: st.st_blksize as u64,
        blocks: st.st_blocks as u64,
        atime: ts(st.st_atime as i64, st.st_atime_nsec as u64),
        mtime: ts(st.st_mtime as i64, st.st_mtime_nsec as u64),
        ctime: ts(st.st_ctime as i64, st.st_ctime_nsec as u64),
        ..Attr::default()
    }
}

/// Attributes a host stat fills in.
pub(crate) const HOST_VALID: GetattrMask = GetattrMask::BASIC;

/// open(2) flags for a 9P `Tlopen`/`Tlcreate` (access mode, truncate, append, sync).
pub(crate) fn open_flags(flags: nf_ninep::types::LOpenFlags) -> FsResult<OFlags> {
    use nf_ninep::types::LOpenFlags as L;
    let mut out = match flags.access_mode() {
        m if m == L::RDONLY.0 => OFlags::RDONLY,
        m if m == L::WRONLY.0 => OFlags::WRONLY,
        m if m == L::RDWR.0 => OFlags::RDWR,
        _ => return Err(FsError::Errno(EINVAL)),
    };
    for (nine, host) in [
        (L::TRUNC, OFlags::TRUNC),
        (L::APPEND, OFlags::APPEND),
        (L::DSYNC, OFlags::DSYNC),
        (L::SYNC, OFlags::SYNC),
        (L::EXCL, OFlags::EXCL),
    ] {
        if flags.contains(nine) {
            out |= host;
        }
    }
    Ok(out)
}

/// Writes seen through the server, per qid.path: added to the mtime-derived
/// qid.version so that every write changes the version even within one clock tick.
#[derive(Default)]
pub(crate) struct Versions {
    bumps: Mutex<HashMap<u64, u32>>,
}

impl Versions {
    pub fn get(&self, path: u64) -> u32 {
        lock(&self.bumps).get(&path).copied().unwrap_or(0)
    }

    pub fn bump(&self, path: u64) {
        let mut bumps = lock(&self.bumps);
        let v = bumps.entry(path).or_insert(0);
        *v = v.wrapping_add(1);
    }
}

/// A fid's path, shared with the registry so renames can move it.
pub(crate) type SharedPath = Arc<Mutex<Vec<String>>>;

/// Every live fid path of a tree, so that a rename moves the paths of fids below it
/// (as QEMU's virtfs does): a fid keeps naming its file after the file moved.
#[derive(Default)]
pub(crate) struct PathRegistry {
    live: Mutex<Vec<Weak<Mutex<Vec<String>>>>>,
}

impl PathRegistry {
    /// Registers `path` and returns its shared cell.
    pub fn track(&self, path: Vec<String>) -> SharedPath {
        let cell = Arc::new(Mutex::new(path));
        let mut live = lock(&self.live);
        if live.len() >= 64 && live.len().is_power_of_two() {
            live.retain(|w| w.strong_count() > 0);
        }
        live.push(Arc::downgrade(&cell));
        cell
    }

    /// Moves every live path at or below `from` to the same place below `to`.
    pub fn renamed(&self, from: &[String], to: &[String]) {
        let mut live = lock(&self.live);
        live.retain(|w| w.strong_count() > 0);
        for cell in live.iter().filter_map(Weak::upgrade) {
            let mut path = lock(&cell);
            if path.starts_with(from) {
                let rest = path.split_off(from.len());
                *path = to.iter().cloned().chain(rest).collect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn lexical_steps_stay_at_root() {
        let mut path = Vec::new();
        for name in ["..", "a", ".", "b", "..", "..", "..", "c"] {
            step(&mut path, name);
        }
        assert_eq!(path, p(&["c"]));
    }

    #[test]
    fn renames_move_paths_below() {
        let reg = PathRegistry::default();
        let a = reg.track(p(&["a", "x"]));
        let b = reg.track(p(&["ab"]));
        reg.renamed(&p(&["a"]), &p(&["z", "a2"]));
        assert_eq!(*lock(&a), p(&["z", "a2", "x"]));
        assert_eq!(*lock(&b), p(&["ab"]));
    }
}
