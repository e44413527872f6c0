//! The progress engine: one step polls every transport and moves protocols forward.
//!
//! A step, in order:
//! 1. Flush queued control packets (FIN / NACK) that waited for credit.
//! 2. At top level only: deliver messages queued earlier (self-sends, fragments
//!    completed or packets received while nested), oldest first — so per-pair order
//!    holds across the queued and the direct path.
//! 3. Poll the transport for up to `BATCH` packets and act on each:
//!    `EAGER` → deliver from the frame (top level) or copy and queue (nested);
//!    `FIRST` / `FRAG` → reassemble, deliver when complete;
//!    `RTS` → read the sender's buffer with one copy, send FIN (or NACK), deliver;
//!    `FIN` / `NACK` → complete our rendezvous send.
//!
//! "Nested" means a handler is running or a send waits for credit; user handlers are
//! then never re-entered, only queued, so a handler can send without recursion. The
//! collectives' mailbox runs at any depth (it only stores), so a collective called
//! from inside a handler still completes.

use nf_transport::shm::cma;
use nf_transport::{Messaging, Packet, SendStatus};

use crate::am::{Am, OwnedAm, COLL_HANDLER};
use crate::error::CoreError;
use crate::protocol::Meta;
use crate::world::{Nested, Partial, Rndv, World};

const BATCH: usize = 16;

impl World {
    /// Makes progress once: runs handlers for what has arrived (at top level).
    /// Returns how many messages or packets were handled.
    pub fn poll(&self) -> Result<usize, CoreError> {
        self.progress()
    }

    pub(crate) fn progress(&self) -> Result<usize, CoreError> {
        let mut n = 0;
        if !self.state.borrow().ctrl.is_empty() {
            self.flush_ctrl()?;
        }
        if self.depth.get() == 0 {
            n += self.deliver_deferred()?;
        }
        for _ in 0..BATCH {
            let Some(pkt) = self.shm.borrow_mut().poll()? else {
                break;
            };
            n += 1;
            self.handle_packet(&pkt)?;
        }
        Ok(n)
    }

    fn deliver_deferred(&self) -> Result<usize, CoreError> {
        // Only what is queued now: handlers may queue more (self-sends).
        let queued = self.state.borrow().deferred.len();
        for _ in 0..queued {
            let Some(msg) = self.state.borrow_mut().deferred.pop_front() else {
                break;
            };
            self.run_handler(&msg.as_am())?;
            self.state.borrow_mut().give_buffer(msg.payload);
        }
        Ok(queued)
    }

    fn handle_packet(&self, pkt: &impl Packet) -> Result<(), CoreError> {
        let src = pkt.src();
        let protocol = |why: String| CoreError::Protocol { src, why };
        match Meta::decode(pkt.meta()).map_err(protocol)? {
            Meta::Eager { handler, header } => {
                let am = Am {
                    src,
                    handler,
                    header,
                    payload: pkt.payload(),
                };
                if self.runs_now(handler) {
                    self.run_handler(&am)
                } else {
                    self.queue_copy(&am);
                    Ok(())
                }
            }
            Meta::First {
                handler,
                total,
                header,
            } => {
                let total = self.checked_len(src, total)?;
                let mut payload = self.state.borrow_mut().take_buffer();
                payload.reserve(total);
                payload.extend_from_slice(pkt.payload());
                let msg = OwnedAm {
                    src,
                    handler,
                    header: header.to_vec(),
                    payload,
                };
                let mut st = self.state.borrow_mut();
                if st.partial[src].is_some() {
                    return Err(protocol(
                        "new message while the previous one is incomplete".into(),
                    ));
                }
                st.partial[src] = Some(Partial { msg, total });
                Ok(())
            }
            Meta::Frag => {
                let done = {
                    let mut st = self.state.borrow_mut();
                    let p = st.partial[src]
                        .as_mut()
                        .ok_or_else(|| protocol("fragment without a first packet".into()))?;
                    if p.msg.payload.len() + pkt.payload().len() > p.total {
                        st.partial[src] = None;
                        return Err(protocol("fragments exceed the announced length".into()));
                    }
                    p.msg.payload.extend_from_slice(pkt.payload());
                    p.msg.payload.len() == p.total
                };
                if done {
                    let p = self.state.borrow_mut().partial[src]
                        .take()
                        .expect("partial checked above");
                    self.deliver_owned(p.msg)?;
                }
                Ok(())
            }
            Meta::Rts {
                handler,
                id,
                total,
                addr,
                header,
            } => self.serve_rendezvous(src, handler, id, total, addr, header),
            Meta::Fin { id } => self.complete_rendezvous(src, id, Rndv::Done),
            Meta::Nack { id } => self.complete_rendezvous(src, id, Rndv::Refused),
        }
    }

