//! The memory registry: where each proc tells its node's daemon (`nf serve`, `/mem`)
//! which segments it holds, so the daemon can read and write them with cross-memory
//! attach while the job runs.
//!
//! This crate is the format and nothing else: the one-sided layer (`nf-rma`) publishes
//! with [`Publisher`], the node tree (`nf-node`) reads with [`scan`] and
//! [`read_entry`], and neither links the other.
//!
//! Segment files are unlinked once mapped (`shm/mod.rs`), so a separate process cannot
//! find them by name; instead every proc keeps one small text file in a per-user
//! directory, [`default_dir`] unless `NF_MEM_REGISTRY` says otherwise:
//!
//! ```text
//! nf-mem 1
//! job JOB
//! rank RANK
//! pid PID
//! start TICKS          (field 22 of /proc/PID/stat: tells a reused pid apart)
//! seg ID BASE LEN      (one line per live segment; BASE in the proc's own space)
//! ```
//!
//! Rules:
//! 1. The file is `DIR/JOB.RANK`, written whole to a temporary name and renamed over
//!    the old one, so a reader sees the old or the new list, never half of one.
//! 2. A proc writes it at start-up, soon after each allocation of its own segment
//!    (a writer thread does, off the allocating call's path) and before each free
//!    unmaps one (the caller flushes the writer first, or hands the unmapping to the
//!    writer, [`Publisher::after_written`]); it removes it when its `nf_rma::Rma` is
//!    dropped (finalized or not).
//! 3. A SIGKILLed proc leaves its file behind: readers treat an entry whose pid is
//!    gone, or runs a process started at another time, as absent ([`Entry::alive`]),
//!    and the lowest proc of each domain removes such files at the next job's start.
//! 4. The directory is made mode 0700; an existing one owned by someone else or
//!    writable by others is refused. Publishing is best effort: a failure is logged
//!    and the job runs on, invisible under `/mem`.
//! 5. Readers trust nothing in a file: [`read_entry`] bounds its size, every line is
//!    checked, a job name must be a file name, and who owns the file is the reader's
//!    to check against who owns the process (the daemon does, `nf_node::mem`).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use nf_sys::setting::Setting;

/// First line of every entry: the format and its version.
pub const MAGIC: &str = "nf-mem 1";
/// The environment variable naming the registry directory.
pub const ENV: &str = "NF_MEM_REGISTRY";

/// The settings this crate reads, as `nf config` lists them: the registry directory
/// ([`default_dir`]; `off` is `nf_rma`'s word for publishing nothing).
pub const SETTINGS: &[Setting] = &[Setting::new(
    ENV,
    "memreg",
    "directory where procs publish their segments and where nf serve's /mem finds them (unless nf serve --mem-registry); off: procs publish nothing",
    "$XDG_RUNTIME_DIR/ninefold/mem, else /dev/shm/ninefold-UID/mem, else /tmp/ninefold-UID/mem",
)];
/// Largest entry file read (a larger one is not an entry).
pub const MAX_ENTRY_BYTES: u64 = 64 * 1024;

/// One live segment of a proc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegEntry {
    /// The segment's number within its proc (the allocation counter that named its file).
    pub id: u64,
    /// Its first byte, in the proc's address space.
    pub base: u64,
    /// Its length in bytes.
    pub len: u64,
}

/// One proc's entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The job id.
    pub job: String,
    /// The proc's rank.
    pub rank: u32,
    /// Its pid.
    pub pid: u32,
    /// Its start time (clock ticks after boot), which a reused pid does not share.
    pub start: u64,
    /// Its live segments.
    pub segments: Vec<SegEntry>,
}

impl Entry {
    /// The file name of this entry in the registry (rule 1).
    pub fn file_name(&self) -> String {
        format!("{}.{}", self.job, self.rank)
    }

    /// The text of the entry (format in the module docs).
    pub fn encode(&self) -> String {
        let mut s = format!(
            "{MAGIC}\njob {}\nrank {}\npid {}\nstart {}\n",
            self.job, self.rank, self.pid, self.start
        );
        for seg in &self.segments {
            let _ = writeln!(s, "seg {} {:#x} {}", seg.id, seg.base, seg.len);
        }
        s
    }

