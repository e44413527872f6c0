//! The atomics of the shared-memory protocol, from loom under `cfg(loom)` (as tokio
//! keeps a loom shim) and from `std` otherwise, so `loom_tests.rs` model-checks the
//! same code that runs: the segment layout's atomics (`layout.rs`) and the sending,
//! receiving and release steps that use them (`tx.rs`, `rx.rs`, `fastbox.rs`), and the
//! byte channel's ring protocol (`channel_ring.rs`, checked by `loom_channel.rs`).
//!
//! loom is a dev-dependency, so its atomics replace std's only in the crate's own
//! test build (`RUSTFLAGS="--cfg loom" cargo test --lib`); everything else is std.

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
