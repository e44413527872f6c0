//! Bookkeeping of non-blocking transfers: explicit handles, and per-proc counts of
//! implicit ones (started without a handle; completed by `wait_proc` / `wait_all`).
//!
//! A transfer is made of pieces (one per service request that needs an answer); it
//! completes when its last piece does. Transfers done at once (direct path, puts) have
//! no pieces. The first error of a transfer is kept and returned when it is waited for.

use std::collections::HashMap;

use crate::error::RmaError;

/// Handle number 0: an implicit transfer.
pub(crate) const IMPLICIT: u64 = 0;

struct State {
    proc: usize,
    left: usize,
    err: Option<RmaError>,
}

/// Every transfer not yet waited for.
pub(crate) struct Handles {
    next: u64,
    live: HashMap<u64, State>,
    implicit_left: Vec<usize>,
    implicit_err: Vec<Option<RmaError>>,
}

impl Handles {
    /// Bookkeeping for `size` procs.
    pub(crate) fn new(size: usize) -> Handles {
        Handles {
            next: 1,
            live: HashMap::new(),
            implicit_left: vec![0; size],
            implicit_err: (0..size).map(|_| None).collect(),
        }
    }

    /// A new explicit handle for a transfer to `proc`, with no pieces yet.
    pub(crate) fn open(&mut self, proc: usize) -> u64 {
        let h = self.next;
        self.next += 1;
        self.live.insert(
            h,
            State {
                proc,
                left: 0,
                err: None,
            },
        );
        h
    }

    /// One more piece of transfer `h` (or of an implicit one to `proc`).
    pub(crate) fn add_piece(&mut self, h: u64, proc: usize) {
        match self.live.get_mut(&h) {
            Some(s) => s.left += 1,
            None => self.implicit_left[proc] += 1,
        }
    }

    /// A piece finished, well or not.
    pub(crate) fn piece_done(&mut self, h: u64, proc: usize, r: Result<(), RmaError>) {
        let (left, err) = match self.live.get_mut(&h) {
            Some(s) => (&mut s.left, &mut s.err),
            None => (&mut self.implicit_left[proc], &mut self.implicit_err[proc]),
        };
        *left = left.saturating_sub(1);
        if let Err(e) = r {
            err.get_or_insert(e);
        }
    }

    /// Whether transfer `h` is complete.
    pub(crate) fn done(&self, op: &'static str, h: u64) -> Result<bool, RmaError> {
        self.live
            .get(&h)
            .map(|s| s.left == 0)
            .ok_or(RmaError::UnknownHandle { op, handle: h })
    }

    /// Forgets a complete handle, returning its outcome.
    pub(crate) fn close(&mut self, h: u64) -> Result<(), RmaError> {
        match self.live.remove(&h) {
            Some(State { err: Some(e), .. }) => Err(e),
            _ => Ok(()),
        }
    }

    /// Pieces still outstanding to `proc` (every proc if `None`).
    pub(crate) fn left(&self, proc: Option<usize>) -> usize {
        let explicit: usize = self
            .live
            .values()
            .filter(|s| proc.is_none_or(|p| s.proc == p))
            .map(|s| s.left)
            .sum();
        let implicit: usize = match proc {
            Some(p) => self.implicit_left[p],
            None => self.implicit_left.iter().sum(),
        };
        explicit + implicit
    }

    /// The first error of implicit transfers to `proc` (every proc if `None`), taken.
    pub(crate) fn take_implicit_error(&mut self, proc: Option<usize>) -> Result<(), RmaError> {
        let slot = match proc {
            Some(p) => self.implicit_err[p].take(),
            None => self.implicit_err.iter_mut().find_map(Option::take),
        };
        slot.map_or(Ok(()), Err)
    }
}
