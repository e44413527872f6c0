//! Requests of non-blocking messages, and the status a receive fills.

use pyo3::prelude::*;

use crate::p2p::Msg;
use crate::runtime::{self, Runtime};
use crate::world::deliver;

/// Source, tag and size of a message (filled by `recv(status=…)`, returned by
/// `probe`).
#[pyclass(module = "ninefold._native")]
#[derive(Debug, Default)]
pub(crate) struct Status {
    /// The sending rank.
    #[pyo3(get)]
    pub source: usize,
    /// The message's tag.
    #[pyo3(get)]
    pub tag: i32,
    /// Bytes of data (an array's data, without its shape).
    #[pyo3(get)]
    pub nbytes: usize,
}

impl Status {
    /// The status of a queued message.
    pub(crate) fn of(m: &Msg) -> Status {
        let start = crate::buffers::shape_of(&m.head, &m.data)
            .map(|(_, s)| s)
            .unwrap_or(0);
        Status {
            source: m.src,
            tag: m.head.tag,
            nbytes: m.data.len().saturating_sub(start),
        }
    }
}

#[pymethods]
impl Status {
    /// An empty status for `recv(status=…)` to fill.
    #[new]
    fn new() -> Status {
        Status::default()
    }

    fn __repr__(&self) -> String {
        format!(
            "Status(source={}, tag={}, nbytes={})",
            self.source, self.tag, self.nbytes
        )
    }
}

enum State {
    /// A send: complete when created.
    Sent,
    /// A posted receive, into `out` if given.
    Posted { id: u64, out: Option<Py<PyAny>> },
    /// Waited for; the result was handed out.
    Finished,
}

/// A non-blocking operation: `wait()` completes it, `test()` asks.
#[pyclass(unsendable, module = "ninefold._native")]
pub(crate) struct Request {
    state: State,
}

impl Request {
    /// A send's request (sends complete before `isend` returns).
    pub(crate) fn sent() -> Request {
        Request { state: State::Sent }
    }

    /// The request of posted receive `id`.
    pub(crate) fn posted(id: u64, out: Option<Py<PyAny>>) -> Request {
        Request {
            state: State::Posted { id, out },
        }
    }

    /// Hands out the message of a posted receive that has one.
    fn finish(
        &mut self,
        py: Python<'_>,
        rt: &Runtime,
        status: Option<&Bound<'_, Status>>,
    ) -> PyResult<Py<PyAny>> {
        let State::Posted { id, out } = std::mem::replace(&mut self.state, State::Finished) else {
            return Ok(py.None());
        };
        let m = rt
            .p2p
            .borrow_mut()
            .take_done(id)
            .expect("finish after done");
        deliver(py, rt, m, out.as_ref().map(|o| o.bind(py)), status)
    }
}

#[pymethods]
impl Request {
    /// Waits for completion: the received object (or `out`), `None` for a send.
    #[pyo3(signature = (status = None))]
    fn wait(&mut self, py: Python<'_>, status: Option<&Bound<'_, Status>>) -> PyResult<Py<PyAny>> {
        let State::Posted { id, .. } = self.state else {
            return Ok(py.None());
        };
        let rt = runtime::get()?;
        rt.wait(py, "wait", || rt.p2p.borrow().is_done(id))?;
        self.finish(py, rt, status)
    }

    /// `(True, result)` if complete (handing the result out), else `(False, None)`.
    #[pyo3(signature = (status = None))]
    fn test(
        &mut self,
        py: Python<'_>,
        status: Option<&Bound<'_, Status>>,
    ) -> PyResult<(bool, Py<PyAny>)> {
        let State::Posted { id, .. } = self.state else {
            return Ok((true, py.None()));
        };
        let rt = runtime::get()?;
        rt.world
            .poll()
            .map_err(|e| crate::errors::core("test", e))?;
        if !rt.p2p.borrow().is_done(id) {
            return Ok((false, py.None()));
        }
        Ok((true, self.finish(py, rt, status)?))
    }

    /// Withdraws a receive that has no message yet; true if it was withdrawn.
    fn cancel(&mut self) -> PyResult<bool> {
        let State::Posted { id, .. } = self.state else {
            return Ok(false);
        };
        let rt = runtime::get()?;
        let gone = rt.p2p.borrow_mut().cancel(id);
        if gone {
            self.state = State::Finished;
        }
        Ok(gone)
    }

    /// Whether `wait` would return at once.
    #[getter]
    fn done(&self) -> bool {
        match self.state {
            State::Posted { id, .. } => {
                Runtime::current().is_some_and(|rt| rt.p2p.borrow().is_done(id))
            }
            _ => true,
        }
    }
}

impl Drop for Request {
    /// A receive request dropped unwaited gives its message back (or withdraws), so
    /// a forgotten request swallows nothing.
    fn drop(&mut self) {
        let State::Posted { id, .. } = self.state else {
            return;
        };
        let Some(rt) = Runtime::current() else {
            return;
        };
        let mut p2p = rt.p2p.borrow_mut();
        if !p2p.cancel(id) {
            if let Some(m) = p2p.take_done(id) {
                p2p.put_back(m);
            }
        }
    }
}
