//! Named shared-memory segments: create, open, unlink, and reclaim leftovers.
//!
//! A segment is a file in a tmpfs directory (`/dev/shm` by default) named
//! `nf-<job>-<local rank>`, mapped shared. Each rank unlinks its own segment as soon
//! as every peer has mapped it, so a job killed with SIGKILL after wire-up leaves no
//! name behind; a job killed during wire-up leaves a file whose owner pid is dead,
//! which [`reclaim_stale`] removes at the next start.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use memmap2::{MmapOptions, MmapRaw};

use super::layout::{Geometry, View, CACHE_LINE, MAGIC, VERSION};
use super::sync::Ordering;
use crate::error::TransportError;

/// Prefix of every segment name, so leftovers can be found and reclaimed.
pub const PREFIX: &str = "nf-";

/// A mapped segment; the mapping lives as long as this value.
pub struct Segment {
    map: Backing,
    path: PathBuf,
    view: View,
}

/// What keeps a segment's memory mapped.
enum Backing {
    /// A shared mapping of the segment's file.
    File(MmapRaw),
    /// A loom model's memory, shared by the model's ends (`loom_tests.rs`).
    #[cfg(all(test, loom))]
    Model(std::sync::Arc<super::loom_tests::Memory>),
}

impl Backing {
    fn len(&self) -> usize {
        match self {
            Backing::File(map) => map.len(),
            #[cfg(all(test, loom))]
            Backing::Model(mem) => mem.len(),
        }
    }
}

/// Which step of [`create_file`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileStep {
    /// Creating the file (it exists already, or the directory refuses it).
    Create,
    /// Sizing it (the tmpfs is full, say).
    Size,
}

/// Creates the file of a new shared segment at `path` (it must not exist; mode 0600,
/// only its owner maps it) and sizes it to `len` zero bytes. The shm transport's
/// segments and `nf-rma`'s memory segments are made this way.
pub fn create_file(path: &Path, len: u64) -> Result<File, (FileStep, std::io::Error)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| (FileStep::Create, e))?;
    file.set_len(len).map_err(|e| (FileStep::Size, e))?;
    Ok(file)
}

/// Removes a segment's name; the memory stays mapped for everyone who opened it, and a
/// name already gone is not an error.
pub fn unlink_name(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The path of a job's segment for one local rank.
pub fn segment_path(dir: &Path, job: &str, local_rank: usize) -> PathBuf {
    dir.join(format!("{PREFIX}{job}-{local_rank}"))
}

impl Segment {
    /// Creates and initialises this rank's receive segment; `sleeps`: its owner may
    /// sleep on the doorbell (`layout.rs` rule 11), so senders must ring it.
    pub fn create(
        path: &Path,
        geo: Geometry,
        owner_rank: usize,
        sleeps: bool,
    ) -> Result<Segment, TransportError> {
        geo.validate().map_err(TransportError::Config)?;
        let file = create_file(path, geo.total_len() as u64).map_err(|(step, e)| {
            let what = match step {
                FileStep::Create => "create shm segment",
                FileStep::Size => "size shm segment",
            };
            TransportError::io(what, path, e)
        })?;
        let seg = Segment::map(file, path, geo)?;
        // A fresh file reads as zeros: every counter, flag and slot starts valid.
        seg.view
            .init_header(std::process::id(), owner_rank as u32, sleeps);
        seg.view.header().magic.store(MAGIC, Ordering::Release);
        Ok(seg)
    }

    /// Opens a peer's segment, checking its header against what we expect.
    pub fn open(path: &Path, expect_senders: usize) -> Result<Segment, TransportError> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| TransportError::io("open peer shm segment", path, e))?;
        let raw = read_raw_header(&mut file)
            .map_err(|e| TransportError::io("read shm header", path, e))?;
        let geo = raw.validate(path, expect_senders)?;
        let len = file
            .metadata()
            .map_err(|e| TransportError::io("stat shm segment", path, e))?
            .len();
        if len < geo.total_len() as u64 {
            return Err(TransportError::BadSegment {
                path: path.to_owned(),
                why: format!("file is {len} B, header says {} B", geo.total_len()),
            });
        }
        Segment::map(file, path, geo)
    }

    fn map(file: File, path: &Path, geo: Geometry) -> Result<Segment, TransportError> {
        let map = MmapOptions::new()
            .len(geo.total_len())
            .map_raw(&file)
            .map_err(|e| TransportError::io("map shm segment", path, e))?;
        // SAFETY: the mapping is shared, page-aligned, `total_len` long, and owned by
        // the returned Segment, which every View user keeps alive (Rc in the transport).
        let view = unsafe { View::new(map.as_mut_ptr(), geo) };
        Ok(Segment {
            map: Backing::File(map),
            path: path.to_owned(),
            view,
        })
    }

    /// A segment over a loom model's memory, already initialised (no file).
    #[cfg(all(test, loom))]
    pub(crate) fn model(mem: std::sync::Arc<super::loom_tests::Memory>) -> Segment {
        Segment {
            view: mem.view(),
            map: Backing::Model(mem),
            path: PathBuf::new(),
        }
    }

    /// Typed access to the mapped layout.
    pub fn view(&self) -> &View {
        &self.view
    }

    /// The file name the segment was created or opened under.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the name; the memory stays mapped for everyone who opened it.
    pub fn unlink(&self) -> Result<(), TransportError> {
        unlink_name(&self.path).map_err(|e| TransportError::io("unlink shm segment", &self.path, e))
    }

    /// Length of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the mapping is empty (never, for a valid segment).
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }
}

