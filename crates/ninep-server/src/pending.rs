//! Requests in flight on one connection, and the flushes waiting for them.
//!
//! Rules:
//!
//! 1. A tag is in use from the moment its request passes its checks until its reply (or
//!    its `Rflush`) has been sent. A `Tflush` waiting for its target uses its own tag too.
//! 2. Flushing a tag that is in flight cancels its token and queues the flush's tag on
//!    it; flushing a waiting flush queues behind the same target; flushing anything else
//!    is answered at once.
//! 3. When a request finishes, its entry leaves the table together with the flushes
//!    queued on it, in the order they came: the connection sends the reply (if it still
//!    may) and then one `Rflush` per queued flush.
//! 4. Aborting (on `Tversion` or disconnect) cancels every request and marks it so that
//!    neither its reply nor its flushes are sent.

use std::collections::HashMap;

use crate::cancel::Cancel;

/// One request in flight.
pub(crate) struct Pending {
    /// Cancelled by flush, abort or disconnect.
    pub cancel: Cancel,
    /// Tags of the `Tflush`es waiting for this request, oldest first.
    pub flushers: Vec<u16>,
    /// Set by [`PendingTable::abort_all`]: send nothing for this request.
    pub aborted: bool,
}

/// What to do about a `Tflush`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FlushOutcome {
    /// The target is in flight: `Rflush` goes out after it finishes.
    Deferred,
    /// Nothing to wait for: answer `Rflush` now.
    AnswerNow,
}

/// Tag → request in flight, for one connection.
#[derive(Default)]
pub(crate) struct PendingTable {
    requests: HashMap<u16, Pending>,
    /// Waiting flush tag → the request tag it waits for.
    flushes: HashMap<u16, u16>,
}

impl PendingTable {
    /// Requests in flight (waiting flushes not counted).
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// True if `tag` belongs to a request or flush not answered yet.
    pub fn in_use(&self, tag: u16) -> bool {
        self.requests.contains_key(&tag) || self.flushes.contains_key(&tag)
    }

    /// Registers request `tag` (the caller checked [`PendingTable::in_use`]) and returns
    /// its cancellation token.
    pub fn start(&mut self, tag: u16) -> Cancel {
        let cancel = Cancel::new();
        self.requests.insert(
            tag,
            Pending {
                cancel: cancel.clone(),
                flushers: Vec::new(),
                aborted: false,
            },
        );
        cancel
    }

    /// Handles `Tflush(oldtag)` carried by `tag`.
    pub fn flush(&mut self, tag: u16, oldtag: u16) -> FlushOutcome {
        let target = self.flushes.get(&oldtag).copied().unwrap_or(oldtag);
        match self.requests.get_mut(&target) {
            Some(pending) if !pending.aborted => {
                pending.flushers.push(tag);
                pending.cancel.cancel();
                self.flushes.insert(tag, target);
                FlushOutcome::Deferred
            }
            _ => FlushOutcome::AnswerNow,
        }
    }

    /// Removes finished request `tag` and the flushes waiting for it.
    pub fn finish(&mut self, tag: u16) -> Option<Pending> {
        let pending = self.requests.remove(&tag)?;
        for flush in &pending.flushers {
            self.flushes.remove(flush);
        }
        Some(pending)
    }

    /// Cancels every request; nothing will be sent for any of them.
    pub fn abort_all(&mut self) {
        for pending in self.requests.values_mut() {
            pending.aborted = true;
            pending.flushers.clear();
            pending.cancel.cancel();
        }
        self.flushes.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flush_queues_behind_the_target() {
        let mut t = PendingTable::default();
        let c = t.start(1);
        assert_eq!(t.flush(2, 1), FlushOutcome::Deferred);
        assert!(c.is_cancelled());
        assert!(t.in_use(2));
        // Flushing the flush waits for the same target.
        assert_eq!(t.flush(3, 2), FlushOutcome::Deferred);
        assert_eq!(t.flush(4, 99), FlushOutcome::AnswerNow);
        let done = t.finish(1).unwrap();
        assert_eq!(done.flushers, [2, 3]);
        assert!(!t.in_use(2) && !t.in_use(3) && t.is_empty());
    }

    #[test]
    fn abort_cancels_and_silences() {
        let mut t = PendingTable::default();
        let c = t.start(5);
        t.flush(6, 5);
        t.abort_all();
        assert!(c.is_cancelled());
        assert!(!t.in_use(6));
        let done = t.finish(5).unwrap();
        assert!(done.aborted && done.flushers.is_empty());
    }
}
