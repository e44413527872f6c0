//! Ready-made files for synthetic trees: [`StaticFile`], [`DynamicFile`], [`Stream`].

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::synthetic::node::{FileNode, OpenFile};
use nf_ninep::errno::{EACCES, EAGAIN};
use nf_ninep::types::LOpenFlags;
use nf_ninep_server::FsError;
use nf_ninep_server::Monitor;
use nf_ninep_server::{Ctx, FsResult};

/// Whether an open with `flags` reads (`O_RDONLY` or `O_RDWR`).
pub fn wants_read(flags: LOpenFlags) -> bool {
    let m = flags.access_mode();
    m == LOpenFlags::RDONLY.0 || m == LOpenFlags::RDWR.0
}

/// Whether an open with `flags` writes (`O_WRONLY` or `O_RDWR`).
pub fn wants_write(flags: LOpenFlags) -> bool {
    let m = flags.access_mode();
    m == LOpenFlags::WRONLY.0 || m == LOpenFlags::RDWR.0
}

/// The bytes of `data` at `offset`, at most `count` (a read of content held whole).
pub fn slice_at(data: &[u8], offset: u64, count: u32) -> Vec<u8> {
    let start = usize::try_from(offset)
        .unwrap_or(usize::MAX)
        .min(data.len());
    let end = start.saturating_add(count as usize).min(data.len());
    data[start..end].to_vec()
}

/// Fixed, read-only content.
#[derive(Clone)]
pub struct StaticFile {
    data: Arc<[u8]>,
}

impl StaticFile {
    /// A file holding `data`.
    pub fn new(data: impl Into<Vec<u8>>) -> Self {
        StaticFile {
            data: data.into().into(),
        }
    }
}

struct StaticOpen(Arc<[u8]>);

impl OpenFile for StaticOpen {
    fn read(&self, _: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        Ok(slice_at(&self.0, offset, count))
    }
}

impl FileNode for StaticFile {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        0o444
    }

    fn size(&self) -> u64 {
        self.data.len() as u64
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        if wants_write(flags) {
            return Err(FsError::Errno(EACCES));
        }
        Ok(Box::new(StaticOpen(Arc::clone(&self.data))))
    }
}

type ReadFn = dyn Fn() -> Vec<u8> + Send + Sync;
type WriteFn = dyn Fn(&[u8]) -> FsResult<()> + Send + Sync;

/// Content made by code: a snapshot taken at each open (like `/proc` files; size 0),
/// and optionally a handler for each write (like a `ctl` file).
#[derive(Clone)]
pub struct DynamicFile {
    read: Option<Arc<ReadFn>>,
    write: Option<Arc<WriteFn>>,
}

impl DynamicFile {
    /// A read-only file whose content is `read()` at each open.
    pub fn new(read: impl Fn() -> Vec<u8> + Send + Sync + 'static) -> Self {
        DynamicFile {
            read: Some(Arc::new(read)),
            write: None,
        }
    }

    /// A write-only file: every `Twrite`'s data goes to `write`.
    pub fn write_only(write: impl Fn(&[u8]) -> FsResult<()> + Send + Sync + 'static) -> Self {
        DynamicFile {
            read: None,
            write: Some(Arc::new(write)),
        }
    }

    /// This file, also writable through `write`.
    pub fn with_write(
        mut self,
        write: impl Fn(&[u8]) -> FsResult<()> + Send + Sync + 'static,
    ) -> Self {
        self.write = Some(Arc::new(write));
        self
    }
}

struct DynamicOpen {
    snapshot: Vec<u8>,
    write: Option<Arc<WriteFn>>,
}

impl OpenFile for DynamicOpen {
    fn read(&self, _: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        Ok(slice_at(&self.snapshot, offset, count))
    }

    fn write(&self, _: &Ctx, _: u64, data: &[u8]) -> FsResult<u32> {
        match &self.write {
            Some(write) => write(data).map(|()| data.len() as u32),
            None => Err(FsError::Errno(EACCES)),
        }
    }
}

impl FileNode for DynamicFile {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        match (self.read.is_some(), self.write.is_some()) {
            (true, true) => 0o644,
            (true, false) => 0o444,
            (false, true) => 0o200,
            (false, false) => 0,
        }
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        if (wants_read(flags) && self.read.is_none())
            || (wants_write(flags) && self.write.is_none())
        {
            return Err(FsError::Errno(EACCES));
        }
        let snapshot = match (&self.read, wants_read(flags)) {
            (Some(read), true) => read(),
            _ => Vec::new(),
        };
        Ok(Box::new(DynamicOpen {
            snapshot,
            write: self.write.clone(),
        }))
    }
}

struct StreamState {
    /// The bytes kept, oldest first.
    kept: VecDeque<u8>,
    /// Stream offset of `kept[0]`.
    base: u64,
    /// Most bytes kept for readers that open later.
    history: usize,
    closed: bool,
}

