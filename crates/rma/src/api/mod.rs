//! The public operations of [`crate::Rma`], one file per family.

mod alloc;
mod atomic;
mod cache;
mod domain;
mod mutex;
mod sync;
mod xfer;
