//! Eager: a whole message in one packet. Needs from the transport: packets of the
//! payload's size (`max_payload`); nothing else.
//!
//! Sending: one `EAGER` packet (handler, header, payload). Receiving: the handler
//! runs on the packet in the transport's frame when it may run now (the inline
//! common case is in `progress.rs`: `handle_packet`); otherwise the message is copied
//! and queued behind what is queued already, so per-pair order holds. A message to
//! oneself is copied and queued the same way.

use crate::am::{Am, HandlerId, OwnedAm};
use crate::buf::RecvBuf;
use crate::error::CoreError;
use crate::protocol::Meta;
use crate::world::World;

impl World {
    /// Sends a message that fits one packet to `dest`.
    #[inline]
    pub(crate) fn send_eager(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
    ) -> Result<(), CoreError> {
        self.send_packet(dest, Meta::eager(handler, header).as_bytes(), payload)
    }

    /// Queues a message to ourselves, delivered at the next top-level poll.
    pub(crate) fn send_to_self(&self, handler: HandlerId, header: &[u8], payload: &[u8]) {
        self.queue_copy(&Am {
            src: self.rank,
            handler,
            header,
            payload,
        });
    }

    /// `EAGER` that did not take the inline path: run now, or copy and queue.
    pub(crate) fn receive_eager(&self, am: &Am<'_>) -> Result<(), CoreError> {
        if self.runs_now(am.handler) {
            return self.run_handler(am);
        }
        self.queue_copy(am);
        Ok(())
    }

    /// Copies `am` into a spare buffer and queues it for the next top-level poll.
    fn queue_copy(&self, am: &Am<'_>) {
        let mut st = self.state.borrow_mut();
        let payload = RecvBuf::copy_of(st.spare.pop().unwrap_or_default(), am.payload);
        st.deferred.push_back(OwnedAm {
            src: am.src,
            handler: am.handler,
            header: am.header.to_vec(),
            payload,
        });
    }
}