/// An append-only byte stream that readers follow like `tail -f`: each open starts at
/// the oldest byte kept and then blocks for more (cancellably) until [`Stream::close`].
/// A reader opened with `O_NONBLOCK` gets `EAGAIN` instead of blocking.
/// Clones share the stream.
#[derive(Clone)]
pub struct Stream {
    state: Arc<Monitor<StreamState>>,
    writable: bool,
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

impl Stream {
    /// A stream keeping the last 1 MiB for new readers.
    pub fn new() -> Self {
        Stream::with_history(1 << 20)
    }

    /// A stream keeping the last `bytes` bytes for new readers (0: live only).
    pub fn with_history(bytes: usize) -> Self {
        Stream {
            state: Arc::new(Monitor::new(StreamState {
                kept: VecDeque::new(),
                base: 0,
                history: bytes,
                closed: false,
            })),
            writable: false,
        }
    }

    /// This stream, with clients' writes appended to it (as a log file).
    pub fn writable(mut self) -> Self {
        self.writable = true;
        self
    }

    /// Appends `bytes` and wakes every reader.
    pub fn push(&self, bytes: &[u8]) {
        self.state.update(|st| {
            st.kept.extend(bytes);
            let excess = st.kept.len().saturating_sub(st.history);
            st.kept.drain(..excess);
            st.base += excess as u64;
        });
    }

    /// Ends the stream: readers get end of file once they have read everything.
    pub fn close(&self) {
        self.state.update(|st| st.closed = true);
    }
}

struct StreamReader {
    state: Arc<Monitor<StreamState>>,
    /// Stream offset of the next byte to read.
    cursor: AtomicU64,
    writable: bool,
    /// Opened with `O_NONBLOCK`: a reader that has caught up gets `EAGAIN`.
    nonblock: bool,
}

impl OpenFile for StreamReader {
    fn read(&self, ctx: &Ctx, _: u64, count: u32) -> FsResult<Vec<u8>> {
        // Runs under the monitor's lock: cursor updates are serialised.
        let take = |st: &mut StreamState| {
            let end = st.base + st.kept.len() as u64;
            let from = self.cursor.load(Ordering::Relaxed).max(st.base);
            if from < end {
                let skip = (from - st.base) as usize;
                let take = (count as usize).min((end - from) as usize);
                self.cursor.store(from + take as u64, Ordering::Relaxed);
                Some(st.kept.range(skip..skip + take).copied().collect())
            } else if st.closed {
                Some(Vec::new())
            } else {
                None
            }
        };
        if self.nonblock {
            return take(&mut self.state.lock()).ok_or(FsError::Errno(EAGAIN));
        }
        ctx.wait(&self.state, take)
    }

    fn write(&self, _: &Ctx, _: u64, data: &[u8]) -> FsResult<u32> {
        if !self.writable {
            return Err(FsError::Errno(EACCES));
        }
        Stream {
            state: Arc::clone(&self.state),
            writable: true,
        }
        .push(data);
        Ok(data.len() as u32)
    }
}

impl FileNode for Stream {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        // A writable stream is a shared log: everyone may append, as before users
        // were told apart.
        if self.writable {
            0o666
        } else {
            0o444
        }
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        if wants_write(flags) && !self.writable {
            return Err(FsError::Errno(EACCES));
        }
        let base = self.state.lock().base;
        Ok(Box::new(StreamReader {
            state: Arc::clone(&self.state),
            cursor: AtomicU64::new(base),
            writable: self.writable,
            nonblock: flags.contains(LOpenFlags::NONBLOCK),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_keeps_history_and_ends() {
        let s = Stream::with_history(4);
        s.push(b"abcdef");
        let ctx = Ctx::background(8192);
        let r = s.open(&ctx, LOpenFlags::RDONLY).unwrap();
        assert_eq!(r.read(&ctx, 0, 3).unwrap(), b"cde");
        assert_eq!(r.read(&ctx, 0, 9).unwrap(), b"f");
        s.close();
        assert_eq!(r.read(&ctx, 0, 9).unwrap(), b"");
    }

    #[test]
    fn cancelled_stream_read_returns_eintr() {
        let s = Stream::new();
        let ctx = Ctx::background(8192);
        let r = s.open(&ctx, LOpenFlags::RDONLY).unwrap();
        let c = ctx.cancel().clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            c.cancel();
        });
        assert_eq!(
            r.read(&ctx, 0, 9).unwrap_err(),
            FsError::Errno(nf_ninep::errno::EINTR)
        );
        t.join().unwrap();
    }

    #[test]
    fn dynamic_snapshot_per_open() {
        let n = Arc::new(AtomicU64::new(0));
        let n2 = Arc::clone(&n);
        let f =
            DynamicFile::new(move || n2.fetch_add(1, Ordering::SeqCst).to_string().into_bytes());
        let ctx = Ctx::background(8192);
        let a = f.open(&ctx, LOpenFlags::RDONLY).unwrap();
        let b = f.open(&ctx, LOpenFlags::RDONLY).unwrap();
        assert_eq!(a.read(&ctx, 0, 10).unwrap(), b"0");
        assert_eq!(b.read(&ctx, 0, 10).unwrap(), b"1");
        assert_eq!(
            f.open(&ctx, LOpenFlags::WRONLY).err().unwrap(),
            FsError::Errno(EACCES)
        );
    }
}
