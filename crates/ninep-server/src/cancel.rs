//! Cancellation: the token a tree watches while a request blocks, and [`Monitor`], the
//! shared state a blocking read waits on.
//!
//! Every request the server hands to a tree carries a [`Cancel`] token (through
//! [`crate::Ctx`]). The server cancels it when the request is flushed (`Tflush`),
//! when the session is reset (`Tversion`) and when the connection drops. A tree that can
//! block — a stream read, a pipe — must return soon after that, typically with `EINTR`.
//!
//! Rules:
//!
//! 1. Cancelling is one-way and idempotent: once [`Cancel::is_cancelled`] is true it stays
//!    true.
//! 2. A tree blocks on a [`Monitor`] with [`Cancel::wait`]; writers change the monitor's
//!    state with [`Monitor::update`], which wakes every waiter. `wait` also wakes when the
//!    token is cancelled, so no wake-up is lost whichever comes first.
//! 3. Wakers registered by `wait` run on the cancelling thread after the flag is set, and
//!    take only the monitor's lock: code holding a monitor lock must not cancel tokens.
//!    So do the hooks of [`Cancel::on_cancel`], with which the worker pool takes a
//!    cancelled request out of its queue (`pool` rule 4); they take only the pool's
//!    lock, which is never held while a token is cancelled.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Locks `m`, ignoring poisoning: server and tree state stay usable after a panicking tree.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Returned by [`Cancel::wait`] when the request was cancelled (flushed, reset or
/// disconnected). Trees usually answer it with `EINTR`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the request was cancelled (flushed, session reset or connection closed)")]
pub struct Cancelled;

type Waker = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    wakers: Mutex<Wakers>,
}

#[derive(Default)]
struct Wakers {
    next_id: u64,
    list: Vec<(u64, Waker)>,
}

/// A cancellation token shared by the server and the tree serving one request.
#[derive(Clone, Default)]
pub struct Cancel {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl Cancel {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Cancel::default()
    }

    /// True once [`Cancel::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::SeqCst)
    }

    /// Cancels the token and wakes every [`Cancel::wait`] on it. Idempotent.
    pub fn cancel(&self) {
        if self.inner.cancelled.swap(true, Ordering::SeqCst) {
            return;
        }
        let wakers = std::mem::take(&mut lock(&self.inner.wakers).list);
        for (_, wake) in wakers {
            wake();
        }
    }

    /// `Err(Cancelled)` if the token is cancelled: a check for loops that do not block.
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// Blocks until `ready` returns `Some` (called under the monitor's lock, first at
    /// once and then after every [`Monitor::update`]) or until the token is cancelled.
    ///
    /// Cancellation is checked before `ready`, so a cancelled request consumes nothing.
    pub fn wait<T, R>(
        &self,
        monitor: &Arc<Monitor<T>>,
        mut ready: impl FnMut(&mut T) -> Option<R>,
    ) -> Result<R, Cancelled>
    where
        T: Send + 'static,
    {
        self.wait_inner(monitor, None, &mut ready)
            .and_then(|r| r.ok_or(Cancelled))
    }

    /// As [`Cancel::wait`], but gives up after `timeout`, returning `Ok(None)`.
    pub fn wait_timeout<T, R>(
        &self,
        monitor: &Arc<Monitor<T>>,
        timeout: Duration,
        mut ready: impl FnMut(&mut T) -> Option<R>,
    ) -> Result<Option<R>, Cancelled>
    where
        T: Send + 'static,
    {
        self.wait_inner(monitor, Some(Instant::now() + timeout), &mut ready)
    }

    /// Sleeps for `duration` or until cancelled; `Err(Cancelled)` in the second case.
    pub fn sleep(&self, duration: Duration) -> Result<(), Cancelled> {
        let monitor = Arc::new(Monitor::new(()));
        self.wait_timeout(&monitor, duration, |_| None::<()>)
            .map(|_| ())
    }

    fn wait_inner<T, R>(
        &self,
        monitor: &Arc<Monitor<T>>,
        deadline: Option<Instant>,
        ready: &mut dyn FnMut(&mut T) -> Option<R>,
    ) -> Result<Option<R>, Cancelled>
    where
        T: Send + 'static,
    {
        let waker_target = Arc::clone(monitor);
        let id = self.register(Box::new(move || waker_target.wake()));
        let result = {
            let mut state = monitor.lock();
            loop {
                if self.is_cancelled() {
                    break Err(Cancelled);
                }
                if let Some(r) = ready(&mut state) {
                    break Ok(Some(r));
                }
                match deadline {
                    None => {
                        state = monitor
                            .changed
                            .wait(state)
                            .unwrap_or_else(PoisonError::into_inner);
                    }
                    Some(deadline) => {
                        let now = Instant::now();
                        if now >= deadline {
                            break Ok(None);
                        }
                        state = monitor
                            .changed
                            .wait_timeout(state, deadline - now)
                            .unwrap_or_else(PoisonError::into_inner)
                            .0;
                    }
                }
            }
        };
        self.unregister(id);
        result
    }

    /// Runs `hook` once, on the cancelling thread, when the token is cancelled — at
    /// once, on this thread, if it already is (rule 3).
    pub(crate) fn on_cancel(&self, hook: Waker) {
        let mut wakers = lock(&self.inner.wakers);
        // Checked under the list's lock: a `cancel` that set the flag after this check
        // takes the list after the hook is in it.
        if self.is_cancelled() {
            drop(wakers);
            hook();
            return;
        }
        wakers.next_id += 1;
        let id = wakers.next_id;
        wakers.list.push((id, hook));
    }

    fn register(&self, waker: Waker) -> u64 {
        let mut wakers = lock(&self.inner.wakers);
        wakers.next_id += 1;
        let id = wakers.next_id;
        // A token cancelled before this point has already taken the list; the waiter
        // then sees the flag under the monitor lock and never sleeps.
        if !self.is_cancelled() {
            wakers.list.push((id, waker));
        }
        id
    }

    fn unregister(&self, id: u64) {
        lock(&self.inner.wakers).list.retain(|(w, _)| *w != id);
    }
}

