//! The progress thread: drives this proc's RMA endpoint while no one else does, so the
//! provider serves peers' reads and writes of our memory (and finishes our own
//! operations) without the proc's thread calling in.
//!
//! One turn of its loop:
//! 1. `stop` set → return (the endpoint is closed after the join).
//! 2. Lock the endpoint, read its completion queue (`progress`: this is where a manual
//!    provider moves data), and ask `trywait` whether sleeping is safe; unlock.
//! 3. If completions of our own operations wait to be taken, signal `wake` (an
//!    eventfd the origin sleeps on).
//! 4. If `trywait` said yes, sleep in poll(2) on the queue's wait fd and `kick` (the
//!    stop signal); else go round at once.
//!
//! The lock is never held while sleeping, so the proc's thread can issue operations at
//! any time; it then also reads completions itself, and whoever holds the lock does.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use nf_transport::ofi::OfiTransport;

use super::lock;
use crate::error::RmaError;

/// Longest sleep in step 4 (a safety net: the fds wake it when something happens).
const MAX_SLEEP: Duration = Duration::from_millis(100);
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

/// The running thread; stopped and joined when dropped.
pub(crate) struct Progress {
    stop: Arc<AtomicBool>,
    kick: Arc<EventFd>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts driving `ep`, whose completion queue has the wait fd `wait_fd`; signals
    /// `wake` when completions of our operations are ready (step 3).
    pub(crate) fn start(
        ep: Arc<Mutex<OfiTransport>>,
        wait_fd: RawFd,
        wake: Arc<EventFd>,
        rank: usize,
    ) -> Result<Progress, RmaError> {
        let stop = Arc::new(AtomicBool::new(false));
        let kick = Arc::new(EventFd::new()?);
        let (s, k) = (Arc::clone(&stop), Arc::clone(&kick));
        let thread = std::thread::Builder::new()
            .name(format!("nf-rma-ofi-{rank}"))
            .spawn(move || run(&ep, wait_fd, &wake, &k, &s))
            .map_err(|source| RmaError::Io {
                what: "starting the rma progress thread".into(),
                source,
            })?;
        Ok(Progress {
            stop,
            kick,
            thread: Some(thread),
        })
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.kick.signal();
        if let Some(t) = self.thread.take() {
            if t.join().is_err() {
                tracing::warn!("rma: the ofi progress thread panicked");
            }
        }
    }
}

fn run(
    ep: &Mutex<OfiTransport>,
    wait_fd: RawFd,
    wake: &EventFd,
    kick: &EventFd,
    stop: &AtomicBool,
) {
    let mut failed = false;
    // Step 1.
    while !stop.load(Ordering::Acquire) {
        // Step 2.
        let (ready, sleep) = {
            let mut t = lock(ep);
            let r = t.progress().and_then(|_| t.trywait());
            (t.rma_done_waiting(), r)
        };
        // Step 3.
        if ready {
            wake.signal();
        }
        // Step 4.
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
            let mut fds = [wait_fd, kick.fd()].map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            });
            // SAFETY: `fds` is a valid array of two pollfds for the call.
            unsafe { libc::poll(fds.as_mut_ptr(), 2, MAX_SLEEP.as_millis() as i32) };
        }
    }
}
