//! Room on this host for the segments of a collective allocation, measured before
//! any is created, so an allocation the host cannot hold is an error at once rather
//! than the OOM killer later (when the memory is first touched, it takes every rank
//! and often the node's other jobs with it).
//!
//! A segment is a file in `NF_SHM_DIR`, normally a tmpfs: its pages are memory that
//! nothing can reclaim while it lives. What the host's procs will place there must
//! fit in each of these (the tightest one is reported):
//!
//! | limit | measured as |
//! |---|---|
//! | the directory's file system | `statvfs`: blocks free to unprivileged users × fragment size |
//! | the host's memory (tmpfs and ramfs only) | `MemAvailable` of `/proc/meminfo` |
//! | the memory cgroup (tmpfs and ramfs only) | the least `limit − usage` along the process's cgroup and its ancestors: v2 `memory.max` − `memory.current`, v1 `memory.limit_in_bytes` − `memory.usage_in_bytes` |
//!
//! A limit that cannot be read (no `/proc`, no cgroup file system) is left out, not
//! guessed. On a disk file system only its free space counts: its pages can be
//! written back.
//!
//! Measuring costs about 0.1 ms (reading `/proc/meminfo` and a cgroup file per
//! ancestor), most of a fresh allocation, so a [`Gauge`] measures only when its last
//! measurement cannot vouch for the allocation:
//! 1. A measurement vouches for half of the room it found, for [`VOUCH_FOR`]; each
//!    allocation it vouches for takes its bytes off what is left of that half (frees
//!    give nothing back until the next measurement).
//! 2. An allocation larger than what is left, or after [`VOUCH_FOR`], is measured
//!    again; so is one after a measurement that found the host short.
//!
//! Rule 1 lets other processes take at most half of the room found before an
//! allocation the check passed can exhaust the host — within a second; what others
//! take between a check and the first touch of the pages was never this check's to
//! catch.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `statfs` magic of tmpfs.
const TMPFS_MAGIC: i64 = 0x0102_1994;
/// `statfs` magic of ramfs.
const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// The tightest limit on bytes placed in segment files (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Room {
    /// Bytes that fit.
    pub bytes: u64,
    /// What limits it.
    pub limit: Limit,
}

/// What limits the room for segments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    /// Free space in the segment directory's file system.
    ShmDir(PathBuf),
    /// The host's available memory (`MemAvailable`).
    Memory,
    /// The memory cgroup at this path (under `/sys/fs/cgroup`).
    Cgroup(PathBuf),
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::ShmDir(dir) => write!(f, "free in {} (NF_SHM_DIR)", dir.display()),
            Limit::Memory => write!(f, "available in the host's memory (MemAvailable)"),
            Limit::Cgroup(dir) => write!(f, "left under the memory cgroup {}", dir.display()),
        }
    }
}

impl Limit {
    /// A byte for the wire and the text after it (the path, where there is one).
    pub(crate) fn encode(&self) -> (u8, Vec<u8>) {
        use std::os::unix::ffi::OsStrExt;
        match self {
            Limit::ShmDir(dir) => (1, dir.as_os_str().as_bytes().to_vec()),
            Limit::Memory => (2, Vec::new()),
            Limit::Cgroup(dir) => (3, dir.as_os_str().as_bytes().to_vec()),
        }
    }

    /// The inverse of [`Limit::encode`].
    pub(crate) fn decode(kind: u8, text: &[u8]) -> Option<Limit> {
        use std::os::unix::ffi::OsStrExt;
        let path = || PathBuf::from(std::ffi::OsStr::from_bytes(text));
        match kind {
            1 => Some(Limit::ShmDir(path())),
            2 => Some(Limit::Memory),
            3 => Some(Limit::Cgroup(path())),
            _ => None,
        }
    }
}

/// The room for segment files in `dir` on this host now, or `None` if not even the
/// directory's free space can be read.
pub(crate) fn room(dir: &Path) -> Option<Room> {
    let vfs = rustix::fs::statvfs(dir).ok()?;
    let mut best = Room {
        bytes: vfs.f_bavail.saturating_mul(vfs.f_frsize),
        limit: Limit::ShmDir(dir.to_path_buf()),
    };
    let in_memory = rustix::fs::statfs(dir).is_ok_and(|fs| {
        // `f_type`'s integer type differs between targets.
        #[allow(clippy::unnecessary_cast)]
        let ty = fs.f_type as i64;
        ty == TMPFS_MAGIC || ty == RAMFS_MAGIC
    });
    if in_memory {
        let mut tighter = |bytes: Option<u64>, limit: Limit| {
            if let Some(bytes) = bytes.filter(|&b| b < best.bytes) {
                best = Room { bytes, limit };
            }
        };
        let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
        tighter(meminfo.as_deref().and_then(mem_available), Limit::Memory);
        if let Some((bytes, at)) = cgroup_room() {
            tighter(Some(bytes), Limit::Cgroup(at));
        }
    }
    Some(best)
}

/// How long a measurement vouches for allocations (module docs, rule 1).
pub(crate) const VOUCH_FOR: Duration = Duration::from_secs(1);

/// The room for segments of one directory, measured when it must be (module docs).
#[derive(Default)]
pub(crate) struct Gauge {
    /// When the last measurement was taken and what of its vouched half is left.
    vouched: Option<(Instant, u64)>,
}

