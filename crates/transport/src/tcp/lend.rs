//! Large frames written from the sender's own buffer, without the copy into the queue.
//!
//! A plain send copies into the peer's queue whatever its socket did not take at once;
//! the socket's buffer holds a few MiB, so a 16 MiB frame was mostly copied once more
//! in user space before the kernel copied it again. A send through a [`Lender`]
//! leaves that rest in the caller's buffer instead:
//! 1. The frame goes out as in `tx.rs`; if at least [`LEND_MIN`] payload bytes stay
//!    unsent (and nothing waited before the frame), the peer's `Tx` records where they
//!    are (a *loan*, `Tx::lent`) instead of copying them.
//! 2. The caller's `wait` runs while the loan is out. Whoever drains the peer's queue
//!    (the progress thread on writable, the owner's polls, the next send to the peer)
//!    writes the lent bytes first, then what was queued behind them: order holds.
//! 3. When `wait` returns (or unwinds), whatever is still lent is copied into the
//!    front of the queue, as a plain send would have done at once, and the buffer is
//!    no longer read. A caller that stops waiting early (its peer stopped reading)
//!    thus loses nothing; it only pays the copy it would have paid anyway.
//!
//! Why a closure: the loan points into `payload`, which must outlive it. A guard the
//! caller could forget would make that a promise; a scope that ends the loan on every
//! way out makes it a fact. The [`Lender`] is a handle apart from the transport so
//! that `wait` may poll the transport (and so let it receive) while the loan is out:
//! a rank waiting for its own send never stops reading, which is what keeps two ranks
//! that send each other large frames at the same time from waiting on each other.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::tx::{Peer, Sending};
use super::Shared;
use crate::error::TransportError;
use crate::SendStatus;

/// Smallest unsent rest of a payload that is lent rather than copied: below it, the
/// copy costs less than the caller's wait for the socket to drain.
pub const LEND_MIN: usize = 256 << 10;

/// Sends frames whose large rest is written from the caller's buffer (module docs).
#[derive(Clone)]
pub struct Lender {
    sh: Arc<Shared>,
}

/// A loan in progress, as the waiting caller sees it.
pub struct Loan<'a> {
    peer: &'a Peer,
}

impl Loan<'_> {
    /// Lent bytes not yet written to the socket; zero once the frame is all out (or
    /// the connection is gone, which the transport's `poll` reports).
    pub fn left(&self) -> usize {
        self.peer.lent_left.load(Ordering::SeqCst)
    }
}

/// Ends the loan on every way out of [`Lender::send`], unwinding included.
struct Reclaim<'a> {
    peer: &'a Peer,
    sh: &'a Shared,
}

impl Drop for Reclaim<'_> {
    fn drop(&mut self) {
        if self.peer.reclaim() > 0 {
            self.sh.reclaimed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl Lender {
    pub(super) fn new(sh: Arc<Shared>) -> Lender {
        Lender { sh }
    }

    /// Sends one packet to `dest` like [`crate::Messaging::try_send`]; if a rest of
    /// `payload` is lent, runs `wait` (which should poll until [`Loan::left`] is zero,
    /// or give up) and returns its result beside the status.
    pub fn send<R>(
        &self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
        wait: impl FnOnce(&Loan<'_>) -> R,
    ) -> Result<(SendStatus, Option<R>), TransportError> {
        let sh = &*self.sh;
        crate::error::check_packet(meta, payload, sh.cfg.max_payload)?;
        let Some(peer) = sh.peers.get(dest) else {
            return Err(TransportError::NoPeer {
                dest,
                size: sh.peers.len(),
            });
        };
        let reclaim = Reclaim { peer, sh };
        match peer.send_frame(meta, payload, sh.cfg.queue_limit, &sh.inbox, true)? {
            Sending::NoCredit => Ok((SendStatus::NoCredit, None)),
            Sending::Sent => Ok((SendStatus::Sent, None)),
            Sending::Lent => {
                sh.lent.fetch_add(1, Ordering::Relaxed);
                let waited = wait(&Loan { peer });
                drop(reclaim);
                Ok((SendStatus::Sent, Some(waited)))
            }
        }
    }
}
