//! The progress thread: drives this proc's RMA endpoint while no one else does, so the
//! provider serves peers' reads and writes of our memory (and finishes our own
//! operations) without the proc's thread calling in.
//!
//! One turn of its loop:
//! 1. `stop` set → return (the endpoint is closed after the join).
//! 2. The proc's thread is driving the endpoint itself (spinning in a wait), or did
//!    less than [`PARK`] ago: park — sleep on `kick` only, for at most [`PARK`] — and go
//!    round. One thread driving is enough; a second one woken by every arrival would
//!    only take the core from the first on a busy host.
//! 3. Lock the endpoint, read its completion queue (`progress`: this is where a manual
//!    provider moves data), and ask `trywait` whether sleeping is safe; unlock.
//! 4. If completions of our own operations wait to be taken, signal `wake` (an
//!    eventfd the origin sleeps on).
//! 5. If `trywait` said yes, sleep in poll(2) on the queue's wait fd and `kick`; else
//!    go round at once.
//!
//! The lock is never held while sleeping, so the proc's thread can issue operations at
//! any time; it then also reads completions itself, and whoever holds the lock does.
//! Before the proc's thread sleeps it hands driving back at once, kicking a parked
//! progress thread ([`Handoff::end_drive`]); when it returns to its own work instead,
//! the progress thread resumes within [`PARK`] to [`PARK`]·2, so a peer's operation
//! arriving just then may wait that long.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nf_transport::rma::NativeRma;

use super::lock;
use crate::error::RmaError;

/// Longest sleep in step 5 (a safety net: the fds wake it when something happens).
const MAX_SLEEP: Duration = Duration::from_millis(100);
/// Longest park in step 2.
pub(crate) const PARK: Duration = Duration::from_millis(1);
/// Pause after a failed provider call, so a broken endpoint does not spin a core.
const AFTER_ERROR: Duration = Duration::from_millis(10);

/// A nonblocking eventfd: a level-triggered signal between threads.
pub(crate) struct EventFd(OwnedFd);

impl EventFd {
    pub(crate) fn new() -> Result<EventFd, RmaError> {
        // SAFETY: eventfd takes no pointers; a non-negative result is a new fd we own.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(RmaError::Io {
                what: "creating an eventfd for the rma progress thread".into(),
                source: std::io::Error::last_os_error(),
            });
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(crate) fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Makes the fd readable (until [`EventFd::clear`]).
    pub(crate) fn signal(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a live u64 to our fd; a full counter (EAGAIN) is
        // still a signal, so the result does not matter.
        unsafe { libc::write(self.fd(), (&one as *const u64).cast(), 8) };
    }

    /// Makes the fd unreadable again.
    pub(crate) fn clear(&self) {
        let mut n = 0u64;
        // SAFETY: reads at most 8 bytes into a live u64; EAGAIN (not signalled) is fine.
        unsafe { libc::read(self.fd(), (&mut n as *mut u64).cast(), 8) };
    }
}

/// What the proc's thread and the progress thread share besides the endpoint.
pub(crate) struct Handoff {
    /// Readable once the progress thread has read completions of our operations.
    wake: EventFd,
    /// Whether `wake` was signalled since it was last cleared (spares a system call
    /// per poll of a waiting origin).
    woken: AtomicBool,
    /// The proc's thread is driving the endpoint (step 2).
    driving: AtomicBool,
    /// Until when (µs since `epoch`) the proc's thread counts as driving after its last
    /// wait ended.
    recent_until: AtomicU64,
    epoch: Instant,
    /// The progress thread is parked because of `driving`.
    parked: AtomicBool,
    /// Wakes a parked or sleeping progress thread.
    kick: EventFd,
    stop: AtomicBool,
}

impl Handoff {
    /// The fd a waiting origin sleeps on.
    pub(crate) fn wake_fd(&self) -> RawFd {
        self.wake.fd()
    }

    /// Forgets the wake-up signal (before reading completions: a signal after this is
    /// for completions that read may not see).
    pub(crate) fn clear_wake(&self) {
        if self.woken.swap(false, Ordering::AcqRel) {
            self.wake.clear();
        }
    }

    fn signal_wake(&self) {
        if !self.woken.swap(true, Ordering::AcqRel) {
            self.wake.signal();
        }
    }