/// The header as plain integers, read with `read(2)` rather than a mapping.
struct RawHeader {
    magic: u64,
    total_len: u64,
    version: u32,
    nrings: u32,
    frames: u32,
    frame_size: u32,
    nsenders: u32,
    owner_pid: u32,
}

fn read_raw_header(file: &mut File) -> std::io::Result<RawHeader> {
    let mut b = [0u8; CACHE_LINE];
    file.read_exact(&mut b)?;
    let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
    Ok(RawHeader {
        magic: u64_at(0),
        total_len: u64_at(8),
        version: u32_at(16),
        nrings: u32_at(20),
        frames: u32_at(24),
        frame_size: u32_at(28),
        nsenders: u32_at(32),
        owner_pid: u32_at(36),
    })
}

impl RawHeader {
    fn validate(&self, path: &Path, expect_senders: usize) -> Result<Geometry, TransportError> {
        let bad = |why: String| TransportError::BadSegment {
            path: path.to_owned(),
            why,
        };
        if self.magic != MAGIC {
            return Err(bad("not a ninefold segment, or not initialised yet".into()));
        }
        if self.version != VERSION {
            return Err(bad(format!(
                "layout version {} but this build speaks {VERSION}; run one ninefold build per job",
                self.version
            )));
        }
        let geo = Geometry {
            nrings: self.nrings as usize,
            frames: self.frames as usize,
            frame_size: self.frame_size as usize,
            nsenders: self.nsenders as usize,
        };
        geo.validate().map_err(bad)?;
        if geo.nsenders != expect_senders {
            return Err(bad(format!(
                "made for {} local ranks, this job has {expect_senders}",
                geo.nsenders
            )));
        }
        if self.total_len != geo.total_len() as u64 {
            return Err(bad("header length disagrees with its geometry".into()));
        }
        Ok(geo)
    }
}

/// Whether a process with this pid exists (it may belong to someone else).
pub fn pid_alive(pid: u32) -> bool {
    if pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Removes segments in `dir` whose owner process is gone, and half-made ones older
/// than `grace`. Returns the paths removed. Errors on single files are skipped: a
/// leftover we cannot judge is not ours to delete.
pub fn reclaim_stale(dir: &Path, grace: Duration) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        let Ok(mut file) = File::open(&path) else {
            continue;
        };
        let stale = match read_raw_header(&mut file) {
            Ok(h) if h.magic == MAGIC => !pid_alive(h.owner_pid),
            _ => older_than(&file, grace),
        };
        if stale && std::fs::remove_file(&path).is_ok() {
            tracing::info!(path = %path.display(), "reclaimed stale shm segment");
            removed.push(path);
        }
    }
    removed
}

fn older_than(file: &File, grace: Duration) -> bool {
    file.metadata()
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age > grace)
}

/// Removes every segment of `job` in `dir` (the launcher calls this when a job ends).
pub fn remove_job(dir: &Path, job: &str) -> usize {
    let prefix = format!("{PREFIX}{job}-");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}
