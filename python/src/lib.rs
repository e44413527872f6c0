//! ninefold for Python: the extension module `ninefold._native`.
//!
//! The Python package (`python/ninefold/`) is the public face; this module holds what
//! must be fast or touches memory: the world and its messages (`world`, `p2p`,
//! `request`), global arrays over the rma layer (`array`), and the 9P client
//! (`files`). Everything here belongs to the thread that called `init`: the runtime
//! is single-threaded by design (as `nf_core::World` is), and the classes are
//! `unsendable` — but for `files`, whose 9P client may be used from any thread.

use pyo3::prelude::*;

mod array;
mod buffers;
mod conns;
mod errors;
mod files;
mod mpi_boot;
mod p2p;
mod request;
mod runtime;
mod world;

/// The extension module: classes and functions the Python package re-exports.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ANY_SOURCE", world::ANY)?;
    m.add("ANY_TAG", world::ANY)?;
    errors::register(m)?;
    files::register(m)?;
    m.add_function(wrap_pyfunction!(world::init, m)?)?;
    m.add_function(wrap_pyfunction!(world::finalize, m)?)?;
    m.add_function(wrap_pyfunction!(world::initialized, m)?)?;
    m.add_class::<world::PyWorld>()?;
    m.add_class::<request::Request>()?;
    m.add_class::<request::Status>()?;
    m.add_class::<array::GlobalArray>()?;
    m.add_class::<array::LocalBlock>()?;
    m.add_class::<array::Pending>()?;
    m.add_class::<array::Counter>()?;
    m.add_function(wrap_pyfunction!(array::fence, m)?)?;
    m.add_function(wrap_pyfunction!(array::same_node, m)?)?;
    Ok(())
}