impl Gauge {
    /// `None` if `need` bytes fit in `dir` now, else the room measured (too small for
    /// them; `None` too if the room cannot be read at all).
    pub(crate) fn short_of(&mut self, dir: &Path, need: u64) -> Option<Room> {
        self.short_with(Instant::now(), need, || room(dir))
    }

    /// [`Gauge::short_of`] at `now`, measuring with `measure`.
    fn short_with(
        &mut self,
        now: Instant,
        need: u64,
        measure: impl FnOnce() -> Option<Room>,
    ) -> Option<Room> {
        if let Some((at, left)) = &mut self.vouched {
            if now.duration_since(*at) < VOUCH_FOR && need <= *left {
                *left -= need;
                return None;
            }
        }
        self.vouched = None;
        let found = measure()?;
        if need > found.bytes {
            return Some(found);
        }
        self.vouched = Some((now, (found.bytes / 2).saturating_sub(need)));
        None
    }
}

/// `MemAvailable` in bytes from the text of `/proc/meminfo`.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The least room along this process's memory cgroup and its ancestors, and where.
fn cgroup_room() -> Option<(u64, PathBuf)> {
    let table = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mut best: Option<(u64, PathBuf)> = None;
    for (mount, path, files) in cgroup_dirs(&table) {
        let mount = Path::new(mount);
        // Inside a cgroup namespace the mount's root is our own cgroup.
        let mut dir = mount.join(path.trim_start_matches('/'));
        if !dir.is_dir() {
            dir = mount.to_path_buf();
        }
        while dir.starts_with(mount) {
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
            let limit = read(files.0).and_then(|t| t.trim().parse::<u64>().ok());
            let usage = read(files.1).and_then(|t| t.trim().parse::<u64>().ok());
            if let (Some(limit), Some(usage)) = (limit, usage) {
                let left = limit.saturating_sub(usage);
                if best.as_ref().is_none_or(|(b, _)| left < *b) {
                    best = Some((left, dir.clone()));
                }
            }
            if !dir.pop() {
                break;
            }
        }
    }
    best
}

/// For each memory cgroup hierarchy this process is in (from `/proc/self/cgroup`):
/// where it is mounted, our path in it, and its (limit, usage) file names.
fn cgroup_dirs(table: &str) -> Vec<(&'static str, &str, (&'static str, &'static str))> {
    let mut out = Vec::new();
    for line in table.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            for mount in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                if Path::new(mount).join("cgroup.controllers").exists() {
                    out.push((mount, path, ("memory.max", "memory.current")));
                    break;
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            out.push((
                "/sys/fs/cgroup/memory",
                path,
                ("memory.limit_in_bytes", "memory.usage_in_bytes"),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mem_available_is_read_in_bytes() {
        let text = "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(text), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
    }

    #[test]
    fn cgroup_lines_name_their_hierarchy() {
        let v1 = "4:memory:/job/42\n3:cpu:/\n";
        let dirs = cgroup_dirs(v1);
        assert_eq!(dirs.len(), 1);
        assert_eq!(dirs[0].0, "/sys/fs/cgroup/memory");
        assert_eq!(dirs[0].1, "/job/42");
    }

    #[test]
    fn a_measurement_vouches_for_half_its_room_for_a_while() {
        let mut g = Gauge::default();
        let t0 = Instant::now();
        let measured = std::cell::Cell::new(0);
        let mut check = |at: Duration, need: u64, bytes: u64| {
            g.short_with(t0 + at, need, || {
                measured.set(measured.get() + 1);
                Some(Room {
                    bytes,
                    limit: Limit::Memory,
                })
            })
            .map(|r| r.bytes)
        };
        let ms = Duration::from_millis;
        assert_eq!(check(ms(0), 100, 1000), None);
        assert_eq!(measured.get(), 1);
        // Half of 1000 is vouched for: 100 taken, 400 left.
        assert_eq!(check(ms(10), 300, 0), None);
        assert_eq!(check(ms(20), 100, 0), None);
        assert_eq!(measured.get(), 1);
        // 0 left: measured again, and found short.
        assert_eq!(check(ms(30), 1, 0), Some(0));
        assert_eq!(measured.get(), 2);
        // A short host vouches for nothing: measured again, now with room.
        assert_eq!(check(ms(40), 10, 1000), None);
        assert_eq!(measured.get(), 3);
        // More than what is left of the half: measured again.
        assert_eq!(check(ms(50), 600, 1000), None);
        assert_eq!(measured.get(), 4);
        // Too old: measured again.
        assert_eq!(check(ms(50) + VOUCH_FOR, 1, 1000), None);
        assert_eq!(measured.get(), 5);
        // Unreadable room: nothing to say, nothing vouched.
        let mut g = Gauge::default();
        assert_eq!(g.short_with(t0, 1, || None), None);
        assert!(g.vouched.is_none());
    }

    #[test]
    fn the_room_of_a_real_directory_is_at_most_its_free_space() {
        let dir = tempfile::tempdir().unwrap();
        let room = room(dir.path()).expect("statvfs of a temporary directory");
        let vfs = rustix::fs::statvfs(dir.path()).unwrap();
        assert!(room.bytes <= vfs.f_blocks * vfs.f_frsize);
    }
}
