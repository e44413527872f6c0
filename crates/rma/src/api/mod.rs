//! The public operations of [`crate::Rma`], one file per family.

mod alloc;
mod atomic;
mod cache;
pub(crate) mod coll;
mod domain;
mod mutex;
mod sync;
pub(crate) mod team;
mod xfer;
