//! Active messages: handler ids, the registry, and what a handler receives.

use std::rc::Rc;

use crate::buf::RecvBuf;
use crate::error::CoreError;
use crate::world::World;

/// Identifies a handler; the same id must name the same handler on every rank.
pub type HandlerId = u16;

/// Ids from here up belong to the runtime (collectives, protocols of upper layers).
pub const RESERVED_BASE: HandlerId = 0xFF00;

/// The runtime's own handlers: each protocol of the core or of a layer above it
/// has a variant here, so no layer borrows an id from the users' range and no two
/// layers can pick the same one. Register with [`World::register_reserved`], send
/// with [`World::send_reserved`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reserved {
    /// The core's collectives mailbox.
    Collectives,
    /// The rma layer's team collectives (`nf_rma::WorldWireup`).
    RmaTeams,
    /// Tagged point-to-point messages of the language bindings (ninefold for Python).
    Messages,
    /// The start-up measurement of the single-copy threshold (`calibrate.rs`); runs
    /// at any depth, as the collectives' mailbox.
    Calibrate,
}

impl Reserved {
    /// The handler id on the wire (at or above [`RESERVED_BASE`]).
    pub const fn id(self) -> HandlerId {
        RESERVED_BASE + self as HandlerId
    }
}

/// The collectives' mailbox handler.
pub(crate) const COLL_HANDLER: HandlerId = Reserved::Collectives.id();

/// Whether a message for `id` runs even while a handler runs or a send waits: the
/// runtime's handlers that only store (the collectives' mailbox) or that `init`
/// waits on (the single-copy measurement), never a user's, which are queued then.
#[inline]
pub(crate) fn runs_at_any_depth(id: HandlerId) -> bool {
    id == COLL_HANDLER || id == Reserved::Calibrate.id()
}

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

/// Handler id → handler: a two-level table indexed by the id's high and low byte.
/// The lookup is on every message's path; two indexed loads beat hashing, and a
/// page (4 KiB) exists only where handlers are registered.
pub(crate) struct Registry {
    pages: Box<[Option<Box<Page>>; 256]>,
}

type Page = [Option<Handler>; 256];

impl Default for Registry {
    fn default() -> Self {
        Registry {
            pages: Box::new([const { None }; 256]),
        }
    }
}

impl Registry {
    pub(crate) fn insert(&mut self, id: HandlerId, h: Handler) -> Result<(), CoreError> {
        let [hi, lo] = id.to_be_bytes();
        let page = self.pages[hi as usize].get_or_insert_with(|| Box::new([const { None }; 256]));
        let slot = &mut page[lo as usize];
        if slot.is_some() {
            return Err(CoreError::HandlerExists(id));
        }
        *slot = Some(h);
        Ok(())
    }

    #[inline]
    pub(crate) fn get(&self, id: HandlerId) -> Option<Handler> {
        let [hi, lo] = id.to_be_bytes();
        self.pages[hi as usize].as_ref()?[lo as usize].clone()
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
