//! Peer loss and bad frames on the tcp transport: how a broken connection becomes one
//! [`TransportError::PeerLost`] and a goodbye becomes none.
//!
//! 1. A reader that stops on a goodbye, a closed or failed connection or a malformed
//!    frame ([`Outcome`], from `rx.rs`) is settled here by whichever side read it
//!    ([`settle`]): the read side closes and the peer's sending side is told.
//! 2. A goodbye, or a close while we are leaving ourselves, marks the peer left: no
//!    error, since leaving is normal ([`Peer::left`]).
//! 3. Anything else marks the link lost: the socket is shut, queued bytes dropped, and
//!    one `PeerLost` posted to the inbox behind the packets that arrived before
//!    ([`Peer::lost`]); every later send to the peer fails with the same reason
//!    ([`Peer::unusable`]). A link already gone stays as it is, so a loss seen by both
//!    threads is reported once.

use std::collections::VecDeque;
use std::net::{Shutdown, SocketAddr};

use super::handoff::{close, RxState};
use super::inbox::Inbox;
use super::rx::Outcome;
use super::sync::{lock, Ordering};
use super::tx::{Link, Peer, Tx, Wire};
use super::Shared;
use crate::error::TransportError;

/// Acts on why a reader stopped, for either side: a goodbye, a closed connection or
/// garbage closes the read side and tells the peer's sending side (which reports a
/// loss once through the inbox); anything else is returned for the caller. Once we
/// have said goodbye ourselves, a peer that closes without one is leaving too (it
/// skips its goodbye to a rank that already left): no loss.
pub(crate) fn settle(sh: &Shared, r: usize, st: &mut RxState, outcome: Outcome) -> Option<Outcome> {
    let peer = &sh.peers[r];
    match outcome {
        Outcome::Bye => {
            close(st, &sh.registry);
            peer.left();
            tracing::debug!(peer = r, "tcp: peer said goodbye");
        }
        Outcome::Closed(why) if sh.leaving.load(Ordering::Acquire) => {
            close(st, &sh.registry);
            peer.left();
            tracing::debug!(peer = r, "tcp: peer closed while we leave: {why}");
        }
        Outcome::Closed(why) => {
            close(st, &sh.registry);
            peer.lost(why, &sh.inbox);
        }
        Outcome::Garbage(why) => {
            close(st, &sh.registry);
            let why = format!("it sent a malformed frame ({why}); connection closed");
            peer.lost(why, &sh.inbox);
        }
        other => return Some(other),
    }
    None
}

impl<S: Wire> Peer<S> {
    /// The error for a send to a peer whose link is not up.
    pub(super) fn unusable(&self, link: &Link<S>) -> TransportError {
        match link {
            Link::Left(why) | Link::Lost(why) => TransportError::PeerLost {
                peer: self.rank,
                why: why.clone(),
            },
            _ => TransportError::WireUp {
                peer: self.rank,
                why: "no tcp connection to this rank: connect() was not given its address \
                      (or was not called yet)"
                    .into(),
            },
        }
    }

    /// The peer said goodbye: later sends to it fail, and no error is reported.
    pub(crate) fn left(&self) {
        let mut tx = lock(&self.tx);
        if matches!(tx.link, Link::Up(_)) {
            let why = format!(
                "rank {} at {} left the job (it closed its transport)",
                self.rank,
                describe(tx.remote)
            );
            tx.link = Link::Left(why);
            tx.queue = VecDeque::new();
            self.backlog.store(false, Ordering::Release);
        }
    }

    /// The connection broke (seen by the progress thread).
    pub(crate) fn lost(&self, why: String, inbox: &Inbox) {
        let mut tx = lock(&self.tx);
        let why = format!("{} ({})", why, describe(tx.remote));
        lose(self.rank, &mut tx, why, inbox);
        self.backlog.store(false, Ordering::Release);
    }
}

/// Marks a link lost and posts the error once; a link already gone stays as it is.
pub(super) fn lose<S: Wire>(rank: usize, tx: &mut Tx<S>, why: String, inbox: &Inbox) {
    let Link::Up(stream) = &tx.link else {
        return;
    };
    let _ = stream.shutdown(Shutdown::Both);
    tracing::warn!(peer = rank, remote = %describe(tx.remote), "tcp: connection lost: {why}");
    tx.link = Link::Lost(why.clone());
    tx.queue = VecDeque::new();
    inbox.push(
        &mut vec![Err(TransportError::PeerLost { peer: rank, why })],
        0,
    );
}

/// An address for messages.
pub(super) fn describe(remote: Option<SocketAddr>) -> String {
    remote.map_or_else(|| "unknown address".into(), |a| a.to_string())
}
