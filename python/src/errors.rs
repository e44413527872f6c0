//! The exceptions the package raises, and how Rust errors become them.
//!
//! Bad arguments are the built-in `ValueError` / `TypeError` / `IndexError`; what
//! goes wrong in the runtime is an [`NinefoldError`] (a `RuntimeError`), and a peer
//! that died is its subclass [`PeerError`], so a program can tell the two apart.

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

create_exception!(
    _native,
    NinefoldError,
    PyRuntimeError,
    "An operation of the ninefold runtime failed (the message says what and why)."
);
create_exception!(
    _native,
    PeerError,
    NinefoldError,
    "Another rank of the job died or its connection broke; the message names it."
);

/// Adds the exception classes to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("NinefoldError", py.get_type::<NinefoldError>())?;
    m.add("PeerError", py.get_type::<PeerError>())?;
    Ok(())
}

/// A core error as a Python exception: a dead peer is a [`PeerError`].
pub(crate) fn core(what: &str, e: nf_core::CoreError) -> PyErr {
    use nf_core::CoreError as E;
    let msg = format!("{what}: {e}");
    match e {
        E::PeerDied { .. } | E::Transport(nf_transport::TransportError::PeerLost { .. }) => {
            PeerError::new_err(msg)
        }
        _ => NinefoldError::new_err(msg),
    }
}

/// An rma error as a Python exception.
pub(crate) fn rma(what: &str, e: nf_rma::RmaError) -> PyErr {
    NinefoldError::new_err(format!("{what}: {e}"))
}
