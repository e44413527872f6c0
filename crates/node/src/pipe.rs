//! `/pipe/NAME` (#p): named pipes between processes and nodes.
//!
//! A pipe is made by creating a file in `/pipe` (`Tlcreate`, e.g. `nf write
//! :/pipe/jobs …` or `touch` on a mount) and removed like a file. Opening it for
//! reading makes a reader, for writing a writer (`O_RDWR` both); every client of the
//! server — another process, another node — shares the same pipe.
//!
//! Rules (a bounded FIFO, like a Unix pipe):
//!
//! 1. A read returns what is buffered (at most `count` bytes). With nothing buffered it
//!    blocks until a writer writes, or until end of file: nothing is buffered, no writer
//!    is open, and some writer was open during this reader's open (so a reader that
//!    opens first waits for its writer instead of seeing end of file at once).
//! 2. A write takes as much as fits in the buffer (`capacity` bytes) and blocks while it
//!    is full. It fails with `EPIPE` once no reader is open and some reader was open
//!    during this writer's open (nobody will ever read it); before any reader opened,
//!    data waits in the buffer.
//! 3. An end opened with `O_NONBLOCK` gets `EAGAIN` where it would block.
//! 4. Blocked reads and writes return `EINTR` when flushed (`Tflush`) or when their
//!    connection goes; nothing is lost: a flushed read consumed nothing. On the
//!    connection's reader thread (inline) a read or write that would block answers
//!    `WOULD_BLOCK` instead, having taken nothing, and the server runs it again on a
//!    worker ([`Ctx::wait`]).
//! 5. Readers and writers are counted per open and uncounted when the fid is clunked
//!    (also by a dropped connection), waking everyone blocked on the pipe.

use std::collections::VecDeque;
use std::sync::Arc;

use nf_ninep::errno::{EAGAIN, EINVAL, EPIPE};
use nf_ninep::server::trees::synthetic::{DirOps, FileNode, OpenFile};
use nf_ninep::server::{Ctx, FsResult, Monitor};
use nf_ninep::{LOpenFlags, Rlerror};

/// Default buffer of one pipe: 64 KiB, as a Linux pipe.
pub const DEFAULT_PIPE_CAPACITY: usize = 64 * 1024;

#[derive(Default)]
struct PipeState {
    buf: VecDeque<u8>,
    readers: usize,
    writers: usize,
    /// Opens ever, per side: an open sees the other side's count change (rules 1, 2).
    reader_opens: u64,
    writer_opens: u64,
}

/// One named pipe. Clones share it.
#[derive(Clone)]
pub struct Pipe {
    state: Arc<Monitor<PipeState>>,
    capacity: usize,
}

impl Pipe {
    /// An empty pipe buffering at most `capacity` bytes (at least 1).
    pub fn new(capacity: usize) -> Self {
        Pipe {
            state: Arc::new(Monitor::new(PipeState::default())),
            capacity: capacity.max(1),
        }
    }
}

/// One open of a pipe: a reader, a writer or both.
struct PipeEnd {
    pipe: Pipe,
    reads: bool,
    writes: bool,
    nonblock: bool,
    /// `writer_opens` at open, and whether a writer was open then (rule 1).
    writers_seen: u64,
    had_writer: bool,
    /// `reader_opens` at open, and whether a reader was open then (rule 2).
    readers_seen: u64,
    had_reader: bool,
}

fn wants(flags: LOpenFlags) -> (bool, bool) {
    match flags.access_mode() {
        m if m == LOpenFlags::RDONLY.0 => (true, false),
        m if m == LOpenFlags::WRONLY.0 => (false, true),
        m if m == LOpenFlags::RDWR.0 => (true, true),
        _ => (false, false),
    }
}

impl FileNode for Pipe {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        0o666
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        let (reads, writes) = wants(flags);
        if !reads && !writes {
            return Err(Rlerror::new(EINVAL));
        }
        let end = self.state.update(|st| {
            let end = PipeEnd {
                pipe: self.clone(),
                reads,
                writes,
                nonblock: flags.contains(LOpenFlags::NONBLOCK),
                writers_seen: st.writer_opens,
                had_writer: st.writers > 0,
                readers_seen: st.reader_opens,
                had_reader: st.readers > 0,
            };
            if reads {
                st.readers += 1;
                st.reader_opens += 1;
            }
            if writes {
                st.writers += 1;
                st.writer_opens += 1;
            }
            end
        });
        Ok(Box::new(end))
    }
}