/// State behind a mutex whose every change wakes the threads waiting on it.
///
/// Blocking files (streams, pipes) keep their state in a `Monitor` so that
/// [`Cancel::wait`] can wait for "data or cancellation" without polling.
#[derive(Debug, Default)]
pub struct Monitor<T> {
    state: Mutex<T>,
    changed: Condvar,
}

impl<T> Monitor<T> {
    /// A monitor holding `state`.
    pub fn new(state: T) -> Self {
        Monitor {
            state: Mutex::new(state),
            changed: Condvar::new(),
        }
    }

    /// Locks the state to read it (waiters are not woken).
    pub fn lock(&self) -> MutexGuard<'_, T> {
        lock(&self.state)
    }

    /// Changes the state and wakes every waiter.
    pub fn update<R>(&self, change: impl FnOnce(&mut T) -> R) -> R {
        let r = change(&mut self.lock());
        self.changed.notify_all();
        r
    }

    /// Wakes every waiter without changing the state.
    fn wake(&self) {
        // Taking the lock orders this wake-up after a waiter's check of the flag.
        drop(self.lock());
        self.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    #[test]
    fn wait_returns_when_ready() {
        let m = Arc::new(Monitor::new(0u32));
        let c = Cancel::new();
        let m2 = Arc::clone(&m);
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            m2.update(|v| *v = 7);
        });
        let got = c.wait(&m, |v| (*v != 0).then_some(*v)).unwrap();
        assert_eq!(got, 7);
        t.join().unwrap();
    }

    #[test]
    fn cancel_wakes_a_waiter() {
        let m = Arc::new(Monitor::new(()));
        let c = Cancel::new();
        let c2 = c.clone();
        let t = thread::spawn(move || {
            thread::sleep(Duration::from_millis(20));
            c2.cancel();
        });
        assert_eq!(c.wait(&m, |_| None::<()>), Err(Cancelled));
        t.join().unwrap();
        // Already cancelled: returns at once, ready is not consulted.
        assert_eq!(c.wait(&m, |_| Some(())), Err(Cancelled));
    }

    #[test]
    fn timeout_and_sleep() {
        let m = Arc::new(Monitor::new(()));
        let c = Cancel::new();
        let r = c.wait_timeout(&m, Duration::from_millis(10), |_| None::<()>);
        assert_eq!(r, Ok(None));
        assert_eq!(c.sleep(Duration::from_millis(1)), Ok(()));
        c.cancel();
        assert_eq!(c.sleep(Duration::from_secs(60)), Err(Cancelled));
    }
}
