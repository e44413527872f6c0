//! Active messages: handler ids, the registry, and what a handler receives.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::rc::Rc;

use crate::buf::RecvBuf;
use crate::error::CoreError;
use crate::world::World;

/// Identifies a handler; the same id must name the same handler on every rank.
pub type HandlerId = u16;

/// Ids from here up belong to the runtime (collectives, protocols of upper layers).
pub const RESERVED_BASE: HandlerId = 0xFF00;

/// The collectives' mailbox handler.
pub(crate) const COLL_HANDLER: HandlerId = RESERVED_BASE;

/// One delivered active message. The slices are valid only during the handler call.
#[derive(Debug, Clone, Copy)]
pub struct Am<'a> {
    /// The sending rank.
    pub src: usize,
    /// The handler it was sent to.
    pub handler: HandlerId,
    /// The small header (at most [`crate::MAX_AM_HEADER`] bytes).
    pub header: &'a [u8],
    /// The payload.
    pub payload: &'a [u8],
}

/// A registered handler: runs on the receiving rank inside `poll` / a wait.
pub type Handler = Rc<dyn Fn(&World, &Am<'_>)>;

/// Hashes a handler id to itself: ids are small and chosen by us, and the lookup is
/// on every message's path (SipHash would cost more than the rest of it).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u16(&mut self, n: u16) {
        self.0 = u64::from(n);
    }
}

/// Handler id → handler.
#[derive(Default)]
pub(crate) struct Registry {
    map: HashMap<HandlerId, Handler, BuildHasherDefault<IdHasher>>,
}

impl Registry {
    pub(crate) fn insert(&mut self, id: HandlerId, h: Handler) -> Result<(), CoreError> {
        if self.map.contains_key(&id) {
            return Err(CoreError::HandlerExists(id));
        }
        self.map.insert(id, h);
        Ok(())
    }

    pub(crate) fn get(&self, id: HandlerId) -> Option<Handler> {
        self.map.get(&id).cloned()
    }
}

/// A message copied out of the transport, delivered later (nested progress, self-sends,
/// reassembled fragments, rendezvous reads).
pub(crate) struct OwnedAm {
    pub src: usize,
    pub handler: HandlerId,
    pub header: Vec<u8>,
    pub payload: RecvBuf,
}

impl OwnedAm {
    pub(crate) fn as_am(&self) -> Am<'_> {
        Am {
            src: self.src,
            handler: self.handler,
            header: &self.header,
            payload: self.payload.filled(),
        }
    }
}