    fn now_us(&self) -> u64 {
        self.epoch.elapsed().as_micros() as u64
    }

    /// The proc's thread starts driving the endpoint itself (spinning in a wait).
    pub(crate) fn begin_drive(&self) {
        self.driving.store(true, Ordering::SeqCst);
    }

    /// The proc's thread stops driving: to sleep (`sleeping`: the progress thread takes
    /// over at once) or to return to its own work (it takes over after [`PARK`]).
    pub(crate) fn end_drive(&self, sleeping: bool) {
        let until = if sleeping {
            0
        } else {
            self.now_us() + PARK.as_micros() as u64
        };
        // SeqCst here and in step 2: either the progress thread sees that we stopped
        // and does not park, or we see `parked` and kick it.
        self.recent_until.store(until, Ordering::SeqCst);
        self.driving.store(false, Ordering::SeqCst);
        if sleeping && self.parked.load(Ordering::SeqCst) {
            self.kick.signal();
        }
    }

    /// Step 2's test.
    fn busy(&self) -> bool {
        self.driving.load(Ordering::SeqCst)
            || self.now_us() < self.recent_until.load(Ordering::SeqCst)
    }
}

/// The running thread; stopped and joined when dropped.
pub(crate) struct Progress {
    handoff: Arc<Handoff>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts driving `ep`, whose completion queue has the wait fd `wait_fd`.
    pub(crate) fn start<E: NativeRma + Send + 'static>(
        ep: Arc<Mutex<E>>,
        wait_fd: RawFd,
        rank: usize,
    ) -> Result<Progress, RmaError> {
        let handoff = Arc::new(Handoff {
            wake: EventFd::new()?,
            woken: AtomicBool::new(false),
            driving: AtomicBool::new(false),
            recent_until: AtomicU64::new(0),
            epoch: Instant::now(),
            parked: AtomicBool::new(false),
            kick: EventFd::new()?,
            stop: AtomicBool::new(false),
        });
        let h = Arc::clone(&handoff);
        let thread = std::thread::Builder::new()
            .name(format!("nf-rma-ofi-{rank}"))
            .spawn(move || run(&ep, wait_fd, &h))
            .map_err(|source| RmaError::Io {
                what: "starting the rma progress thread".into(),
                source,
            })?;
        Ok(Progress {
            handoff,
            thread: Some(thread),
        })
    }

    /// What the proc's thread shares with the progress thread.
    pub(crate) fn handoff(&self) -> &Handoff {
        &self.handoff
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.handoff.stop.store(true, Ordering::Release);
        self.handoff.kick.signal();
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::warn!("rma: the ofi progress thread panicked");
            }
        }
    }
}

/// Sleeps until one of `fds` is readable, at most `at_most`.
pub(crate) fn sleep_on(fds: &[RawFd], at_most: Duration) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = at_most.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: `p` is a valid array of `p.len()` pollfds for the call.
    unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
}

fn run<E: NativeRma>(ep: &Mutex<E>, wait_fd: RawFd, h: &Handoff) {
    let mut failed = false;
    // Step 1.
    while !h.stop.load(Ordering::Acquire) {
        // Step 2.
        if h.busy() {
            h.parked.store(true, Ordering::SeqCst);
            if h.busy() {
                sleep_on(&[h.kick.fd()], PARK);
                h.kick.clear();
            }
            h.parked.store(false, Ordering::SeqCst);
            continue;
        }
        // Step 3.
        let (ready, sleep) = {
            let mut t = lock(ep);
            let r = t.progress().and_then(|_| t.trywait());
            (t.rma_done_waiting(), r)
        };
        // Step 4.
        if ready {
            h.signal_wake();
        }
        // Step 5.
        let sleep = match sleep {
            Ok(s) => {
                failed = false;
                s
            }
            Err(e) => {
                if !failed {
                    tracing::warn!("rma: the ofi progress thread: {e}");
                }
                failed = true;
                std::thread::sleep(AFTER_ERROR);
                false
            }
        };
        if sleep {
            sleep_on(&[wait_fd, h.kick.fd()], MAX_SLEEP);
            h.kick.clear();
        }
    }
}
