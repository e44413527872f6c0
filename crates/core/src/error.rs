//! The core's error type, shared by every layer built on it.

use nf_transport::TransportError;

/// What can go wrong in the core runtime.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The launcher's wire-up failed.
    #[error("wire-up with the launcher failed: {0}")]
    Bootstrap(#[from] nf_pmi::PmiError),
    /// A transport failed.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// An environment setting could not be parsed.
    #[error("{var}={value:?} is invalid: expected {expected}")]
    Config {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What it should look like.
        expected: &'static str,
    },
    /// An environment setting could not be parsed, for a reason of its own.
    #[error("{var}={value:?} is invalid: {why}")]
    ConfigWhy {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong and what it should look like.
        why: String,
    },
    /// A destination rank outside the world.
    #[error("rank {rank} is outside the world of {size} ranks (valid: 0..{size})")]
    NoSuchRank {
        /// The rank asked for.
        rank: usize,
        /// The world size.
        size: usize,
    },
    /// An active-message header longer than the protocol carries.
    #[error(
        "active-message header of {len} B exceeds the {max} B limit; put the rest in the payload"
    )]
    HeaderTooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A payload above the configured limit.
    #[error("payload of {len} B exceeds the limit of {max} B (raise NF_MAX_PAYLOAD)")]
    PayloadTooLarge {
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A message for a handler nobody registered; the message was dropped.
    #[error("rank {src} sent a message for handler {id}, which is not registered on this rank; register it on every rank before sending")]
    UnknownHandler {
        /// The sender.
        src: usize,
        /// The handler id.
        id: u16,
    },
    /// A handler id the runtime keeps for itself.
    #[error("handler id {id} is reserved for the runtime (user ids are below {limit})")]
    ReservedHandler {
        /// The id.
        id: u16,
        /// First reserved id.
        limit: u16,
    },
    /// A handler id registered twice.
    #[error("handler id {0} is already registered")]
    HandlerExists(u16),
    /// A peer sent bytes that break the protocol; they were dropped.
    #[error("protocol violation by rank {src}: {why}")]
    Protocol {
        /// The sender.
        src: usize,
        /// What was wrong.
        why: String,
    },
    /// A peer process is gone.
    #[error("rank {rank} (pid {pid}) died; the job cannot complete")]
    PeerDied {
        /// The dead rank.
        rank: usize,
        /// Its process id.
        pid: u32,
    },
    /// A feature that is not built yet.
    #[error("not supported yet: {0}")]
    Unsupported(String),
    /// A collective was called with arguments that disagree with its contract.
    #[error("invalid collective call: {0}")]
    Collective(String),
}

impl CoreError {
    /// Whether a peer's message caused this (it was dropped; the caller did nothing wrong).
    pub fn is_peer_fault(&self) -> bool {
        matches!(
            self,
            CoreError::UnknownHandler { .. }
                | CoreError::Protocol { .. }
                | CoreError::Transport(nf_transport::TransportError::Corrupt { .. })
                | CoreError::Transport(nf_transport::TransportError::BadPacket { .. })
                | CoreError::Transport(nf_transport::TransportError::RecvFailed { .. })
        )
    }
}
