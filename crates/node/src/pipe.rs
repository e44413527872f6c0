//! `/pipe/NAME` (#p): named pipes between processes and nodes.
//!
//! A pipe exists once it is named: walking to a name in `/pipe` that does not exist
//! makes the pipe (mode 0600, owned by the walker), as does creating the file
//! (`Tlcreate`, with the mode asked for). So a reader and a writer started together
//! (`nf write :/pipe/jobs < work.txt & nf cat :/pipe/jobs`) meet whichever comes first.
//! A pipe is removed like a file. Opening it for reading makes a reader, for writing a
//! writer (`O_RDWR` both); every client of the server — another process, another node —
//! shares the same pipe.
//!
//! Rules (a bounded FIFO, like a Unix pipe):
//!
//! 1. A read returns what is buffered (at most `count` bytes). With nothing buffered it
//!    blocks until a writer writes, or until end of file: nothing is buffered, no writer
//!    is open, and either a writer has opened the pipe since this reader did, or data
//!    was written since a reader last got end of file. So a reader that comes first
//!    waits for its writer; a reader that comes after the last writer left gets the
//!    buffered data, then end of file; and once a stream's end has been read, the next
//!    reader waits for the next writer (one pipe serves round after round; a writer
//!    that only opened and closed it, as creating it does, ends no round).
//! 2. A write takes as much as fits in the buffer (`capacity` bytes) and blocks while it
//!    is full. It fails with `EPIPE` once no reader is open and some reader was open
//!    during this writer's open (nobody will ever read it); before any reader opened,
//!    data waits in the buffer.
//! 3. An end opened with `O_NONBLOCK` gets `EAGAIN` where it would block.
//! 4. Blocked reads and writes return `EINTR` when flushed (`Tflush`) or when their
//!    connection goes; nothing is lost: a flushed read consumed nothing. On the
//!    connection's reader thread (inline) a read or write that would block answers
//!    [`FsError::WouldBlock`] instead, having taken nothing, and the server runs it
//!    again on a worker ([`Ctx::wait`]).
//! 5. Readers and writers are counted per open and uncounted when the fid is clunked
//!    (also by a dropped connection), waking everyone blocked on the pipe.
//! 6. **Owners and permissions.** A pipe belongs to the user who made it; opening it
//!    is checked against its mode like a file's (reading takes data away, so it needs
//!    read permission), and `/pipe` is sticky (mode 1777): only a pipe's owner or root
//!    may remove it.
//! 7. **Budgets** ([`PipeLimits`]): pipes per user and in all, and bytes buffered per
//!    user (charged to the pipe's owner) and in all. Making a pipe past a user's count
//!    fails with `EDQUOT`, past the total with `ENOSPC`; a write that finds the owner's
//!    byte budget spent fails with `EDQUOT` (`ENOSPC` for the total) instead of
//!    growing or waiting: the bytes held elsewhere may never be read. A pipe's bytes
//!    and its count are given back as it is read, and when it is removed and its last
//!    end closed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use nf_ninep::errno::{EAGAIN, EDQUOT, EINVAL, ENOSPC, EPIPE};
use nf_ninep::LOpenFlags;
use nf_ninep_server::{Ctx, FsError, FsResult, Monitor};
use nf_ninep_trees::synthetic::{DirOps, FileNode, OpenFile};

/// Default buffer of one pipe: 64 KiB, as a Linux pipe.
pub const DEFAULT_PIPE_CAPACITY: usize = 64 * 1024;

/// Mode of a pipe made by a walk (rule 6).
const WALK_MODE: u32 = 0o600;

/// The budgets of rule 7.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipeLimits {
    /// Pipes one user may own at once.
    pub pipes_per_user: usize,
    /// Pipes in all.
    pub pipes_total: usize,
    /// Bytes buffered in the pipes one user owns.
    pub bytes_per_user: usize,
    /// Bytes buffered in all pipes.
    pub bytes_total: usize,
}

impl Default for PipeLimits {
    fn default() -> Self {
        PipeLimits {
            pipes_per_user: 64,
            pipes_total: 1024,
            bytes_per_user: 4 << 20,
            bytes_total: 64 << 20,
        }
    }
}

/// Pipes and bytes held, per owner and in all, against [`PipeLimits`] (rule 7).
#[derive(Debug, Default)]
struct Usage {
    pipes: usize,
    bytes: usize,
    per_user: HashMap<u32, (usize, usize)>,
}

/// The budgets, shared by a pipe directory and its pipes.
#[derive(Debug)]
struct Budget {
    limits: PipeLimits,
    usage: Mutex<Usage>,
}