impl PipeEnd {
    /// Waits until `ready` gives a result (rules 3 and 4).
    fn wait<R>(&self, ctx: &Ctx, ready: impl FnMut(&mut PipeState) -> Option<R>) -> FsResult<R> {
        let mut ready = ready;
        if self.nonblock {
            return ready(&mut self.pipe.state.lock()).ok_or(Rlerror::new(EAGAIN));
        }
        ctx.wait(&self.pipe.state, ready)
    }

    /// Rule 1's end of file, judged under the pipe's lock.
    fn at_eof(&self, st: &PipeState) -> bool {
        let own = u64::from(self.writes);
        st.buf.is_empty()
            && st.writers == usize::from(self.writes)
            && (self.had_writer || st.writer_opens > self.writers_seen + own)
    }

    /// Rule 2's broken pipe, judged under the pipe's lock.
    fn broken(&self, st: &PipeState) -> bool {
        let own = u64::from(self.reads);
        st.readers == usize::from(self.reads)
            && (self.had_reader || st.reader_opens > self.readers_seen + own)
    }
}

impl OpenFile for PipeEnd {
    fn read(&self, ctx: &Ctx, _: u64, count: u32) -> FsResult<Vec<u8>> {
        if !self.reads {
            return Err(Rlerror::new(nf_ninep::errno::EBADF));
        }
        let take = |st: &mut PipeState| {
            if !st.buf.is_empty() {
                let take = (count as usize).min(st.buf.len());
                Some(st.buf.drain(..take).collect::<Vec<u8>>())
            } else if self.at_eof(st) {
                Some(Vec::new())
            } else {
                None
            }
        };
        let data = self.wait(ctx, take)?;
        if !data.is_empty() {
            // Writers may be waiting for room.
            self.pipe.state.update(|_| ());
        }
        Ok(data)
    }

    fn write(&self, ctx: &Ctx, _: u64, data: &[u8]) -> FsResult<u32> {
        if !self.writes {
            return Err(Rlerror::new(nf_ninep::errno::EBADF));
        }
        if data.is_empty() {
            return Ok(0);
        }
        let capacity = self.pipe.capacity;
        let taken = self.wait(ctx, |st| {
            if self.broken(st) {
                Some(Err(Rlerror::new(EPIPE)))
            } else if st.buf.len() < capacity {
                let take = data.len().min(capacity - st.buf.len());
                st.buf.extend(&data[..take]);
                Some(Ok(take as u32))
            } else {
                None
            }
        })??;
        // Readers may be waiting for data.
        self.pipe.state.update(|_| ());
        Ok(taken)
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        self.pipe.state.update(|st| {
            if self.reads {
                st.readers -= 1;
            }
            if self.writes {
                st.writers -= 1;
            }
        });
    }
}

/// What clients may do in `/pipe`: create pipes and remove them.
pub struct PipeDir {
    capacity: usize,
}

impl PipeDir {
    /// Pipes made here buffer `capacity` bytes.
    pub fn new(capacity: usize) -> Self {
        PipeDir { capacity }
    }
}

impl DirOps for PipeDir {
    fn runs_inline(&self) -> bool {
        true
    }

    fn create(&self, _: &Ctx, _: &str, _: u32) -> FsResult<Arc<dyn FileNode>> {
        Ok(Arc::new(Pipe::new(self.capacity)))
    }

    fn remove(&self, _: &Ctx, _: &str) -> FsResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> Ctx {
        Ctx::background(8192)
    }

    #[test]
    fn eof_after_the_last_writer_and_not_before_the_first() {
        let p = Pipe::new(16);
        let r = p.open(&ctx(), LOpenFlags::RDONLY).unwrap();
        let w = p.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        assert_eq!(w.write(&ctx(), 0, b"hello").unwrap(), 5);
        drop(w);
        assert_eq!(r.read(&ctx(), 0, 3).unwrap(), b"hel");
        assert_eq!(r.read(&ctx(), 0, 9).unwrap(), b"lo");
        assert_eq!(r.read(&ctx(), 0, 9).unwrap(), b"");
    }

    #[test]
    fn full_buffer_takes_part_and_broken_pipe_fails() {
        let p = Pipe::new(4);
        let r = p.open(&ctx(), LOpenFlags::RDONLY).unwrap();
        let w = p.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        assert_eq!(w.write(&ctx(), 0, b"abcdef").unwrap(), 4);
        drop(r);
        assert_eq!(w.write(&ctx(), 0, b"x").unwrap_err().ecode, EPIPE);
    }
}
