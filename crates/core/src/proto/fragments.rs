//! Fragments: a message larger than a frame copied through frames. Needs from the
//! transport: packets, delivered in order per pair; nothing else, so it is what
//! every peer can fall back to.
//!
//! Sending: a `FIRST` packet (handler, total length, header) with the first frame's
//! worth of payload, then `FRAG` packets with the rest, each a frame at most; all go
//! over the transport that carries the whole message's size. Receiving: `FIRST`
//! takes a receive buffer of the total length (one message per sender at a time:
//! the transport keeps a pair's packets in order), each `FRAG` appends, and the
//! message is delivered when the announced length is in. A fragment without its
//! first packet, or bytes beyond the announced length, break the protocol.

use nf_transport::Packet;

use crate::am::{HandlerId, OwnedAm};
use crate::error::CoreError;
use crate::protocol::Meta;
use crate::world::World;

/// A message being reassembled from fragments.
pub(crate) struct Partial {
    /// The message so far.
    pub msg: OwnedAm,
    /// Its announced length.
    pub total: usize,
}

impl World {
    /// Sends `payload` to `dest` as `FIRST` and `FRAG` packets of `chunk` bytes.
    pub(crate) fn send_fragments(
        &self,
        dest: usize,
        handler: HandlerId,
        header: &[u8],
        payload: &[u8],
        chunk: usize,
    ) -> Result<(), CoreError> {
        let (first, rest) = payload.split_at(chunk);
        let meta = Meta::First {
            handler,
            total: payload.len() as u64,
            header,
        }
        .encode();
        let len = payload.len();
        self.send_packet_of(dest, len, meta.as_bytes(), first)?;
        let frag = Meta::Frag.encode();
        for piece in rest.chunks(chunk) {
            self.send_packet_of(dest, len, frag.as_bytes(), piece)?;
        }
        Ok(())
    }

    /// `FIRST`: starts reassembling a message of `total` bytes from `src`.
    pub(crate) fn receive_first(
        &self,
        src: usize,
        handler: HandlerId,
        total: u64,
        header: &[u8],
        pkt: &impl Packet,
    ) -> Result<(), CoreError> {
        let total = self.checked_len(src, total)?;
        let mut st = self.state.borrow_mut();
        if st.partial[src].is_some() {
            return Err(protocol(
                src,
                "new message while the previous one is incomplete",
            ));
        }
        let mut payload = st.take_buffer(total);
        if !payload.push(pkt.payload()) {
            return Err(protocol(src, "first fragment longer than the message"));
        }
        let msg = OwnedAm {
            src,
            handler,
            header: header.to_vec(),
            payload,
        };
        st.partial[src] = Some(Partial { msg, total });
        Ok(())
    }

    /// `FRAG`: appends to `src`'s message, delivered once complete.
    pub(crate) fn receive_frag(&self, src: usize, pkt: &impl Packet) -> Result<(), CoreError> {
        let complete = {
            let mut st = self.state.borrow_mut();
            let p = st.partial[src]
                .as_mut()
                .ok_or_else(|| protocol(src, "fragment without a first packet"))?;
            if !p.msg.payload.push(pkt.payload()) {
                st.partial[src] = None;
                return Err(protocol(src, "fragments exceed the announced length"));
            }
            p.msg.payload.filled().len() == p.total
        };
        if complete {
            let p = self.state.borrow_mut().partial[src]
                .take()
                .expect("present: checked above");
            self.deliver_owned(p.msg)?;
        }
        Ok(())
    }
}

/// A protocol error of `src`'s.
fn protocol(src: usize, why: &str) -> CoreError {
    CoreError::Protocol {
        src,
        why: why.to_owned(),
    }
}
