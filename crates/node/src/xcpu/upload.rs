//! `/xcpu/N/fs/`: the session's upload directory, a real directory on the node where
//! the job runs.
//!
//! Files created here through 9P are created on the host by the serving thread acting
//! as the attached user (the mount table has taken on the user's identity), so the
//! kernel owns them to that user and checks that user's rights. Rules:
//!
//! 1. Only plain files, one level: creating one makes it on the host (`O_NOFOLLOW`,
//!    with the mode asked for); `mkdir` answers `EOPNOTSUPP`.
//! 2. Bytes written count against the session's upload limit
//!    ([`super::XcpuConfig::upload_limit`]); a write past it fails with `EFBIG`
//!    having written nothing.
//! 3. Removing a file removes it on the host.
//! 4. With tree spawn ([`super::fanout`]) creates, writes and removals are handed on
//!    to the session's children as they happen.
//! 5. What the job itself writes into its directory is on the host but not listed
//!    here (the listing shows what was uploaded).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt, PermissionsExt};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use nf_ninep::errno::{EFBIG, EINVAL, EIO, EOPNOTSUPP};
use nf_ninep::LOpenFlags;
use nf_ninep_server::{Ctx, FsError, FsResult};
use nf_ninep_trees::synthetic::{DirOps, FileNode, OpenFile};

use super::fanout::Op;
use super::session::{Hold, SessionRef};

fn io_err(e: std::io::Error) -> FsError {
    FsError::Errno(e.raw_os_error().map_or(EIO, |n| n as u32))
}

/// The directory's rules (see the module docs).
pub struct UploadDir {
    /// The session.
    pub session: SessionRef,
    /// Most bytes the session may upload.
    pub limit: u64,
}

impl UploadDir {
    fn host_path(&self, name: &str) -> FsResult<PathBuf> {
        if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
            return Err(FsError::Errno(EINVAL));
        }
        Ok(self.session.dir.join(name))
    }
}

impl DirOps for UploadDir {
    fn mode(&self) -> u32 {
        0o700
    }

    fn owner(&self) -> Option<(u32, u32)> {
        Some(self.session.owner())
    }

    fn create(&self, _: &Ctx, name: &str, mode: u32) -> FsResult<Arc<dyn FileNode>> {
        let path = self.host_path(name)?;
        // Not O_EXCL: the tree may call this twice for one create (moving to a
        // worker); it has already refused names that exist.
        OpenOptions::new()
            .write(true)
            .create(true)
            .mode(mode & 0o777)
            .custom_flags(libc_nofollow())
            .open(&path)
            .map_err(io_err)?;
        let forwarded = name.to_string();
        self.session.forward(|| Op::Create {
            name: forwarded.clone(),
            mode: mode & 0o777,
        });
        Ok(Arc::new(HostFile {
            name: name.to_string(),
            path,
            session: self.session.clone(),
            limit: self.limit,
        }))
    }

    fn mkdir(&self, _: &Ctx, _: &str, _: u32) -> FsResult<()> {
        tracing::warn!(
            session = self.session.id,
            "xcpu: fs/ holds plain files only; mkdir refused (EOPNOTSUPP)"
        );
        Err(FsError::Errno(EOPNOTSUPP))
    }

    fn remove(&self, _: &Ctx, name: &str) -> FsResult<()> {
        std::fs::remove_file(self.host_path(name)?).map_err(io_err)?;
        self.session.forward(|| Op::Remove(name.to_string()));
        Ok(())
    }
}

/// `O_NOFOLLOW`: a name the job turned into a symlink is not followed.
fn libc_nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

/// One uploaded file.
pub struct HostFile {
    name: String,
    path: PathBuf,
    session: SessionRef,
    limit: u64,
}

impl FileNode for HostFile {
    fn mode(&self) -> u32 {
        std::fs::symlink_metadata(&self.path).map_or(0o600, |m| m.permissions().mode() & 0o7777)
    }

    fn owner(&self) -> Option<(u32, u32)> {
        Some(self.session.owner())
    }

    fn size(&self) -> u64 {
        std::fs::symlink_metadata(&self.path).map_or(0, |m| m.len())
    }

    fn positional(&self) -> bool {
        true
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        let mode = flags.access_mode();
        let file = OpenOptions::new()
            .read(mode == LOpenFlags::RDONLY.0 || mode == LOpenFlags::RDWR.0)
            .write(mode == LOpenFlags::WRONLY.0 || mode == LOpenFlags::RDWR.0)
            .truncate(flags.contains(LOpenFlags::TRUNC))
            .custom_flags(libc_nofollow())
            .open(&self.path)
            .map_err(io_err)?;
        Ok(Box::new(OpenHost {
            name: self.name.clone(),
            file,
            session: self.session.clone(),
            limit: self.limit,
            _hold: self.session.hold()?,
        }))
    }
}

struct OpenHost {
    name: String,
    file: File,
    session: SessionRef,
    limit: u64,
    _hold: Hold,
}

impl OpenFile for OpenHost {
    fn read(&self, _: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        let mut buf = vec![0u8; count as usize];
        let n = self.file.read_at(&mut buf, offset).map_err(io_err)?;
        buf.truncate(n);
        Ok(buf)
    }

    fn write(&self, _: &Ctx, offset: u64, data: &[u8]) -> FsResult<u32> {
        let n = data.len() as u64;
        let before = self
            .session
            .uploaded
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                (u + n <= self.limit).then_some(u + n)
            });
        if before.is_err() {
            tracing::warn!(
                session = self.session.id,
                user = %self.session.user,
                limit = self.limit,
                "xcpu: upload refused: the session's upload limit is reached (EFBIG); raise it with nf serve --xcpu-upload-limit"
            );
            return Err(FsError::Errno(EFBIG));
        }
        match self.file.write_all_at(data, offset) {
            Ok(()) => {
                self.session.forward(|| Op::Write {
                    name: self.name.clone(),
                    offset,
                    data: data.to_vec(),
                });
                Ok(data.len() as u32)
            }
            Err(e) => {
                self.session.uploaded.fetch_sub(n, Ordering::SeqCst);
                Err(io_err(e))
            }
        }
    }
}
