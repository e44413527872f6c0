//! A job's `stdout` / `stderr`: a stream readers follow as output comes, that loses
//! nothing a reader has open.
//!
//! Rules:
//!
//! 1. Each open starts at the oldest byte kept and follows (blocks for more, like
//!    `/log`) until the job's output ends, then reads end of file.
//! 2. Without readers, the last `history` bytes are kept for readers that come later;
//!    older ones are dropped, so a job nobody watches never stalls.
//! 3. With readers open, bytes are dropped only once every open reader has read them:
//!    a writer (the pump that copies the job's pipe here) waits while `history` bytes
//!    are unread by the slowest reader, which holds the job back through its pipe
//!    instead of losing its output.
//! 4. A blocked read returns `EINTR` when flushed or when its connection goes.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use nf_ninep::errno::EAGAIN;
use nf_ninep::LOpenFlags;
use nf_ninep_server::{Cancel, Ctx, FsError, FsResult, Monitor};
use nf_ninep_trees::synthetic::{FileNode, OpenFile};

struct State {
    kept: VecDeque<u8>,
    /// Stream offset of `kept[0]`.
    base: u64,
    history: usize,
    closed: bool,
    /// Open readers' cursors, by reader id.
    readers: HashMap<u64, u64>,
    next_reader: u64,
}

impl State {
    fn end(&self) -> u64 {
        self.base + self.kept.len() as u64
    }

    /// Drops what rule 2 or 3 lets go.
    fn trim(&mut self) {
        let slowest = self.readers.values().copied().min().unwrap_or(u64::MAX);
        let over = self.kept.len().saturating_sub(self.history) as u64;
        let may = over.min(slowest.saturating_sub(self.base));
        self.kept.drain(..may as usize);
        self.base += may;
    }

    /// Room for a writer under rule 3.
    fn room(&self) -> usize {
        match self.readers.values().copied().min() {
            Some(slowest) => {
                let unread = (self.end() - slowest.max(self.base)) as usize;
                self.history.saturating_sub(unread)
            }
            None => usize::MAX,
        }
    }
}

/// One output stream (see the module docs). Clones share it.
#[derive(Clone)]
pub struct Output {
    state: Arc<Monitor<State>>,
    owner: (u32, u32),
}

impl Output {
    /// A stream keeping `history` bytes, readable by `owner` only.
    pub fn new(history: usize, owner: (u32, u32)) -> Output {
        Output {
            state: Arc::new(Monitor::new(State {
                kept: VecDeque::new(),
                base: 0,
                history: history.max(1),
                closed: false,
                readers: HashMap::new(),
                next_reader: 0,
            })),
            owner,
        }
    }

    /// Appends all of `bytes`, waiting for slow readers (rule 3); false once `ended`
    /// is cancelled (the session ends) while waiting, with the rest dropped.
    pub fn push(&self, mut bytes: &[u8], ended: &Cancel) -> bool {
        while !bytes.is_empty() {
            let Ok(room) = ended.wait(&self.state, |st| {
                let room = st.room();
                (room > 0).then_some(room)
            }) else {
                return false;
            };
            let take = room.min(bytes.len());
            self.state.update(|st| {
                st.kept.extend(&bytes[..take]);
                st.trim();
            });
            bytes = &bytes[take..];
        }
        true
    }

    /// Ends the stream: readers read what is left, then end of file.
    pub fn close(&self) {
        self.state.update(|st| st.closed = true);
    }

    /// Whether the stream has ended.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// Everything kept now (for tests and the session's end-of-job summary).
    pub fn snapshot(&self) -> Vec<u8> {
        self.state.lock().kept.iter().copied().collect()
    }
}

struct Reader {
    state: Arc<Monitor<State>>,
    id: u64,
    nonblock: bool,
    _hold: super::session::Hold,
}

impl OpenFile for Reader {
    fn read(&self, ctx: &Ctx, _: u64, count: u32) -> FsResult<Vec<u8>> {
        let take = |st: &mut State| {
            let cursor = st.readers.get(&self.id).copied().unwrap_or(st.base);
            let from = cursor.max(st.base);
            if from < st.end() {
                let skip = (from - st.base) as usize;
                let take = (count as usize).min((st.end() - from) as usize);
                let out: Vec<u8> = st.kept.range(skip..skip + take).copied().collect();
                st.readers.insert(self.id, from + take as u64);
                st.trim();
                Some(out)
            } else if st.closed {
                Some(Vec::new())
            } else {
                None
            }
        };
        let out = if self.nonblock {
            let got = take(&mut self.state.lock());
            got.ok_or(FsError::Errno(EAGAIN))?
        } else {
            ctx.wait(&self.state, take)?
        };
        // The writer may be waiting for this reader (rule 3).
        self.state.update(|_| ());
        Ok(out)
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.state.update(|st| {
            st.readers.remove(&self.id);
            st.trim();
        });
    }
}

/// The file `stdout` or `stderr` of one session.
pub struct OutputFile {
    /// The stream.
    pub output: Output,
    /// Keeps the session alive while open.
    pub session: super::session::SessionRef,
}

impl FileNode for OutputFile {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        0o400
    }

    fn owner(&self) -> Option<(u32, u32)> {
        Some(self.output.owner)
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        if flags.access_mode() != LOpenFlags::RDONLY.0 {
            return Err(FsError::Errno(nf_ninep::errno::EACCES));
        }
        let hold = self.session.hold()?;
        let id = self.output.state.update(|st| {
            let id = st.next_reader;
            st.next_reader += 1;
            let base = st.base;
            st.readers.insert(id, base);
            id
        });
        Ok(Box::new(Reader {
            state: Arc::clone(&self.output.state),
            id,
            nonblock: flags.contains(LOpenFlags::NONBLOCK),
            _hold: hold,
        }))
    }
}
