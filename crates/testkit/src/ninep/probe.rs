//! [`Probe`]: a synthetic file that records what was written to it and serves what it
//! holds, and sees whether requests were in flight together: each read or write waits
//! (bounded) inside for a second one to arrive.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nf_ninep::LOpenFlags;
use nf_ninep_server::{Ctx, FsError, FsResult};
use nf_ninep_trees::synthetic::{FileNode, OpenFile};

/// How long a request inside waits for company: a request in flight beside it arrives
/// at once; a client that sends one at a time leaves each to end by this.
const COMPANY: Duration = Duration::from_millis(300);

/// What a [`Probe`] holds and saw; tests set the failures.
#[derive(Default, Debug)]
pub struct Seen {
    /// The file's bytes: what was written, or what reads are served.
    pub data: Vec<u8>,
    /// Where a stream's reads have got to (reads of a positional file use their offset).
    pub read_to: usize,
    /// The next write at this offset takes only half its bytes (a disk filling up).
    pub short_at: Option<u64>,
    /// A write at this offset fails with `ENOSPC` (a full disk).
    pub fail_at: Option<u64>,
    /// A read at this offset fails with `EIO`.
    pub fail_read_at: Option<u64>,
    inside: usize,
    /// The most reads or writes that were inside at once.
    pub most_inside: usize,
}

/// A synthetic file (`positional`: reads and writes at their offset, its size reported;
/// else a stream: the offset ignored, size 0, `QTAPPEND`) that records the most
/// requests inside it at once.
#[derive(Clone)]
pub struct Probe {
    positional: bool,
    /// How long a request inside waits for company.
    company: Duration,
    seen: Arc<(Mutex<Seen>, Condvar)>,
}

impl Probe {
    /// An empty probe.
    pub fn new(positional: bool) -> Probe {
        Probe {
            positional,
            company: COMPANY,
            seen: Arc::default(),
        }
    }

    /// The same probe waiting `company` for company (longer than the other side of a
    /// copy takes to send the next request, which the default may not be).
    pub fn waiting(self, company: Duration) -> Probe {
        Probe { company, ..self }
    }

    /// A probe holding `data`, to be read.
    pub fn holding(positional: bool, data: &[u8]) -> Probe {
        let probe = Probe::new(positional);
        probe.state().data = data.to_vec();
        probe
    }

    /// What it holds and saw (to read, or to set failures in).
    pub fn state(&self) -> MutexGuard<'_, Seen> {
        self.seen.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The bytes it holds and the most requests that were inside at once.
    pub fn seen(&self) -> (Vec<u8>, usize) {
        let s = self.state();
        (s.data.clone(), s.most_inside)
    }

    /// Counts a request in, waits for company (bounded), counts it out.
    fn keep_company<'a>(&'a self, mut s: MutexGuard<'a, Seen>) -> MutexGuard<'a, Seen> {
        let cv = &self.seen.1;
        s.inside += 1;
        s.most_inside = s.most_inside.max(s.inside);
        cv.notify_all();
        let deadline = Instant::now() + self.company;
        while s.inside < 2 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            s = cv
                .wait_timeout(s, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        s.inside -= 1;
        s
    }
}

impl FileNode for Probe {
    fn positional(&self) -> bool {
        self.positional
    }

    fn size(&self) -> u64 {
        match self.positional {
            true => self.state().data.len() as u64,
            false => 0,
        }
    }

    fn open(&self, _: &Ctx, _: LOpenFlags) -> FsResult<Box<dyn OpenFile>> {
        Ok(Box::new(self.clone()))
    }
}

impl OpenFile for Probe {
    fn read(&self, _: &Ctx, offset: u64, count: u32) -> FsResult<Vec<u8>> {
        let mut s = self.state();
        if s.fail_read_at == Some(offset) {
            return Err(FsError::Errno(nf_ninep::errno::EIO));
        }
        let at = match self.positional {
            true => offset as usize,
            false => s.read_to,
        };
        let end = (at + count as usize).min(s.data.len());
        let data = s.data.get(at..end).unwrap_or_default().to_vec();
        s.read_to = at + data.len();
        drop(self.keep_company(s));
        Ok(data)
    }

    fn write(&self, _: &Ctx, offset: u64, data: &[u8]) -> FsResult<u32> {
        let mut s = self.state();
        if s.fail_at == Some(offset) {
            return Err(FsError::Errno(nf_ninep::errno::ENOSPC));
        }
        let data = if s.short_at == Some(offset) {
            s.short_at = None;
            &data[..data.len() / 2]
        } else {
            data
        };
        let at = match self.positional {
            true => offset as usize,
            false => s.data.len(),
        };
        if s.data.len() < at + data.len() {
            s.data.resize(at + data.len(), 0);
        }
        s.data[at..at + data.len()].copy_from_slice(data);
        drop(self.keep_company(s));
        Ok(data.len() as u32)
    }
}
