//! ninefold's transport layer: moving bytes between two endpoints.
//!
//! A transport carries *packets*: up to [`META_MAX`] bytes of metadata owned by the
//! layer above (the core's protocol header) and a payload of at most
//! [`Messaging::max_payload`] bytes. It does not fragment, order across peers, or
//! interpret the metadata; it does guarantee per-pair order and never overruns a
//! receiver (credit-based flow control: a full receiver is [`SendStatus::NoCredit`],
//! an outcome to retry after polling, not a failure).
//!
//! Transports: [`shm`] (same host), [`tcp`] (between hosts), [`ofi`] (between hosts,
//! over the system libfabric when it is there). Each implements [`Messaging`]; a
//! transport whose fabric has one-sided operations also implements
//! [`rma::NativeRma`] (today: ofi). Every transport's folder uses the same file
//! names for the same jobs: `mod.rs` (the type, its config, its [`Messaging`] impl),
//! `conn.rs` (wire-up), `tx.rs` (sending), `rx.rs` (receiving), `wire.rs` (wire
//! format), `faults.rs` (peer loss, bad frames), `rma.rs` (native RMA), plus extras
//! named for what only that transport does.

pub mod error;
pub mod ofi;
pub mod rma;
pub mod shm;
pub mod tcp;

pub use error::TransportError;
pub use shm::layout::META_MAX;

use nf_sys::setting::Setting;

/// The `NF_*` settings this crate reads (the core's config parses the transports'
/// other ones); `nf config` lists every layer's.
pub const SETTINGS: &[Setting] = &[ofi::SHIM_SETTING];

/// What happened to a packet handed to [`Messaging::try_send`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    /// The packet is in the receiver's queue.
    Sent,
    /// The receiver has no room for us now: poll, then try again.
    NoCredit,
}

/// A packet received from a peer; its buffer is released when it is dropped.
pub trait Packet {
    /// The sender's index in this transport's peer numbering.
    fn src(&self) -> usize;
    /// The metadata bytes written by the sender's upper layer.
    fn meta(&self) -> &[u8];
    /// The payload bytes.
    fn payload(&self) -> &[u8];
}

/// The messaging capability every transport has.
pub trait Messaging {
    /// The received-packet type; holds the receive buffer until dropped.
    type Packet: Packet;
    /// Largest payload of one packet.
    fn max_payload(&self) -> usize;
    /// Queues one packet to `dest` without blocking.
    fn try_send(
        &mut self,
        dest: usize,
        meta: &[u8],
        payload: &[u8],
    ) -> Result<SendStatus, TransportError>;
    /// Returns the next arrived packet, if any.
    fn poll(&mut self) -> Result<Option<Self::Packet>, TransportError>;
}
