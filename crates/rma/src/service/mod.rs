//! The service path: how a proc's memory is reached from other domains.
//!
//! Each proc that has peers outside its domain runs one service thread ([`Service`],
//! `server.rs`) owning a listener and every accepted connection, blocked in epoll.
//! It applies requests to this proc's memory itself, so operations complete while the
//! proc's own thread computes (asynchronous progress, seed 004). Origins reach it
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

/// A peer that stops acknowledging (host gone, link cut) is lost after about this.
pub(crate) const DEAD_AFTER: Duration = Duration::from_secs(20);

/// Socket options of an established service connection: no Nagle delay, and a broken
/// link detected within about [`DEAD_AFTER`] rather than never.
pub(crate) fn tune(stream: &impl AsFd) -> std::io::Result<()> {
    let sock = socket2::SockRef::from(stream);
    sock.set_tcp_nodelay(true)?;
    sock.set_tcp_keepalive(
        &socket2::TcpKeepalive::new()
            .with_time(DEAD_AFTER / 3)
            .with_interval(DEAD_AFTER / 6)
            .with_retries(3),
    )?;
    sock.set_tcp_user_timeout(Some(DEAD_AFTER))
}
