//! The atomics of the control segment (`control.rs`) and the idle step of a lock wait
//! (`lock.rs`), from loom under `cfg(loom)` and from `std` and the rank's [`Waiter`]
//! otherwise, so `loom_tests.rs` model-checks the same locking code that runs (as the
//! transport's `shm/sync.rs` does for its rings).
//!
//! loom is a dev-dependency, so its types replace std's only in the crate's own test
//! build (`RUSTFLAGS="--cfg loom" cargo test --lib`); everything else is std.

use nf_core::wait::Waiter;

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// One idle turn of a wait for a lock: the rank's waiting policy; under loom a
/// yield, which tells the model checker this thread waits for another's progress.
#[cfg(not(all(test, loom)))]
pub(crate) fn idle(waiter: &Waiter, turn: u32) {
    waiter.idle(turn);
}

/// One idle turn of a wait for a lock (model-checking build: loom's yield).
#[cfg(all(test, loom))]
pub(crate) fn idle(_: &Waiter, _: u32) {
    loom::thread::yield_now();
}
