//! The locks and condition variables of `rpc.rs` and its reply slots (`reply.rs`): from
//! loom under `cfg(all(test, loom))`, from `std` otherwise, so `loom_tests.rs`
//! model-checks the same handoff code that runs.
//!
//! loom is a dev-dependency, so its types replace std's only in the crate's own test
//! build (`RUSTFLAGS="--cfg loom" cargo test --lib`); everything else is std.

use std::sync::PoisonError;

#[cfg(all(test, loom))]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(all(test, loom)))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks a mutex, recovering the data if a thread panicked while holding it (every
/// critical section here leaves its data consistent between statements).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
