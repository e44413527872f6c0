//! Noticing SIGINT and SIGTERM sent to the launcher, so they can be passed on to the ranks.
//!
//! Rules:
//! 1. The handler only bumps an atomic counter and records the signal number (both
//!    async-signal-safe); the supervisor polls them.
//! 2. Handlers are installed when the first [`SignalWatch`] is created and the previous
//!    dispositions restored when the last one is dropped, so concurrent jobs in one
//!    process (tests) share them.
//! 3. A signal that was ignored when the first watch was created (`nohup`, background
//!    jobs of a non-interactive shell) stays ignored.

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Signals received since the process started.
static RECEIVED: AtomicU64 = AtomicU64::new(0);
/// The latest of them.
static LAST: AtomicI32 = AtomicI32::new(0);
/// Live watches and the dispositions to restore when the last one goes.
static INSTALLED: Mutex<Option<Installed>> = Mutex::new(None);

const WATCHED: [libc::c_int; 2] = [libc::SIGINT, libc::SIGTERM];

struct Installed {
    watches: usize,
    /// Previous disposition of each signal we took over.
    saved: Vec<(libc::c_int, libc::sigaction)>,
}

// SAFETY: `libc::sigaction` is plain data (a handler address, a mask and flags); moving it
// between threads is sound. The raw pointer inside makes it !Send only formally.
unsafe impl Send for Installed {}

extern "C" fn on_signal(sig: libc::c_int) {
    LAST.store(sig, Ordering::SeqCst);
    RECEIVED.fetch_add(1, Ordering::SeqCst);
}

/// While alive, SIGINT and SIGTERM are caught; [`SignalWatch::take`] reports them.
#[derive(Debug)]
pub(crate) struct SignalWatch {
    seen: u64,
}

impl SignalWatch {
    /// Starts catching SIGINT and SIGTERM (if not ignored).
    pub(crate) fn install() -> io::Result<SignalWatch> {
        // Counted before the handlers go in: a signal that lands while they are being
        // installed is then reported, not folded into the starting count and lost.
        let seen = RECEIVED.load(Ordering::SeqCst);
        let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
        match installed.as_mut() {
            Some(i) => i.watches += 1,
            None => {
                let mut saved = Vec::new();
                for sig in WATCHED {
                    match catch(sig) {
                        Ok(Some(old)) => saved.push((sig, old)),
                        Ok(None) => {}
                        Err(e) => {
                            restore(&saved);
                            return Err(e);
                        }
                    }
                }
                *installed = Some(Installed { watches: 1, saved });
            }
        }
        Ok(SignalWatch { seen })
    }

    /// The signal received since the previous call (or since install), if any.
    pub(crate) fn take(&mut self) -> Option<i32> {
        let now = RECEIVED.load(Ordering::SeqCst);
        if now == self.seen {
            return None;
        }
        self.seen = now;
        Some(LAST.load(Ordering::SeqCst))
    }
}

impl Drop for SignalWatch {
    fn drop(&mut self) {
        let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = installed.as_mut() {
            i.watches -= 1;
            if i.watches == 0 {
                restore(&i.saved);
                *installed = None;
            }
        }
    }
}

/// Installs our handler for `sig` and returns the old disposition; `None` if it was ignored.
fn catch(sig: libc::c_int) -> io::Result<Option<libc::sigaction>> {
    // SAFETY: a zeroed sigaction is a valid "default" value.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: sigaction with a null new action only reads the current disposition
    // into `old`, a live local.
    if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if old.sa_sigaction == libc::SIG_IGN {
        return Ok(None);
    }
    // SAFETY: as above; the handler only touches atomics, which is async-signal-safe, and
    // `sa_mask` is initialised by sigemptyset before use.
    unsafe {
        let mut new: libc::sigaction = std::mem::zeroed();
        new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        new.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut new.sa_mask);
        if libc::sigaction(sig, &new, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(Some(old))
}

fn restore(saved: &[(libc::c_int, libc::sigaction)]) {
    for (sig, old) in saved {
        // SAFETY: `old` is a disposition the kernel gave us for this very signal.
        unsafe { libc::sigaction(*sig, old, std::ptr::null_mut()) };
    }
}
