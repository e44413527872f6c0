//! A segment file mapped shared (step 1–3 of the module docs), or mapped over a range
//! of this process it adopts (`adopt.rs`), and private local memory for
//! `malloc_local`. Creating and unlinking the file are the shm transport's
//! helpers (`nf_transport::shm::segment`), shared with its receive segments.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use memmap2::{MmapMut, MmapOptions, MmapRaw};
use nf_transport::shm::segment::{create_file, unlink_name, FileStep};

use crate::error::RmaError;
use crate::shm::adopt::{self, Adopted};
use crate::shm::aligned::Aligned;

/// A shared mapping of a segment file; unmapped when dropped (an adopted range is
/// put back on private memory instead).
pub(crate) struct Mapping {
    map: Backing,
    path: PathBuf,
}

/// Where a [`Mapping`] lives.
enum Backing {
    /// Wherever the kernel put it.
    Placed(MmapRaw),
    /// Over a range of this process that it adopted.
    Adopted(Adopted),
    /// Our own segment, at a multiple of its rounded size (`aligned.rs`).
    Aligned(Aligned),
}

fn shm_err(what: &'static str, path: &Path, source: std::io::Error) -> RmaError {
    RmaError::Shm {
        what,
        path: path.to_owned(),
        source,
    }
}

impl Mapping {
    /// Creates the file (it must not exist), sizes it to `len` (> 0) and maps it at a
    /// multiple of its size rounded up to a power of two (`aligned.rs`).
    pub(crate) fn create(path: &Path, len: usize) -> Result<Mapping, RmaError> {
        let file = create_file(path, len as u64).map_err(|(step, e)| {
            let what = match step {
                FileStep::Create => "create rma segment",
                FileStep::Size => "size rma segment (is the tmpfs full?)",
            };
            shm_err(what, path, e)
        })?;
        let map = Aligned::map(&file, len).map_err(|e| shm_err("map rma segment", path, e))?;
        Ok(Mapping {
            map: Backing::Aligned(map),
            path: path.to_owned(),
        })
    }

    /// Creates the file (it must not exist) holding the `len` bytes at `addr`, and maps
    /// it over them (`adopt.rs`); the file is gone again if that fails.
    ///
    /// # Safety
    /// As [`adopt::adopt`]: `addr .. addr + len` is page-aligned private writable
    /// memory of this process that it never unmaps, and nothing writes it meanwhile.
    pub(crate) unsafe fn adopt(
        path: &Path,
        addr: *mut u8,
        len: usize,
    ) -> Result<Mapping, RmaError> {
        // SAFETY: forwarded from the caller.
        match unsafe { adopt::create_adopted(path, addr, len) } {
            Ok(a) => Ok(Mapping {
                map: Backing::Adopted(a),
                path: path.to_owned(),
            }),
            Err((what, e)) => {
                let _ = unlink_name(path);
                Err(shm_err(what, path, e))
            }
        }
    }

    /// Opens and maps a peer's file, which must be at least `len` bytes.
    pub(crate) fn open(path: &Path, len: usize) -> Result<Mapping, RmaError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| shm_err("open peer rma segment", path, e))?;
        let have = file
            .metadata()
            .map_err(|e| shm_err("stat peer rma segment", path, e))?
            .len();
        if have < len as u64 {
            return Err(shm_err(
                "map peer rma segment",
                path,
                std::io::Error::other(format!("file is {have} B, its owner announced {len} B")),
            ));
        }
        Self::map(&file, path, len)
    }

    fn map(file: &std::fs::File, path: &Path, len: usize) -> Result<Mapping, RmaError> {
        let map = MmapOptions::new()
            .len(len)
            .map_raw(file)
            .map_err(|e| shm_err("map rma segment", path, e))?;
        Ok(Mapping {
            map: Backing::Placed(map),
            path: path.to_owned(),
        })
    }

    /// Zeroed private memory standing in for a segment file in a loom model
    /// (`loom_tests.rs`): nothing to open or unlink.
    #[cfg(all(test, loom))]
    pub(crate) fn model(len: usize) -> Mapping {
        Mapping {
            map: Backing::Placed(MmapRaw::from(
                anonymous(len).expect("a model's control segment maps"),
            )),
            path: PathBuf::new(),
        }
    }

    /// First byte of the mapping (page-aligned).
    pub(crate) fn ptr(&self) -> *mut u8 {
        match &self.map {
            Backing::Placed(m) => m.as_mut_ptr(),
            Backing::Adopted(a) => a.ptr(),
            Backing::Aligned(a) => a.ptr(),
        }
    }

    /// Removes the file's name; the memory stays for everyone who mapped it.
    pub(crate) fn unlink(&self) -> Result<(), RmaError> {
        unlink_name(&self.path).map_err(|e| shm_err("unlink rma segment", &self.path, e))
    }
}

/// Private, zeroed, page-aligned memory (`malloc_local`).
pub(crate) fn anonymous(len: usize) -> Result<MmapMut, RmaError> {
    MmapMut::map_anon(len).map_err(|source| RmaError::Io {
        what: format!("malloc_local: mapping {len} B of anonymous memory"),
        source,
    })
}
