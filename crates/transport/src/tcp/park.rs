//! Parking: the owner sleeps in `poll(2)` until something may have arrived, instead of
//! spinning (poll-then-block; the core decides when a wait has spun long
//! enough, see `nf-core`'s `NF_PARK_US`).
//!
//! What wakes a parked owner, and why nothing that arrives is slept through:
//! 1. Bytes on any connection (`POLLIN`, level-triggered): on one the owner holds
//!    it reads them itself at its next poll; on one the progress thread serves the
//!    thread reads them into the inbox, and
//! 2. a deposit in the inbox rings the [`Bell`] if the owner is parked. The owner
//!    announces `parked` and then checks the inbox; the depositor makes its arrivals
//!    visible and then checks `parked`; each puts a `SeqCst` fence between its store
//!    and its load, so at least one sees the other (an arrival is either seen before
//!    sleeping or rings the bell; model-checked in `loom_tests.rs`).
//! 3. Room to write on a connection with queued bytes (`POLLOUT`): while the owner
//!    holds a connection only its polls write the queue out.
//! 4. The timeout: the caller bounds every park.
//!
//! Connections the owner holds stay held while it parks (their quiet clocks restart):
//! it waits for them, so a wake-up reads them at once rather than through the thread.

use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use super::sync::{fence, AtomicBool, Ordering};
use super::TcpTransport;
use crate::error::TransportError;

/// How a depositor wakes a parked owner: a datagram on a socket pair.
pub(crate) struct Bell {
    ring: UnixDatagram,
    hear: UnixDatagram,
    parked: AtomicBool,
}

impl Bell {
    /// A silent bell.
    pub(crate) fn new() -> io::Result<Bell> {
        let (ring, hear) = UnixDatagram::pair()?;
        ring.set_nonblocking(true)?;
        hear.set_nonblocking(true)?;
        Ok(Bell {
            ring,
            hear,
            parked: AtomicBool::new(false),
        })
    }

    /// Step 2, the depositor's half: rings if the owner is parked (call after making
    /// arrivals visible).
    pub(crate) fn ring_if_parked(&self) {
        fence(Ordering::SeqCst);
        if self.parked.load(Ordering::Relaxed) {
            // A full socket already holds a ring: nothing is lost by dropping this one.
            let _ = self.ring.send(&[1]);
        }
    }

    /// Step 2, the owner's half: it is about to park (then it checks the inbox).
    pub(crate) fn announce(&self) {
        self.parked.store(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// The owner is awake again: no more rings, and those that came are forgotten.
    /// Returns whether any came.
    pub(crate) fn leave(&self) -> bool {
        self.parked.store(false, Ordering::SeqCst);
        let mut sink = [0u8; 16];
        let mut heard = false;
        while self.hear.recv(&mut sink).is_ok() {
            heard = true;
        }
        heard
    }
}

impl TcpTransport {
    /// Sleeps until a connection has bytes to read (or room for queued bytes), an
    /// arrival is deposited, or `timeout` passes; returns at once if arrivals wait.
    pub fn park(&mut self, timeout: Duration) -> Result<(), TransportError> {
        self.keep_held();
        let streams: Vec<_> = self.sh.peers.iter().filter_map(|p| p.parkable()).collect();
        let bell = &self.sh.inbox.bell;
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(streams.len() + 1);
        fds.push(pollfd(bell.hear.as_raw_fd(), libc::POLLIN));
        for (stream, backlog) in &streams {
            let out = if *backlog { libc::POLLOUT } else { 0 };
            fds.push(pollfd(stream.as_raw_fd(), libc::POLLIN | out));
        }
        bell.announce();
        let result = if self.sh.inbox.waiting() || !self.taken.is_empty() {
            0
        } else {
            let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            // SAFETY: `fds` is a valid, initialised array of `fds.len()` pollfd structs
            // that outlives the call; the descriptors stay open because `streams` and
            // the bell hold them.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) }
        };
        bell.leave();
        if result < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(TransportError::Net {
                    what: "waiting in poll(2) for the tcp connections of",
                    addr: self.addr,
                    source: e,
                });
            }
        }
        Ok(())
    }
}

fn pollfd(fd: libc::c_int, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}