    /// Parses an entry; `None` for anything malformed (rule 5).
    pub fn parse(text: &str) -> Option<Entry> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut field = |key: &str| -> Option<String> {
            let line = lines.next()?;
            line.strip_prefix(key)?
                .strip_prefix(' ')
                .map(str::to_string)
        };
        let job = field("job")?;
        let rank = field("rank")?.parse().ok()?;
        let pid = field("pid")?.parse().ok()?;
        let start = field("start")?.parse().ok()?;
        if !valid_job(&job) || pid == 0 {
            return None;
        }
        let segments = lines
            .map(|line| {
                let mut words = line.strip_prefix("seg ")?.split(' ');
                let id = words.next()?.parse().ok()?;
                let base = u64::from_str_radix(words.next()?.strip_prefix("0x")?, 16).ok()?;
                let len = words.next()?.parse().ok()?;
                let fits = base.checked_add(len).is_some() && len > 0;
                (words.next().is_none() && fits).then_some(SegEntry { id, base, len })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Entry {
            job,
            rank,
            pid,
            start,
            segments,
        })
    }

    /// True if the proc still runs: its pid exists and started when the entry says.
    pub fn alive(&self) -> bool {
        process_start(self.pid) == Some(self.start)
    }

    /// The live segment numbered `id`.
    pub fn segment(&self, id: u64) -> Option<SegEntry> {
        self.segments.iter().copied().find(|s| s.id == id)
    }
}

/// True if `job` can name a file and a 9P directory: not empty, not `.` or `..`, no
/// `/`, no NUL, no control characters or spaces, at most 200 bytes.
pub fn valid_job(job: &str) -> bool {
    !job.is_empty()
        && job.len() <= 200
        && job != "."
        && job != ".."
        && !job.chars().any(|c| c == '/' || c.is_control() || c == ' ')
}

/// When process `pid` started (field 22 of `/proc/PID/stat`), if it runs: a zombie
/// (killed, not yet reaped) has no memory left and counts as gone.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold anything: count
    // fields after its closing one (field 3, the state, is the first there).
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    if matches!(fields.next()?, "Z" | "X" | "x") {
        return None;
    }
    fields.nth(22 - 4)?.parse().ok()
}

/// The uid owning process `pid` (its effective uid, as `/proc` shows it).
pub fn process_uid(pid: u32) -> Option<u32> {
    std::fs::metadata(format!("/proc/{pid}"))
        .ok()
        .map(|m| m.uid())
}

/// The registry directory: `NF_MEM_REGISTRY`, else `$XDG_RUNTIME_DIR/ninefold/mem`,
/// else `/dev/shm/ninefold-UID/mem` where `/dev/shm` is a directory, else
/// `/tmp/ninefold-UID/mem`.
///
/// Memory before disk: an entry is rewritten at every allocation and free, and on a
/// disk `/tmp` under write load a rename over the old entry took milliseconds (ext4
/// flushes a file renamed over another), CPU and I/O the job's ranks share with it.
pub fn default_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os(ENV).filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(run) = std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        return Path::new(&run).join("ninefold/mem");
    }
    let uid = process_uid(std::process::id()).unwrap_or(0);
    let base = if Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    PathBuf::from(format!("{base}/ninefold-{uid}/mem"))
}

/// Reads the entry file at `path` (bounded); `None` if it is missing or malformed.
/// Also returns the uid owning the file.
pub fn read_entry(path: &Path) -> Option<(Entry, u32)> {
    // A daemon reads other users' entries: a FIFO or device there must neither block
    // it nor feed it without end, and a symlink must not lead it elsewhere.
    let (text, owner) = nf_sys::file::read_regular_text_owned(path, MAX_ENTRY_BYTES).ok()?;
    let entry = Entry::parse(&text)?;
    // Rule 1: the name is the entry's, so a reader may look one up by name.
    let name = path.file_name()?.to_str()?;
    (name == entry.file_name()).then_some((entry, owner))
}

/// Every well-formed entry in `dir` with the uid owning its file, live or not
/// (callers check [`Entry::alive`] and ownership).
pub fn scan(dir: &Path) -> Vec<(Entry, u32)> {
    let Ok(list) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    list.filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| read_entry(&e.path()))
        .collect()
}

