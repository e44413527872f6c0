//! The doorbell: a receiver that found nothing for a while sleeps in the kernel until
//! a sender publishes something for it, and no publication is slept through.
//!
//! Why sleep at all: a rank that spins, yields or naps while it waits keeps competing
//! for a CPU, so on a shared node the rank that should run next waits out another
//! task's time slice (milliseconds per hop with two CPU hogs beside a token ring). A
//! rank asleep in the kernel is woken by the sender's `FUTEX_WAKE` and gets the
//! scheduler's wake-up preemption.
//!
//! One 32-bit word per receiver, on a line of its own in its segment (`layout.rs`
//! rule 11), is both the "armed" flag and the futex:
//! 1. The receiver arms: `armed = 1`, then a `SeqCst` fence.
//! 2. It re-checks every receive queue (fast boxes and rings); something there:
//!    disarm, no sleep.
//! 3. Otherwise `FUTEX_WAIT` while the word is 1, at most the caller's timeout
//!    (shared, not `FUTEX_PRIVATE_FLAG`: the word is in memory several processes
//!    map). The kernel checks the word and queues the sleeper atomically with
//!    respect to `FUTEX_WAKE` on it.
//! 4. Woken, timed out or interrupted by a signal: disarm and poll again.
//!
//! A sender, after publishing (the `Release` store of a slot's `seq`): a `SeqCst`
//! fence, a load of `armed`; if 1, swap it to 0 and, if it was still 1, `FUTEX_WAKE`.
//!
//! Why nothing is lost: the receiver's store of `armed` and its re-check, and the
//! sender's publication and its load of `armed`, are each separated by a `SeqCst`
//! fence, so at least one side sees the other's store: either the re-check finds the
//! packet, or the sender sees the word armed. The sender then clears the word before
//! waking, so a receiver not yet in the kernel finds it changed and does not sleep
//! (`EAGAIN`), and one already asleep is woken. Model-checked in `loom_doorbell.rs`,
//! with the protocol's own functions below and a futex modelled on loom's locks.
//!
//! Cost: only a sender to an owner whose header says it `sleeps` does anything here —
//! a fence and one load of a line written only when the owner arms. An owner that
//! busy-polls never arms and says so in its header, so its senders skip the doorbell.

use std::time::Duration;

use super::sync::{fence, AtomicU32, Ordering};

/// How the protocol sleeps and wakes: the kernel's futex ([`Kernel`]) or a model's.
pub(crate) trait Futex {
    /// Sleeps while `word` holds `expected`, at most `timeout`; may return early.
    fn wait(&self, word: &AtomicU32, expected: u32, timeout: Duration);
    /// Wakes a sleeper on `word`, if there is one.
    fn wake(&self, word: &AtomicU32);
}

/// The kernel's futex on a word of shared memory.
pub(crate) struct Kernel;

#[cfg(not(all(test, loom)))]
impl Futex for Kernel {
    fn wait(&self, word: &AtomicU32, expected: u32, timeout: Duration) {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: `word` is a live, aligned 32-bit atomic (in a mapping that outlives
        // the call) and `ts` a valid relative timeout; FUTEX_WAIT only reads them. Its
        // outcomes (woken, EAGAIN: the word changed, ETIMEDOUT, EINTR) all mean "poll
        // again", so the result is not needed.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT,
                expected,
                &ts as *const libc::timespec,
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }

    fn wake(&self, word: &AtomicU32) {
        // SAFETY: `word` is a live, aligned 32-bit atomic; FUTEX_WAKE reads no memory
        // and wakes at most one waiter (the owner is the only one).
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAKE,
                1u32,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0u32,
            );
        }
    }
}

/// Model-checking builds: the futex modelled on loom's lock and condition variable,
/// so the models run the transport's own sending code (which rings through
/// [`Kernel`]). The lock stands for the kernel's hash-bucket lock: the check of the
/// word and the queueing of the sleeper are one step with respect to a wake-up. The
/// sleep has no timeout, so a lost wake-up leaves the sleeper blocked for ever and
/// loom reports the deadlock.
#[cfg(all(test, loom))]
impl Futex for Kernel {
    fn wait(&self, word: &AtomicU32, expected: u32, _: Duration) {
        let (lock, sleepers) = &*MODEL_FUTEX;
        let held = lock.lock().unwrap();
        if word.load(Ordering::SeqCst) == expected {
            drop(sleepers.wait(held).unwrap());
        }
    }

    fn wake(&self, _: &AtomicU32) {
        let (lock, sleepers) = &*MODEL_FUTEX;
        let _held = lock.lock().unwrap();
        sleepers.notify_all();
    }
}

#[cfg(all(test, loom))]
loom::lazy_static! {
    /// The modelled kernel's futex queue (one word is ever slept on per model).
    static ref MODEL_FUTEX: (loom::sync::Mutex<()>, loom::sync::Condvar) =
        (loom::sync::Mutex::new(()), loom::sync::Condvar::new());
}

/// What [`sleep`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slept {
    /// The re-check after arming found a packet: no sleep (step 2).
    Pending,
    /// Went to the kernel (step 3); `rung`: a sender cleared the word (rather than
    /// the timeout or a signal ending the sleep).
    Slept {
        /// A sender rang.
        rung: bool,
    },
}

/// Steps 1–4, the receiver's half: arm `word`, re-check with `pending`, sleep at most
/// `timeout` unless something is pending, disarm.
pub(crate) fn sleep(
    word: &AtomicU32,
    pending: impl FnOnce() -> bool,
    timeout: Duration,
    futex: &impl Futex,
) -> Slept {
    word.store(1, Ordering::Relaxed);
    fence(Ordering::SeqCst);
    if pending() {
        word.store(0, Ordering::Relaxed);
        return Slept::Pending;
    }
    futex.wait(word, 1, timeout);
    let rung = word.swap(0, Ordering::Relaxed) == 0;
    Slept::Slept { rung }
}

/// The sender's half, after a publication: wakes the owner of `word` if it is armed.
/// Returns whether it rang.
#[inline]
pub(crate) fn ring(word: &AtomicU32, futex: &impl Futex) -> bool {
    fence(Ordering::SeqCst);
    if word.load(Ordering::Relaxed) == 0 || word.swap(0, Ordering::Relaxed) == 0 {
        return false;
    }
    futex.wake(word);
    true
}