impl Budget {
    fn usage(&self) -> std::sync::MutexGuard<'_, Usage> {
        self.usage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a new pipe of `owner`, or fails (rule 7).
    fn add_pipe(self: &Arc<Self>, owner: u32) -> FsResult<Charge> {
        let mut u = self.usage();
        let mine = u.per_user.get(&owner).map_or(0, |m| m.0);
        if mine >= self.limits.pipes_per_user {
            tracing::warn!(
                uid = owner,
                limit = self.limits.pipes_per_user,
                "pipe refused: the user owns as many pipes as allowed (EDQUOT)"
            );
            return Err(FsError::Errno(EDQUOT));
        }
        if u.pipes >= self.limits.pipes_total {
            tracing::warn!(
                limit = self.limits.pipes_total,
                "pipe refused: the server holds as many pipes as allowed (ENOSPC)"
            );
            return Err(FsError::Errno(ENOSPC));
        }
        u.pipes += 1;
        u.per_user.entry(owner).or_default().0 += 1;
        Ok(Charge {
            budget: Arc::clone(self),
            owner,
        })
    }

    /// Takes up to `want` bytes for `owner`'s pipe: how many, or the error when none.
    fn take_bytes(&self, owner: u32, want: usize) -> FsResult<usize> {
        let mut u = self.usage();
        let mine = u.per_user.get(&owner).map_or(0, |m| m.1);
        let user_room = self.limits.bytes_per_user.saturating_sub(mine);
        let total_room = self.limits.bytes_total.saturating_sub(u.bytes);
        let n = want.min(user_room).min(total_room);
        if n == 0 && want > 0 {
            let ecode = if user_room == 0 { EDQUOT } else { ENOSPC };
            return Err(FsError::Errno(ecode));
        }
        u.bytes += n;
        u.per_user.entry(owner).or_default().1 += n;
        Ok(n)
    }

    fn give_bytes(&self, owner: u32, n: usize) {
        let mut u = self.usage();
        u.bytes -= n;
        if let Some(m) = u.per_user.get_mut(&owner) {
            m.1 -= n;
        }
    }
}

/// One pipe's place in the budget: given back when the pipe goes (rule 7).
#[derive(Debug)]
struct Charge {
    budget: Arc<Budget>,
    owner: u32,
}

impl Drop for Charge {
    fn drop(&mut self) {
        let mut u = self.budget.usage();
        u.pipes -= 1;
        if let Some(m) = u.per_user.get_mut(&self.owner) {
            m.0 -= 1;
            if *m == (0, 0) {
                u.per_user.remove(&self.owner);
            }
        }
    }
}

struct PipeState {
    buf: VecDeque<u8>,
    readers: usize,
    writers: usize,
    /// Opens ever, per side: an open sees the other side's count change (rules 1, 2).
    reader_opens: u64,
    writer_opens: u64,
    /// Whether data was written since a reader last got end of file (rule 1).
    wrote_since_eof: bool,
    /// The pipe's place in the budget; its buffered bytes are charged to the owner.
    charge: Charge,
}

impl Drop for PipeState {
    fn drop(&mut self) {
        self.charge
            .budget
            .give_bytes(self.charge.owner, self.buf.len());
    }
}

/// One named pipe. Clones share it.
#[derive(Clone)]
pub struct Pipe {
    state: Arc<Monitor<PipeState>>,
    capacity: usize,
    owner: (u32, u32),
    mode: u32,
}

impl Pipe {
    fn state(&self) -> &Arc<Monitor<PipeState>> {
        &self.state
    }
}

