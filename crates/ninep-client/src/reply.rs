//! A call's reply slot: whoever receives puts the reply in, the call takes it out.
//!
//! One slot, as a `sync_channel(1)` would be, made of a mutex and a condition variable
//! from `sync.rs`, so the loom models (`loom_tests.rs`) check it with the rest of
//! `rpc.rs`. Dropping the sending half without sending hangs up: the call's wait ends
//! with [`RecvTimeoutError::Disconnected`] (the connection failed).

use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use crate::sync::{lock, Condvar, Mutex};
use nf_ninep::message::Rmessage;

struct Slot {
    state: Mutex<State>,
    /// Wakes the call sleeping in [`ReplyRx::recv_until`].
    ready: Condvar,
}

#[derive(Default)]
struct State {
    reply: Option<Rmessage>,
    /// The sending half is gone: nothing comes beyond `reply`.
    ended: bool,
    /// The call sleeps on `ready`; only then is it notified (a wake-up is a system call).
    asleep: bool,
}

/// The sending half, registered under the call's tag.
pub(crate) struct ReplyTx(Option<Arc<Slot>>);

/// The call's half.
pub(crate) struct ReplyRx(Arc<Slot>);

/// A new, empty slot's two halves.
pub(crate) fn reply_slot() -> (ReplyTx, ReplyRx) {
    let slot = Arc::new(Slot {
        state: Mutex::new(State::default()),
        ready: Condvar::new(),
    });
    (ReplyTx(Some(Arc::clone(&slot))), ReplyRx(slot))
}

impl ReplyTx {
    /// Puts the reply in and wakes the call if it sleeps.
    pub(crate) fn send(mut self, reply: Rmessage) {
        self.end(Some(reply));
    }

    /// Ends the slot, with `reply` or without (hanging up).
    fn end(&mut self, reply: Option<Rmessage>) {
        let Some(slot) = self.0.take() else {
            return;
        };
        let mut s = lock(&slot.state);
        if reply.is_some() {
            s.reply = reply;
        }
        s.ended = true;
        let asleep = s.asleep;
        drop(s);
        if asleep {
            slot.ready.notify_one();
        }
    }
}

impl Drop for ReplyTx {
    fn drop(&mut self) {
        self.end(None);
    }
}

impl ReplyRx {
    /// The reply, if it is there.
    pub(crate) fn try_recv(&self) -> Option<Rmessage> {
        lock(&self.0.state).reply.take()
    }

    /// Waits for the reply until `deadline` (`None`: as long as it takes): `Timeout`
    /// once it passed, `Disconnected` once the sending half went without a reply.
    pub(crate) fn recv_until(
        &self,
        deadline: Option<Instant>,
    ) -> Result<Rmessage, RecvTimeoutError> {
        let mut s = lock(&self.0.state);
        loop {
            if let Some(reply) = s.reply.take() {
                return Ok(reply);
            }
            if s.ended {
                return Err(RecvTimeoutError::Disconnected);
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left.is_some_and(|left| left.is_zero()) {
                return Err(RecvTimeoutError::Timeout);
            }
            s.asleep = true;
            s = match left {
                None => self.0.ready.wait(s).unwrap_or_else(PoisonError::into_inner),
                Some(left) => {
                    let waited = self.0.ready.wait_timeout(s, left);
                    waited.unwrap_or_else(PoisonError::into_inner).0
                }
            };
            s.asleep = false;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use nf_ninep::message::Rlerror;
    use std::thread;
    use std::time::Duration;

    fn reply(ecode: u32) -> Rmessage {
        Rlerror { ecode }.into()
    }

    #[test]
    fn a_reply_sent_before_the_wait_is_there_and_taken_once() {
        let (tx, rx) = reply_slot();
        tx.send(reply(7));
        assert_eq!(rx.try_recv(), Some(reply(7)));
        assert_eq!(rx.try_recv(), None);
        assert_eq!(rx.recv_until(None), Err(RecvTimeoutError::Disconnected));
    }

    /// Waits with a deadline far off, so a missed wake-up fails (woken only by the
    /// deadline) rather than hangs; the loom models check waits without one.
    #[test]
    fn a_sleeping_call_is_woken_by_the_reply_and_by_a_hang_up() {
        let far = || Some(Instant::now() + Duration::from_secs(10));
        let start = Instant::now();
        let (tx, rx) = reply_slot();
        let sender = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            tx.send(reply(3));
        });
        assert_eq!(rx.recv_until(far()), Ok(reply(3)));
        sender.join().unwrap();

        let (tx, rx) = reply_slot();
        let dropper = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            drop(tx);
        });
        assert_eq!(rx.recv_until(far()), Err(RecvTimeoutError::Disconnected));
        dropper.join().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "woken by the deadline"
        );
    }

    #[test]
    fn a_wait_with_a_deadline_ends_with_timeout_and_the_reply_still_comes() {
        let (tx, rx) = reply_slot();
        let start = Instant::now();
        let waited = rx.recv_until(Some(start + Duration::from_millis(30)));
        assert_eq!(waited, Err(RecvTimeoutError::Timeout));
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert_eq!(
            rx.recv_until(Some(Instant::now())),
            Err(RecvTimeoutError::Timeout)
        );
        tx.send(reply(1));
        assert_eq!(rx.recv_until(Some(Instant::now())), Ok(reply(1)));
    }
}