    fn checked_len(&self, src: usize, total: u64) -> Result<usize, CoreError> {
        match usize::try_from(total) {
            Ok(t) if t <= self.cfg.max_payload => Ok(t),
            _ => Err(CoreError::Protocol {
                src,
                why: format!(
                    "announced {total} B, above NF_MAX_PAYLOAD={}",
                    self.cfg.max_payload
                ),
            }),
        }
    }

    fn serve_rendezvous(
        &self,
        src: usize,
        handler: u16,
        id: u32,
        total: u64,
        addr: u64,
        header: &[u8],
    ) -> Result<(), CoreError> {
        let total = match self.checked_len(src, total) {
            Ok(t) => t,
            Err(e) => {
                self.queue_ctrl(src, false, id);
                return Err(e);
            }
        };
        let pid = self.shm.borrow().peer_pid(src).unwrap_or(0);
        let mut payload = self.state.borrow_mut().take_buffer();
        match cma::read_to_vec(pid, addr, total, &mut payload) {
            Ok(()) => {
                self.queue_ctrl(src, true, id);
                self.flush_ctrl()?;
                self.deliver_owned(OwnedAm {
                    src,
                    handler,
                    header: header.to_vec(),
                    payload,
                })
            }
            Err(e) => {
                tracing::warn!(src, pid, error = %e, "single-copy read failed; asking the sender to resend");
                self.state.borrow_mut().give_buffer(payload);
                self.queue_ctrl(src, false, id);
                Ok(())
            }
        }
    }

    fn complete_rendezvous(&self, src: usize, id: u32, outcome: Rndv) -> Result<(), CoreError> {
        let mut st = self.state.borrow_mut();
        match st.rndv.get_mut(&id) {
            Some(s @ Rndv::Waiting) => {
                *s = outcome;
                Ok(())
            }
            _ => Err(CoreError::Protocol {
                src,
                why: format!("completion for unknown rendezvous {id}"),
            }),
        }
    }

    fn queue_ctrl(&self, dest: usize, fin: bool, id: u32) {
        self.state.borrow_mut().ctrl.push_back((dest, fin, id));
    }

    /// Sends queued control packets until one lacks credit.
    fn flush_ctrl(&self) -> Result<(), CoreError> {
        loop {
            let Some(&(dest, fin, id)) = self.state.borrow().ctrl.front() else {
                return Ok(());
            };
            let meta = if fin {
                Meta::Fin { id }
            } else {
                Meta::Nack { id }
            }
            .encode();
            if self.shm.borrow_mut().try_send(dest, meta.as_bytes(), &[])? == SendStatus::NoCredit {
                return Ok(());
            }
            self.state.borrow_mut().ctrl.pop_front();
        }
    }

    fn queue_copy(&self, am: &Am<'_>) {
        let mut st = self.state.borrow_mut();
        let mut payload = st.take_buffer();
        payload.extend_from_slice(am.payload);
        st.deferred.push_back(OwnedAm {
            src: am.src,
            handler: am.handler,
            header: am.header.to_vec(),
            payload,
        });
    }

    fn deliver_owned(&self, msg: OwnedAm) -> Result<(), CoreError> {
        if !self.runs_now(msg.handler) {
            self.state.borrow_mut().deferred.push_back(msg);
            return Ok(());
        }
        let r = self.run_handler(&msg.as_am());
        self.state.borrow_mut().give_buffer(msg.payload);
        r
    }

    /// Whether a message for `handler` may run now: at top level with nothing queued
    /// ahead of it (per-pair order), or the collectives' mailbox, which only stores.
    fn runs_now(&self, handler: u16) -> bool {
        handler == COLL_HANDLER
            || (self.depth.get() == 0 && self.state.borrow().deferred.is_empty())
    }

    fn run_handler(&self, am: &Am<'_>) -> Result<(), CoreError> {
        let h = self.handlers.borrow().get(am.handler);
        let h = h.ok_or(CoreError::UnknownHandler {
            src: am.src,
            id: am.handler,
        })?;
        self.state.borrow_mut().delivered += 1;
        let _nested = Nested::enter(self);
        h(self, am);
        Ok(())
    }
}