/// One open of a pipe: a reader, a writer or both.
struct PipeEnd {
    pipe: Pipe,
    reads: bool,
    writes: bool,
    nonblock: bool,
    /// `writer_opens` at open, not counting this end's own (rule 1).
    writers_seen: u64,
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
        self.mode
    }

    fn owner(&self) -> Option<(u32, u32)> {
        Some(self.owner)
    }

    fn open(&self, _: &Ctx, flags: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        let (reads, writes) = wants(flags);
        if !reads && !writes {
            return Err(FsError::Errno(EINVAL));
        }
        let end = self.state().update(|st| {
            let end = PipeEnd {
                pipe: self.clone(),
                reads,
                writes,
                nonblock: flags.contains(LOpenFlags::NONBLOCK),
                writers_seen: st.writer_opens,
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
            return ready(&mut self.pipe.state().lock()).ok_or(FsError::Errno(EAGAIN));
        }
        ctx.wait(self.pipe.state(), ready)
    }

    /// Rule 1's end of file, judged under the pipe's lock.
    fn at_eof(&self, st: &PipeState) -> bool {
        let others = st.writer_opens - u64::from(self.writes);
        st.buf.is_empty()
            && st.writers == usize::from(self.writes)
            && (others > self.writers_seen || st.wrote_since_eof)
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
            return Err(FsError::Errno(nf_ninep::errno::EBADF));
        }
        let take = |st: &mut PipeState| {
            if !st.buf.is_empty() {
                let take = (count as usize).min(st.buf.len());
                st.charge.budget.give_bytes(st.charge.owner, take);
                Some(st.buf.drain(..take).collect::<Vec<u8>>())
            } else if self.at_eof(st) {
                st.wrote_since_eof = false;
                Some(Vec::new())
            } else {
                None
            }
        };
        let data = self.wait(ctx, take)?;
        if !data.is_empty() {
            // Writers may be waiting for room.
            self.pipe.state().update(|_| ());
        }
        Ok(data)
    }

    fn write(&self, ctx: &Ctx, _: u64, data: &[u8]) -> FsResult<u32> {
        if !self.writes {
            return Err(FsError::Errno(nf_ninep::errno::EBADF));
        }
        if data.is_empty() {
            return Ok(0);
        }
        let capacity = self.pipe.capacity;
        let taken = self.wait(ctx, |st| {
            if self.broken(st) {
                Some(Err(FsError::Errno(EPIPE)))
            } else if st.buf.len() < capacity {
                let room = data.len().min(capacity - st.buf.len());
                Some(
                    st.charge
                        .budget
                        .take_bytes(st.charge.owner, room)
                        .map(|take| {
                            st.buf.extend(&data[..take]);
                            st.wrote_since_eof = true;
                            take as u32
                        }),
                )
            } else {
                None
            }
        })??;
        // Readers may be waiting for data.
        self.pipe.state().update(|_| ());
        Ok(taken)
    }
}

impl Drop for PipeEnd {
    fn drop(&mut self) {
        self.pipe.state().update(|st| {
            if self.reads {
                st.readers -= 1;
            }
            if self.writes {
                st.writers -= 1;
            }
        });
    }
}

/// What clients may do in `/pipe`: make pipes (by creating or naming them) and remove
/// them.
pub struct PipeDir {
    capacity: usize,
    budget: Arc<Budget>,
}

impl PipeDir {
    /// Pipes made here buffer `capacity` bytes, within `limits`.
    pub fn new(capacity: usize, limits: PipeLimits) -> Self {
        PipeDir {
            capacity: capacity.max(1),
            budget: Arc::new(Budget {
                limits,
                usage: Mutex::default(),
            }),
        }
    }

    /// A new pipe of mode `mode` for the request's user (the server's outside a
    /// mount table that names one).
    pub fn make(&self, ctx: &Ctx, mode: u32) -> FsResult<Pipe> {
        let creds = ctx.maker();
        let charge = self.budget.add_pipe(creds.uid())?;
        let state = PipeState {
            buf: VecDeque::new(),
            readers: 0,
            writers: 0,
            reader_opens: 0,
            writer_opens: 0,
            wrote_since_eof: false,
            charge,
        };
        Ok(Pipe {
            state: Arc::new(Monitor::new(state)),
            capacity: self.capacity,
            owner: (creds.uid(), creds.gid()),
            mode: mode & 0o777,
        })
    }
}

impl DirOps for PipeDir {
    fn runs_inline(&self) -> bool {
        true
    }

    fn mode(&self) -> u32 {
        0o1777
    }

    fn walk_missing(&self, ctx: &Ctx, _: &str) -> FsResult<Option<Arc<dyn FileNode>>> {
        Ok(Some(Arc::new(self.make(ctx, WALK_MODE)?)))
    }

    fn create(&self, ctx: &Ctx, _: &str, mode: u32) -> FsResult<Arc<dyn FileNode>> {
        Ok(Arc::new(self.make(ctx, mode)?))
    }

    fn remove(&self, _: &Ctx, _: &str) -> FsResult<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nf_ninep_server::Creds;

    fn ctx() -> Ctx {
        Ctx::background(8192)
    }

    fn as_user(uid: u32) -> Ctx {
        ctx().acting_as(&Creds::new(uid, uid, vec![uid]))
    }

    fn pipe(capacity: usize) -> Pipe {
        PipeDir::new(capacity, PipeLimits::default())
            .make(&ctx(), 0o600)
            .unwrap()
    }

