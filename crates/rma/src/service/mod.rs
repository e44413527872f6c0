//! The service path: how a proc's memory is reached from other domains.
//!
//! Each proc that has peers outside its domain runs one service thread ([`Service`],
//! `server.rs`) owning a listener and every accepted connection, blocked in epoll.
//! It applies requests to this proc's memory itself, so operations complete while the
//! proc's own thread computes (asynchronous progress). Origins reach it
//! through `origin/`, one connection per target, in the protocol of `wire.rs`.

mod conn;
mod request;
mod server;
pub(crate) mod wire;

/// Appends one reply (header and data) to `out`.
pub(crate) fn push_reply(out: &mut Vec<u8>, ok: bool, id: u64, data: &[u8]) {
    let rep = wire::Rep {
        ok,
        id,
        data_len: data.len() as u64,
    };
    out.extend_from_slice(&rep.encode());
    out.extend_from_slice(data);
}

use std::os::fd::AsFd;
use std::time::Duration;

pub(crate) use server::{Service, Shared};

/// A peer that stops acknowledging (host gone, link cut) is lost after about this,
/// unless `NF_DEAD_AFTER_MS` says otherwise (the messaging layer's tcp default).
pub(crate) const DEAD_AFTER: Duration = Duration::from_secs(20);

/// Socket options of an established service connection: the tcp transport's (no
/// Nagle delay, a broken link detected within about `dead_after`).
pub(crate) fn tune(stream: &impl AsFd, dead_after: Duration) -> std::io::Result<()> {
    nf_transport::tcp::tune(stream, dead_after)
}