/// Removes the files of dead procs from `dir` (rule 3); only our own user's.
pub fn reclaim_stale(dir: &Path) {
    let me = process_uid(std::process::id());
    for (entry, owner) in scan(dir) {
        if Some(owner) == me && !entry.alive() {
            let _ = std::fs::remove_file(dir.join(entry.file_name()));
        }
    }
}

/// Creates `dir` with mode 0700 if missing, and checks an existing one (rule 4).
fn prepare_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let me = process_uid(std::process::id());
    if !meta.is_dir() || Some(meta.uid()) != me || meta.permissions().mode() & 0o022 != 0 {
        return Err(std::io::Error::new(
            ErrorKind::PermissionDenied,
            "the directory is a link, belongs to another user or others may write to it",
        ));
    }
    // Whoever may rename entries of the parent may swap the directory for another of
    // their choosing after this check (`/dev/shm/ninefold-UID` made in advance by
    // someone else): the parent must be ours or root's, and shared only if sticky.
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        let pm = std::fs::metadata(parent)?;
        let mode = pm.permissions().mode();
        let owner_ok = pm.uid() == 0 || Some(pm.uid()) == me;
        let shared = mode & 0o022 != 0 && mode & 0o1000 == 0;
        if !owner_ok || shared {
            return Err(std::io::Error::new(
                ErrorKind::PermissionDenied,
                format!(
                    "its parent {} belongs to another user or others may rename entries in it",
                    parent.display()
                ),
            ));
        }
    }
    Ok(())
}

/// A segment's file in the node's tree: `/mem/JOB/RANK/ID`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemFile {
    /// The job.
    pub job: String,
    /// The proc's rank.
    pub rank: u32,
    /// The segment's number.
    pub id: u64,
}

impl std::fmt::Display for MemFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "/mem/{}/{}/{}", self.job, self.rank, self.id)
    }
}

/// This proc's entry, kept on disk while it lives (rules 1–4).
///
/// Writing the file is a create, a write and a rename: tens of microseconds on tmpfs,
/// but on a disk file system under write load (ext4 flushes a file renamed over
/// another) one rename took milliseconds, which every `ARMCI_Malloc` and `ARMCI_Free`
/// paid. So a writer thread writes the latest list whenever it changed, off the
/// caller's path: [`Publisher::add`] and [`Publisher::remove`] only record the change.
/// Rule 2's "before each free unmaps one" is kept by the caller: it calls
/// [`Publisher::flush`] between forgetting a segment and unmapping it.
pub struct Publisher {
    shared: Arc<Shared>,
    writer: Option<std::thread::JoinHandle<()>>,
}

/// What the caller and the writer thread share.
struct Shared {
    state: Mutex<State>,
    /// Signalled when the list changed (for the writer) and when a write ended (for
    /// flushes).
    changed: Condvar,
}

struct State {
    /// Where the entry is written; `None` once publishing failed (or never started).
    path: Option<PathBuf>,
    entry: Entry,
    /// Changes made to `entry`, and how many of them the file holds.
    version: u64,
    written: u64,
    /// A flush waits: write without the batching delay.
    urgent: bool,
    /// The writer waits for a change (not out a batch, nor writing): only then does a
    /// change wake it.
    idle: bool,
    /// Jobs to run once the file holds their change ([`Publisher::after_written`]),
    /// in the order given.
    after: VecDeque<(u64, Job)>,
    stop: bool,
}

/// Work handed to the writer thread (dropping a forgotten segment's mapping).
pub type Job = Box<dyn FnOnce() + Send>;

/// Jobs waiting for the writer at most: one more runs on the caller's path, as
/// before there was a writer, so what waits (memory to give back) stays bounded.
const MAX_AFTER: usize = 8;

impl State {
    /// Writes the entry through a temporary file and a rename (rule 1); a failure
    /// stops publishing.
    fn write_now(&mut self) {
        let Some(path) = self.path.clone() else {
            return;
        };
        let text = self.entry.encode();
        if let Err(e) = write_entry(&path, &self.entry.file_name(), &text) {
            self.fail(&path, &e);
        }
        self.written = self.version;
    }

    /// Whether a job's change is written (or there is no file to wait for).
    fn job_ready(&self) -> bool {
        self.after
            .front()
            .is_some_and(|(v, _)| *v <= self.written || self.path.is_none())
    }

    /// Takes the jobs whose changes are written, in order.
    fn ready_jobs(&mut self) -> Vec<Job> {
        let mut jobs = Vec::new();
        while self.job_ready() {
            jobs.extend(self.after.pop_front().map(|(_, job)| job));
        }
        jobs
    }