    #[test]
    fn eof_after_the_last_writer_and_not_before_the_first() {
        let p = pipe(16);
        let r = p.open(&ctx(), LOpenFlags::RDONLY).unwrap();
        let w = p.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        assert_eq!(w.write(&ctx(), 0, b"hello").unwrap(), 5);
        drop(w);
        assert_eq!(r.read(&ctx(), 0, 3).unwrap(), b"hel");
        assert_eq!(r.read(&ctx(), 0, 9).unwrap(), b"lo");
        assert_eq!(r.read(&ctx(), 0, 9).unwrap(), b"");
    }

    #[test]
    fn a_reader_after_the_last_writer_gets_the_data_then_eof() {
        let p = pipe(16);
        let w = p.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        assert_eq!(w.write(&ctx(), 0, b"late").unwrap(), 4);
        drop(w);
        let r = p.open(&ctx(), LOpenFlags::RDONLY).unwrap();
        assert_eq!(r.read(&ctx(), 0, 9).unwrap(), b"late");
        assert_eq!(r.read(&ctx(), 0, 9).unwrap(), b"");
        let early = pipe(16).open(&ctx(), LOpenFlags::RDONLY | LOpenFlags::NONBLOCK);
        let err = early.unwrap().read(&ctx(), 0, 9).unwrap_err();
        assert_eq!(err, FsError::Errno(EAGAIN), "no writer yet: no end of file");
    }

    #[test]
    fn after_a_stream_ends_the_next_reader_waits_for_the_next_writer() {
        let p = pipe(16);
        for round in 0..3u8 {
            let w = p.open(&ctx(), LOpenFlags::WRONLY).unwrap();
            assert_eq!(w.write(&ctx(), 0, &[round]).unwrap(), 1);
            drop(w);
            let r = p
                .open(&ctx(), LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
                .unwrap();
            assert_eq!(r.read(&ctx(), 0, 9).unwrap(), [round]);
            assert_eq!(r.read(&ctx(), 0, 9).unwrap(), b"", "end of round {round}");
            let next = p
                .open(&ctx(), LOpenFlags::RDONLY | LOpenFlags::NONBLOCK)
                .unwrap();
            assert_eq!(next.read(&ctx(), 0, 9).unwrap_err(), FsError::Errno(EAGAIN));
        }
    }

    #[test]
    fn full_buffer_takes_part_and_broken_pipe_fails() {
        let p = pipe(4);
        let r = p.open(&ctx(), LOpenFlags::RDONLY).unwrap();
        let w = p.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        assert_eq!(w.write(&ctx(), 0, b"abcdef").unwrap(), 4);
        drop(r);
        assert_eq!(w.write(&ctx(), 0, b"x").unwrap_err(), FsError::Errno(EPIPE));
    }

    #[test]
    fn budgets_refuse_instead_of_growing_and_come_back() {
        let limits = PipeLimits {
            pipes_per_user: 2,
            pipes_total: 3,
            bytes_per_user: 10,
            bytes_total: 15,
        };
        let dir = PipeDir::new(8, limits);
        let a1 = dir.make(&as_user(1), 0o600).unwrap();
        let a2 = dir.make(&as_user(1), 0o600).unwrap();
        let edquot = |r: FsResult<Pipe>| r.err().and_then(FsError::errno);
        assert_eq!(edquot(dir.make(&as_user(1), 0o600)), Some(EDQUOT));
        let b1 = dir.make(&as_user(2), 0o600).unwrap();
        assert_eq!(edquot(dir.make(&as_user(3), 0o600)), Some(ENOSPC));

        let w1 = a1.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        let w2 = a2.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        assert_eq!(w1.write(&ctx(), 0, &[7; 8]).unwrap(), 8);
        assert_eq!(
            w2.write(&ctx(), 0, &[7; 8]).unwrap(),
            2,
            "user 1 has 10 bytes"
        );
        assert_eq!(
            w2.write(&ctx(), 0, &[7]).unwrap_err(),
            FsError::Errno(EDQUOT)
        );
        let wb = b1.open(&ctx(), LOpenFlags::WRONLY).unwrap();
        assert_eq!(wb.write(&ctx(), 0, &[7; 8]).unwrap(), 5, "15 in all");
        assert_eq!(
            wb.write(&ctx(), 0, &[7]).unwrap_err(),
            FsError::Errno(ENOSPC)
        );

        let r1 = a1.open(&ctx(), LOpenFlags::RDONLY).unwrap();
        assert_eq!(r1.read(&ctx(), 0, 4).unwrap().len(), 4);
        assert_eq!(
            w2.write(&ctx(), 0, &[7; 8]).unwrap(),
            4,
            "reading gives back"
        );
        drop((w1, r1, a1));
        assert!(
            dir.make(&as_user(1), 0o600).is_ok(),
            "a removed pipe gives back"
        );
    }
}
