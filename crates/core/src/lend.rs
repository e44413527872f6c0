//! Large tcp frames sent from the caller's buffer while this rank keeps polling.
//!
//! [`World::send`] returns once the payload may be reused. For a frame of at least
//! [`LEND_MIN`] bytes to a tcp peer, the part its socket does not take at once (a
//! 16 MiB frame leaves about 12 MiB on this kind of host) used to be copied into the
//! transport's queue before returning. Here that rest stays in the caller's buffer,
//! lent to the transport (`nf_transport::tcp`'s `lend.rs`), and the send waits while
//! the socket drains it:
//! - The wait polls like any other (`World::wait_until`, with user handlers held
//!   back), so this rank keeps reading: two ranks sending each other large frames at
//!   once both progress, and a dead peer ends the wait with its error.
//! - A peer that stops reading does not hold the sender: after [`LEND_STALL`] without
//!   a byte moving, the wait ends and the transport copies what is left into its
//!   queue, as a plain send does at once.
//! - Only where routes do not split by size (`Net::lender`): a split route counts
//!   the packets it sends per transport, and the loan stays outside that count.

use std::time::Instant;

use nf_transport::tcp::{Loan, LEND_MIN};
use nf_transport::SendStatus;

use crate::error::CoreError;
use crate::netconf::LEND_STALL;
use crate::world::{Nested, World};

impl World {
    /// Sends one packet of a message of `len` payload bytes: lent when it is large
    /// and goes over tcp, else as [`World::send_packet`] does.
    pub(crate) fn send_frame(
        &self,
        dest: usize,
        len: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        let lender = if payload.len() >= LEND_MIN {
            self.net.borrow_mut().lender(dest)
        } else {
            None
        };
        let Some(lender) = lender else {
            return self.send_packet_of(dest, len, meta, payload);
        };
        let (status, waited) = lender.send(dest, meta, payload, |loan| self.wait_loan(loan))?;
        if let Some(waited) = waited {
            self.state.borrow_mut().stats.lent += 1;
            waited?;
        }
        if status == SendStatus::NoCredit {
            return self.send_packet_blocked(dest, len, meta, payload);
        }
        Ok(())
    }

    /// Polls until the loan is written, or stalled for [`LEND_STALL`].
    fn wait_loan(&self, loan: &Loan<'_>) -> Result<(), CoreError> {
        let _nested = Nested::enter(self);
        let (mut left, mut since) = (loan.left(), Instant::now());
        self.wait_until(|| {
            let now = loan.left();
            if now == 0 {
                return true;
            }
            if now != left {
                (left, since) = (now, Instant::now());
                return false;
            }
            since.elapsed() >= LEND_STALL
        })
    }
}