    fn fail(&mut self, path: &Path, e: &std::io::Error) {
        tracing::warn!(path = %path.display(), error = %e, "could not publish segments for nf serve's /mem; this proc stops publishing");
        let _ = std::fs::remove_file(path);
        self.path = None;
    }
}

/// Writes `text` as the entry file `path` (named `name`), whole or not at all.
fn write_entry(path: &Path, name: &str, text: &str) -> std::io::Result<()> {
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let done = std::fs::write(&tmp, text).and_then(|()| {
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&tmp, path)
    });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
}

/// Locks the shared state (a panic elsewhere leaves it consistent).
fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Publisher {
    /// Publishes proc `rank` of `job` with no segments in `dir` (`None`: not at all).
    /// The first write happens here, before this returns.
    pub fn start(dir: Option<&Path>, job: &str, rank: usize) -> Publisher {
        let pid = std::process::id();
        let entry = Entry {
            job: job.to_string(),
            rank: rank as u32,
            pid,
            start: process_start(pid).unwrap_or(0),
            segments: Vec::new(),
        };
        let mut state = State {
            path: None,
            entry,
            version: 0,
            written: 0,
            urgent: false,
            idle: false,
            after: VecDeque::new(),
            stop: false,
        };
        if let Some(dir) = dir {
            state.path = prepare(dir, job).map(|()| dir.join(state.entry.file_name()));
            state.write_now();
        }
        let publishing = state.path.is_some();
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            changed: Condvar::new(),
        });
        let writer = publishing.then(|| spawn_writer(&shared)).flatten();
        Publisher { shared, writer }
    }

    /// Where the node's `/mem` shows our segment at `base`, if it is published.
    pub fn published(&self, base: u64) -> Option<MemFile> {
        let st = lock(&self.shared.state);
        st.path.as_ref()?;
        let seg = st.entry.segments.iter().find(|s| s.base == base)?;
        Some(MemFile {
            job: st.entry.job.clone(),
            rank: st.entry.rank,
            id: seg.id,
        })
    }

    /// Adds our segment `id` at `base`, `len` bytes (written soon after).
    pub fn add(&mut self, id: u64, base: u64, len: u64) {
        self.change(|e| e.segments.push(SegEntry { id, base, len }));
    }

    /// Forgets our segment at `base` (written soon after). Returns the change's
    /// number, for [`Publisher::flush_to`] before the segment is unmapped.
    pub fn remove(&mut self, base: u64) -> u64 {
        self.change(|e| e.segments.retain(|s| s.base != base))
    }

    /// Returns once the file holds every change made so far (or publishing stopped).
    pub fn flush(&self) {
        let version = lock(&self.shared.state).version;
        self.flush_to(version);
    }

    /// Returns once the file holds change `version` and those before it (or
    /// publishing stopped): at once when the writer got there already.
    pub fn flush_to(&self, version: u64) {
        let mut st = lock(&self.shared.state);
        while st.path.is_some() && st.written < version {
            if self.writer.as_ref().is_none_or(|w| w.is_finished()) {
                // No writer (it never started, or it died): write here rather than
                // wait for nobody.
                st.write_now();
                return;
            }
            st.urgent = true;
            self.shared.changed.notify_all();
            st = self
                .shared
                .changed
                .wait_timeout(st, WRITER_CHECK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Runs `job` once the file holds change `version` and those before it: on the
    /// writer thread, off the caller's path (rule 2's unmapping after a free), or
    /// here, after [`Publisher::flush_to`], when there is no writer, publishing
    /// stopped, or eight jobs wait already (`MAX_AFTER`).
    pub fn after_written(&self, version: u64, job: Job) {
        let mut st = lock(&self.shared.state);
        if self.writer.is_some() && st.path.is_some() && st.after.len() < MAX_AFTER {
            st.after.push_back((version, job));
            let wake = st.idle;
            drop(st);
            if wake {
                self.shared.changed.notify_all();
            }
            return;
        }
        drop(st);
        self.flush_to(version);
        job();
    }

    /// Applies `f` to the entry; returns the change's number.
    fn change(&mut self, f: impl FnOnce(&mut Entry)) -> u64 {
        let mut st = lock(&self.shared.state);
        f(&mut st.entry);
        st.version += 1;
        let version = st.version;
        if self.writer.is_none() {
            // No writer thread (it could not start): write on the caller's path.
            st.write_now();
            return version;
        }
        // A writer gathering a batch writes this change with it when the batch ends:
        // waking it for every change took a context switch per `ARMCI_Malloc` and
        // `ARMCI_Free` from ranks that need the CPU.
        let wake = st.idle;
        drop(st);
        if wake {
            self.shared.changed.notify_all();
        }
        version
    }
}

/// Checks the job id and the directory (rule 4); false (with a warning) if unusable.
fn prepare(dir: &Path, job: &str) -> Option<()> {
    if !valid_job(job) {
        tracing::warn!(
            job,
            "not publishing segments for nf serve's /mem: the job id is not a file name"
        );
        return None;
    }
    if let Err(e) = prepare_dir(dir) {
        tracing::warn!(dir = %dir.display(), error = %e, "not publishing segments for nf serve's /mem: the registry directory is unusable (set {ENV} to another)");
        return None;
    }
    Some(())
}

/// How long the writer lets changes gather before it writes them (unless a flush
/// waits): under allocation churn on 2 cores with 4 ranks, a write per change took
/// the ranks' CPU (a new-size `ARMCI_Malloc` + `ARMCI_Free` 2.7 ms, 1.1 ms without
/// publishing).
const BATCH: std::time::Duration = std::time::Duration::from_millis(5);

/// How often a flush looks whether the writer thread still runs.
const WRITER_CHECK: std::time::Duration = std::time::Duration::from_millis(100);

/// Starts the thread that writes the entry whenever it changed; `None` if it could not
/// start (the caller then writes itself).
fn spawn_writer(shared: &Arc<Shared>) -> Option<std::thread::JoinHandle<()>> {
    let sh = Arc::clone(shared);
    std::thread::Builder::new()
        .name("nf-memreg".into())
        .spawn(move || loop {
            let mut st = lock(&sh.state);
            while !st.stop && st.written == st.version && !st.job_ready() {
                st.idle = true;
                st = sh.changed.wait(st).unwrap_or_else(PoisonError::into_inner);
            }
            st.idle = false;
            if st.stop {
                return; // what waits runs in `Drop`, after the file is gone
            }
            if st.written == st.version {
                // Only jobs to run: their changes are written.
                let jobs = st.ready_jobs();
                drop(st);
                jobs.into_iter().for_each(|job| job());
                continue;
            }
            // Changes come in bursts (a program allocating and freeing arrays in a
            // loop): one write for the burst, not one per change. Changes meanwhile
            // do not wake this wait (only a flush or the end does).
            let deadline = std::time::Instant::now() + BATCH;
            while !st.stop && !st.urgent {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                st = sh
                    .changed
                    .wait_timeout(st, left)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            if st.stop {
                return;
            }
            st.urgent = false;
            // Write outside the lock, so the caller's changes never wait for the disk.
            let (version, text) = (st.version, st.entry.encode());
            let (path, name) = match &st.path {
                Some(p) => (p.clone(), st.entry.file_name()),
                None => return,
            };
            drop(st);
            let done = write_entry(&path, &name, &text);
            let mut st = lock(&sh.state);
            match done {
                Ok(()) => st.written = st.written.max(version),
                Err(e) => st.fail(&path, &e),
            }
            let jobs = st.ready_jobs();
            drop(st);
            sh.changed.notify_all();
            jobs.into_iter().for_each(|job| job());
        })
        .map_err(|e| tracing::warn!(error = %e, "memory registry: no writer thread; writing on the caller's path"))
        .ok()
}

impl Drop for Publisher {
    fn drop(&mut self) {
        lock(&self.shared.state).stop = true;
        self.shared.changed.notify_all();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        let (path, jobs) = {
            let mut st = lock(&self.shared.state);
            (st.path.take(), std::mem::take(&mut st.after))
        };
        // The file goes first: nothing it lists may be unmapped before it.
        if let Some(path) = path {
            let _ = std::fs::remove_file(path);
        }
        jobs.into_iter().for_each(|(_, job)| job());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_testkit::eventually;
    use std::time::Duration;

    fn entry() -> Entry {
        Entry {
            job: "job7".into(),
            rank: 3,
            pid: 42,
            start: 1234,
            segments: vec![
                SegEntry {
                    id: 1,
                    base: 0x7f00_0000_0000,
                    len: 4096,
                },
                SegEntry {
                    id: 4,
                    base: 0x7f00_0001_0000,
                    len: 10,
                },
            ],
        }
    }

    #[test]
    fn entries_round_trip_and_malformed_ones_are_refused() {
        let e = entry();
        assert_eq!(Entry::parse(&e.encode()), Some(e.clone()));
        assert_eq!(e.file_name(), "job7.3");
        let text = e.encode();
        for bad in [
            String::new(),
            text.replace(MAGIC, "nf-mem 2"),
            text.replace("rank 3", "rank -3"),
            text.replace("job job7", "job ../x"),
            text.replace("job job7", "job a/b"),
            text.replace("pid 42", "pid 0"),
            text.replace("4096", "0"),
            text.replace("0x7f0000010000 10", "0x7f0000010000 10 11"),
            text.replace("0x7f0000010000 10", "0xffffffffffffffff 10"),
            text.replace("seg 4", "sag 4"),
            text.replace("start 1234\n", ""),
        ] {
            assert_eq!(Entry::parse(&bad), None, "{bad:?}");
        }
    }

    #[test]
    fn this_process_is_alive_and_a_wrong_start_is_not() {
        let mut e = entry();
        e.pid = std::process::id();
        e.start = process_start(e.pid).expect("our own start time");
        assert!(e.alive());
        e.start += 1;
        assert!(!e.alive(), "a reused pid");
        // A killed child not yet reaped is gone too.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(process_start(pid).is_some());
        std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while process_start(pid).is_some() {
            assert!(std::time::Instant::now() < deadline, "the child never died");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(
            std::fs::metadata(format!("/proc/{pid}")).is_ok(),
            "a zombie until reaped"
        );
        child.wait().unwrap();
    }

    #[test]
    fn a_write_that_fails_stops_publishing_and_no_flush_waits_for_it() {
        let dir = tempfile::tempdir().unwrap();
        let reg = dir.path().join("reg");
        let mut p = Publisher::start(Some(&reg), "jobx", 2);
        p.add(1, 0x1000, 64);
        p.flush();
        assert!(p.published(0x1000).is_some());
        std::fs::remove_dir_all(&reg).unwrap();
        let change = p.remove(0x1000);
        p.add(2, 0x2000, 64);
        p.flush_to(change);
        p.flush();
        assert_eq!(p.published(0x2000), None, "publishing stopped");
    }

    #[test]
    fn publisher_writes_updates_and_removes_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let reg = dir.path().join("reg");
        let mut p = Publisher::start(Some(&reg), "jobx", 1);
        let mode = std::fs::metadata(&reg).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let file = reg.join("jobx.1");
        let (got, _) = read_entry(&file).expect("an entry");
        assert!(got.alive() && got.segments.is_empty());
        p.add(1, 0x1000, 64);
        p.add(2, 0x9000, 8);
        p.remove(0x1000);
        p.flush();
        let (got, _) = read_entry(&file).unwrap();
        assert_eq!(
            got.segments,
            [SegEntry {
                id: 2,
                base: 0x9000,
                len: 8
            }]
        );
        assert_eq!(scan(&reg).len(), 1, "no temporary file is left");
        drop(p);
        assert!(!file.exists());
    }

    #[test]
    fn changes_are_written_without_a_flush_whether_the_writer_waits_or_batches() {
        let dir = tempfile::tempdir().unwrap();
        let reg = dir.path().join("reg");
        let mut p = Publisher::start(Some(&reg), "joby", 0);
        let file = reg.join("joby.0");
        // Bounded: the writer writes within BATCH of a change; 5 s is generous.
        let holds = |n: usize, what: &str| {
            eventually(what, Duration::from_secs(5), || {
                read_entry(&file).is_some_and(|(e, _)| e.segments.len() == n)
            })
        };
        // The writer waits idle: the first change must wake it.
        p.add(1, 0x1000, 64);
        holds(1, "a change to an idle writer is written");
        // Changes made while it gathers a batch (no wake-up) must be in that batch or
        // the next write.
        for i in 2..=50u64 {
            p.add(i, i << 12, 8);
        }
        holds(50, "changes made during a batch are written");
    }

    #[test]
    fn a_job_runs_once_the_file_no_longer_lists_the_segment() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let reg = dir.path().join("reg");
        let mut p = Publisher::start(Some(&reg), "jobz", 3);
        let file = reg.join("jobz.3");
        let ran = Arc::new(AtomicUsize::new(0));
        for round in 0..20u64 {
            let base = (round + 1) << 12;
            p.add(round, base, 4096);
            let gone = p.remove(base);
            let (file, ran) = (file.clone(), Arc::clone(&ran));
            p.after_written(
                gone,
                Box::new(move || {
                    let listed = read_entry(&file)
                        .is_some_and(|(e, _)| e.segments.iter().any(|s| s.base == base));
                    assert!(!listed, "a job ran while the file still listed its segment");
                    ran.fetch_add(1, Ordering::SeqCst);
                }),
            );
        }
        // Bounded: the writer runs them within a batch or two; 5 s is generous.
        eventually("every job ran", Duration::from_secs(5), || {
            ran.load(Ordering::SeqCst) == 20
        });
        // What still waits when the publisher goes runs before its drop returns.
        let base = 0x7000_0000;
        p.add(99, base, 1);
        let gone = p.remove(base);
        let late = Arc::clone(&ran);
        p.after_written(
            gone,
            Box::new(move || _ = late.fetch_add(1, Ordering::SeqCst)),
        );
        drop(p);
        assert_eq!(ran.load(Ordering::SeqCst), 21);
        // Only jobs whose change is written are ready, in order; with no file to
        // wait for, all are.
        let mut st = State {
            path: Some(file.clone()),
            entry: entry(),
            version: 7,
            written: 5,
            urgent: false,
            idle: false,
            after: VecDeque::new(),
            stop: false,
        };
        for v in [3, 5, 6, 4] {
            st.after.push_back((v, Box::new(|| {})));
        }
        assert_eq!(st.ready_jobs().len(), 2);
        assert_eq!(st.after.front().map(|(v, _)| *v), Some(6));
        st.path = None;
        assert_eq!(st.ready_jobs().len(), 2);
        // Without a registry the job runs at once, on the caller.
        let q = Publisher::start(None, "jobz", 4);
        let here = Arc::new(AtomicUsize::new(0));
        let h = Arc::clone(&here);
        q.after_written(1, Box::new(move || _ = h.fetch_add(1, Ordering::SeqCst)));
        assert_eq!(here.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_registry_others_may_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let reg = dir.path().join("open");
        std::fs::create_dir(&reg).unwrap();
        std::fs::set_permissions(&reg, std::fs::Permissions::from_mode(0o777)).unwrap();
        let _p = Publisher::start(Some(&reg), "jobx", 0);
        assert!(scan(&reg).is_empty());
    }

    #[test]
    fn a_registry_under_a_parent_others_may_rename_in_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let parent = dir.path().join("ninefold-x");
        std::fs::create_dir(&parent).unwrap();
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o777)).unwrap();
        let reg = parent.join("mem");
        let p = Publisher::start(Some(&reg), "jobx", 0);
        assert!(scan(&reg).is_empty());
        drop(p);
        // Sticky, as /tmp and /dev/shm are: renaming others' entries is refused there.
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let _p = Publisher::start(Some(&reg), "jobx", 0);
        assert_eq!(scan(&reg).len(), 1);
    }

    #[test]
    fn stale_files_are_reclaimed_and_misnamed_ones_are_not_entries() {
        let dir = tempfile::tempdir().unwrap();
        let mut dead = entry();
        dead.pid = u32::MAX / 2; // above pid_max: never a process
        std::fs::write(dir.path().join(dead.file_name()), dead.encode()).unwrap();
        let mut live = entry();
        live.pid = std::process::id();
        live.start = process_start(live.pid).unwrap();
        live.rank = 5;
        std::fs::write(dir.path().join("wrong.name"), live.encode()).unwrap();
        std::fs::write(dir.path().join(live.file_name()), live.encode()).unwrap();
        assert!(read_entry(&dir.path().join("wrong.name")).is_none());
        reclaim_stale(dir.path());
        let left: Vec<String> = scan(dir.path())
            .into_iter()
            .map(|(e, _)| e.file_name())
            .collect();
        assert_eq!(left, ["job7.5"]);
    }
}
