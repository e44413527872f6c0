//! The locks of the tcp transport and the atomics of its read handoff (`handoff.rs`),
//! inbox (`inbox.rs`), queued-bytes flag (`tx.rs`) and parking bell (`park.rs`): from
//! loom under `cfg(loom)` (as
//! `shm/sync.rs` does for the rings), from `std` otherwise, so `loom_tests.rs`
//! model-checks the same handoff code that runs.
//!
//! loom is a dev-dependency, so its types replace std's only in the crate's own test
//! build (`RUSTFLAGS="--cfg loom" cargo test --lib`); everything else is std.

use std::sync::PoisonError;

#[cfg(all(test, loom))]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// Locks a mutex, recovering the data if a thread panicked while holding it (every
/// critical section here leaves its data consistent between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
