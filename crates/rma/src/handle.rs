//! Handles of non-blocking operations.

/// Names one non-blocking transfer until it is waited for (ARMCI's `armci_hdl_t`).
///
/// A handle is a number, so an ABI can keep it inside its own handle struct
/// ([`Handle::id`] / [`Handle::from_id`]). Waiting twice for one handle, or for a
/// number never issued, is [`crate::RmaError::UnknownHandle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(pub(crate) u64);

impl Handle {
    /// The handle's number (never 0).
    pub fn id(&self) -> u64 {
        self.0
    }

    /// The handle with number `id`, as [`Handle::id`] gave it.
    pub fn from_id(id: u64) -> Handle {
        Handle(id)
    }
}
