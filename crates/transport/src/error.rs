//! The transport layer's error type.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// Everything that can go wrong moving bytes between two endpoints.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A system call on a named resource failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// The operation that failed.
        what: &'static str,
        /// The file or resource it was applied to.
        path: PathBuf,
        /// The underlying OS error.
        source: std::io::Error,
    },
    /// A segment exists but does not look like one of ours, or disagrees with the job.
    #[error("shared-memory segment {path} is unusable: {why}")]
    BadSegment {
        /// The segment's path.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A peer on this host uses another shm frame size (`NF_SHM_FRAME_SIZE`).
    #[error(
        "local rank {peer} uses {theirs} B shm frames, this rank {ours} B: \
         NF_SHM_FRAME_SIZE must be equal on every rank of a host"
    )]
    FrameSizeMismatch {
        /// The peer's local rank.
        peer: usize,
        /// Our frame size.
        ours: usize,
        /// The peer's frame size.
        theirs: usize,
    },
    /// A setting is outside what the transport supports.
    #[error("invalid transport setting: {0}")]
    Config(String),
    /// A peer wrote something that breaks the protocol; the packet was dropped.
    #[error(
        "corrupt packet from {} in {}: {why}",
        known("local rank", src),
        known("ring", ring)
    )]
    Corrupt {
        /// The sender, where it could be told.
        src: Option<u32>,
        /// The ring it arrived on (`None`: a fast box, which has no ring).
        ring: Option<usize>,
        /// What check failed.
        why: String,
    },
    /// A destination outside the transport's peers.
    #[error("no such peer {dest}: this transport reaches local ranks 0..{size}")]
    NoPeer {
        /// The destination asked for.
        dest: usize,
        /// Number of peers.
        size: usize,
    },
    /// A packet larger than the transport carries in one piece.
    #[error("packet of {len} B exceeds the {max} B a frame carries")]
    TooLarge {
        /// Requested length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A socket operation on a network address failed (binding, polling, connecting).
    #[error("{what} {addr}: {source}")]
    Net {
        /// The operation that failed.
        what: &'static str,
        /// The local or remote address it was applied to.
        addr: SocketAddr,
        /// The underlying OS error.
        source: std::io::Error,
    },
    /// The connection to a peer broke (closed, reset, timed out or sent garbage);
    /// nothing more can be sent to or received from that rank.
    #[error("connection to rank {peer} lost: {why}")]
    PeerLost {
        /// The peer's rank.
        peer: usize,
        /// What happened, with the remote address where known.
        why: String,
    },
    /// A peer answered our connection with a hello we cannot accept, or none at all.
    #[error("tcp handshake with rank {peer} at {addr} failed: {why}")]
    Handshake {
        /// The rank we were connecting to.
        peer: usize,
        /// The address we connected to.
        addr: SocketAddr,
        /// What was wrong, and what to check.
        why: String,
    },
    /// A connection that wire-up should have made is missing.
    #[error("tcp wire-up with rank {peer} failed: {why}")]
    WireUp {
        /// The rank without a connection.
        peer: usize,
        /// Why, and what to check.
        why: String,
    },
    /// The operation is not implemented by this transport.
    #[error("{0} is not supported by this transport")]
    Unsupported(&'static str),
    /// The ofi transport cannot be used in this process (libfabric or its shim missing).
    #[error("ofi transport unavailable: {0}")]
    OfiUnavailable(String),
    /// A libfabric call failed.
    #[error("ofi: {what} failed: {text} (fi_errno {code}); {hint}")]
    Ofi {
        /// The operation and what it was applied to.
        what: String,
        /// libfabric's error number (positive).
        code: i32,
        /// libfabric's (and the provider's) text for it.
        text: String,
        /// What to check or do.
        hint: String,
    },
    /// A posted receive failed because of the remote side (a connection broke in the
    /// middle of a message); the buffer was re-posted. Which peer it was is not known
    /// here: it is named when a send to it fails.
    #[error("{transport}: a receive failed ({why}); a peer's connection probably broke, and the peer is named once a send to it fails")]
    RecvFailed {
        /// The transport it happened on.
        transport: &'static str,
        /// The provider's words.
        why: String,
    },
    /// A packet that breaks the transport's framing arrived and was dropped.
    #[error(
        "{transport}: dropped a malformed packet (sender: {}): {why}",
        known("rank", src)
    )]
    BadPacket {
        /// The transport it arrived on.
        transport: &'static str,
        /// The sender it claims, where its header could be read.
        src: Option<u32>,
        /// What check failed.
        why: String,
    },
}

impl TransportError {
    /// An I/O error with the operation and path it applies to.
    pub fn io(what: &'static str, path: &Path, source: std::io::Error) -> Self {
        TransportError::Io {
            what,
            path: path.to_owned(),
            source,
        }
    }
}

/// Refuses metadata above [`META_MAX`](crate::META_MAX) or a payload above `max_payload`
/// (the network transports' first check of a send).
pub(crate) fn check_packet(
    meta: &[u8],
    payload: &[u8],
    max_payload: usize,
) -> Result<(), TransportError> {
    if meta.len() > crate::META_MAX {
        return Err(TransportError::TooLarge {
            len: meta.len(),
            max: crate::META_MAX,
        });
    }
    if payload.len() > max_payload {
        return Err(TransportError::TooLarge {
            len: payload.len(),
            max: max_payload,
        });
    }
    Ok(())
}

/// `what N` for a known value, `unknown what` otherwise (for error messages).
fn known(what: &str, value: &Option<impl std::fmt::Display>) -> String {
    match value {
        Some(v) => format!("{what} {v}"),
        None => format!("unknown {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_sender_or_ring_is_said_in_words_not_a_number() {
        let e = TransportError::Corrupt {
            src: None,
            ring: Some(2),
            why: "frame index 9 beyond 8 frames".into(),
        };
        assert_eq!(
            e.to_string(),
            "corrupt packet from unknown local rank in ring 2: frame index 9 beyond 8 frames"
        );
        let e = TransportError::BadPacket {
            transport: "ofi",
            src: Some(3),
            why: "bad cookie".into(),
        };
        assert_eq!(
            e.to_string(),
            "ofi: dropped a malformed packet (sender: rank 3): bad cookie"
        );
    }
}
