//! `ninefold.init()` and the `World` it returns: who this rank is, tagged messages,
//! and the collectives.

use std::cell::RefCell;
use std::rc::Rc;

use nf_core::{Config, ReduceOp, Reserved, World};
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt};

use crate::buffers::{self, Outgoing};
use crate::errors;
use crate::mpi_boot::CommBootstrap;
use crate::p2p::{Head, Kind, Matcher, Msg, Pattern};
use crate::request::{Request, Status};
use crate::runtime::{self, Runtime};

/// "Any source" / "any tag" in a receive.
pub(crate) const ANY: i64 = -1;

thread_local! {
    /// The one `World` object, so every `init()` returns the same.
    static WORLD: RefCell<Option<Py<PyWorld>>> = const { RefCell::new(None) };
}

/// The communicator of a running mpi4py, if the program already initialised MPI.
fn running_mpi(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let modules = py.import("sys")?.getattr("modules")?;
    let Ok(mpi) = modules.get_item("mpi4py.MPI") else {
        return Ok(None);
    };
    let up: bool = mpi.call_method0("Is_initialized")?.extract()?;
    let down: bool = mpi.call_method0("Is_finalized")?.extract()?;
    (up && !down).then(|| mpi.getattr("COMM_WORLD")).transpose()
}

/// Joins the job (once per process; later calls return the same world).
#[pyfunction]
#[pyo3(signature = (comm = None))]
pub(crate) fn init(py: Python<'_>, comm: Option<Bound<'_, PyAny>>) -> PyResult<Py<PyWorld>> {
    if let Some(w) = WORLD.with(|w| w.borrow().as_ref().map(|w| w.clone_ref(py))) {
        if Runtime::finalized() {
            return Err(PyRuntimeError::new_err(
                "ninefold was finalized in this process and cannot be initialised again",
            ));
        }
        return Ok(w);
    }
    let comm = match comm {
        Some(c) => Some(c),
        None => running_mpi(py)?,
    };
    let world = match comm {
        Some(c) => {
            let boot = CommBootstrap::new(c)?;
            let cfg = Config::from_env().map_err(|e| errors::core("ninefold.init", e))?;
            World::init_from(Box::new(boot), cfg)
        }
        None => World::init(),
    }
    .map_err(|e| errors::core("ninefold.init: joining the job", e))?;
    let matcher: Rc<RefCell<Matcher>> = Rc::default();
    let m = Rc::clone(&matcher);
    world
        .register_reserved(Reserved::Messages, move |_, am| {
            match Head::decode(am.header) {
                Some(head) => m.borrow_mut().arrive(am.src, head, am.payload),
                None => eprintln!(
                    "ninefold: dropped a message from rank {} with a malformed header",
                    am.src
                ),
            }
        })
        .map_err(|e| errors::core("ninefold.init", e))?;
    // Nobody may send before every rank has its handler.
    world
        .barrier()
        .map_err(|e| errors::core("ninefold.init: first barrier", e))?;
    Runtime::install(world, matcher);
    let w = Py::new(py, PyWorld {})?;
    WORLD.with(|s| *s.borrow_mut() = Some(w.clone_ref(py)));
    Ok(w)
}

/// Leaves the job (collective); `atexit` calls it for a program that does not.
#[pyfunction]
pub(crate) fn finalize() -> PyResult<()> {
    Runtime::finalize()
}

/// Whether `init` ran and `finalize` did not.
#[pyfunction]
pub(crate) fn initialized() -> bool {
    Runtime::current().is_some()
}

fn check_rank(what: &str, rank: i64, size: usize) -> PyResult<usize> {
    usize::try_from(rank)
        .ok()
        .filter(|&r| r < size)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "{what} {rank} is not a rank of this job (ranks are 0..{})",
                size - 1
            ))
        })
}

/// A receive's pattern from its `source` and `tag` arguments.
pub(crate) fn pattern(source: i64, tag: i64, size: usize) -> PyResult<Pattern> {
    let src = if source == ANY {
        None
    } else {
        Some(check_rank("source", source, size)?)
    };
    let tag = if tag == ANY {
        None
    } else {
        Some(check_tag(tag)?)
    };
    Ok(Pattern { src, tag })
}

fn check_tag(tag: i64) -> PyResult<i32> {
    i32::try_from(tag).ok().filter(|t| *t >= 0).ok_or_else(|| {
        PyValueError::new_err(format!(
            "tag {tag} is out of range: tags are 0..{} (ANY_TAG only in receives)",
            i32::MAX
        ))
    })
}

/// Hands a received message to Python: as a new object, or copied into `out`. A
/// message that does not fit `out` is put back (nothing is lost) and raises.
pub(crate) fn deliver(
    py: Python<'_>,
    rt: &Runtime,
    m: Msg,
    out: Option<&Bound<'_, PyAny>>,
    status: Option<&Bound<'_, Status>>,
) -> PyResult<Py<PyAny>> {
    if let (Some(n), Some(out)) = (m.filled, out) {
        // The data went straight into `out` when it arrived.
        if let Some(st) = status {
            let mut st = st.borrow_mut();
            (st.source, st.tag, st.nbytes) = (m.src, m.head.tag, n);
        }
        return Ok(out.clone().unbind());
    }
    let start = match m.head.kind {
        Kind::Array | Kind::ArrayShaped => buffers::shape_of(&m.head, &m.data)?.1,
        _ => 0,
    };
    if let Some(st) = status {
        let mut st = st.borrow_mut();
        st.source = m.src;
        st.tag = m.head.tag;
        st.nbytes = m.data.len() - start;
    }
    let Some(out) = out else {
        return buffers::to_python(py, &m.head, m.data);
    };
    let refuse = |m: Msg, err: PyErr| {
        rt.p2p.borrow_mut().put_back(m);
        Err(err)
    };
    let arr = match buffers::writable_out(out) {
        Ok(a) => a,
        Err(e) => return refuse(m, e),
    };
    if m.head.kind == Kind::Pickle {
        return refuse(
            m,
            PyTypeError::new_err(
                "the message is a pickled object, not an array: receive it without out=",
            ),
        );
    }
    let want = arr.dtype().char();
    if m.head.kind != Kind::Bytes && m.head.dtype != want {
        let got = m.head.dtype as char;
        return refuse(
            m,
            PyTypeError::new_err(format!(
                "the message holds dtype {got:?} but out has {:?} (numpy type codes); the \
                 message stays queued",
                want as char
            )),
        );
    }
    let body = &m.data[start..];
    // SAFETY: `writable_out` checked that `arr` is C-contiguous and writeable; no
    // Python code runs while the slice is used.
    let dst = unsafe { buffers::bytes_mut(&arr) };
    if body.len() > dst.len() {
        let (have, got) = (dst.len(), body.len());
        return refuse(
            m,
            PyValueError::new_err(format!(
                "the message has {got} bytes but out holds {have}; the message stays queued: \
                 receive it into a larger array"
            )),
        );
    }
    dst[..body.len()].copy_from_slice(body);
    Ok(out.clone().unbind())
}

/// A reduction's operation by name.
fn reduce_op(op: &str) -> PyResult<ReduceOp> {
    match op.to_ascii_lowercase().as_str() {
        "sum" => Ok(ReduceOp::Sum),
        "min" => Ok(ReduceOp::Min),
        "max" => Ok(ReduceOp::Max),
        _ => Err(PyValueError::new_err(format!(
            "unknown reduction {op:?}: use \"sum\", \"min\" or \"max\""
        ))),
    }
}

/// Allreduce of the elements of `bytes`, typed by numpy's type code.
fn allreduce_bytes(rt: &Runtime, code: u8, bytes: &mut [u8], op: ReduceOp) -> PyResult<()> {
    fn run<T: nf_core::Reducible>(rt: &Runtime, b: &mut [u8], op: ReduceOp) -> PyResult<()> {
        let mut v: Vec<T> = bytemuck::pod_collect_to_vec(b);
        rt.world
            .allreduce(&mut v, op)
            .map_err(|e| errors::core("allreduce", e))?;
        b.copy_from_slice(bytemuck::cast_slice(&v));
        Ok(())
    }
    match code {
        b'b' => run::<i8>(rt, bytes, op),
        b'B' => run::<u8>(rt, bytes, op),
        b'h' => run::<i16>(rt, bytes, op),
        b'H' => run::<u16>(rt, bytes, op),
        b'i' => run::<i32>(rt, bytes, op),
        b'I' => run::<u32>(rt, bytes, op),
        b'l' | b'q' => run::<i64>(rt, bytes, op),
        b'L' | b'Q' => run::<u64>(rt, bytes, op),
        b'f' => run::<f32>(rt, bytes, op),
        b'd' => run::<f64>(rt, bytes, op),
        // Complex sums are sums of the parts; complex numbers have no order.
        b'F' if op == ReduceOp::Sum => run::<f32>(rt, bytes, op),
        b'D' if op == ReduceOp::Sum => run::<f64>(rt, bytes, op),
        b'F' | b'D' => Err(PyValueError::new_err(
            "complex numbers have no order: only \"sum\" reduces them",
        )),
        c => Err(PyTypeError::new_err(format!(
            "allreduce does not reduce dtype {:?}; use int8..int64, uint8..uint64, float32, \
             float64, complex64 or complex128",
            c as char
        ))),
    }
}

/// Allreduce of a numpy array of numbers or a Python number: a new value of the
/// same type and shape on every rank.
pub(crate) fn allreduce_value(
    py: Python<'_>,
    rt: &Runtime,
    x: &Bound<'_, PyAny>,
    op: ReduceOp,
) -> PyResult<Py<PyAny>> {
    let np = py.import("numpy")?;
    if x.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err("allreduce of a bool: use an int"));
    }
    let scalar = x.is_instance_of::<PyInt>()
        || x.is_instance_of::<PyFloat>()
        || x.is_instance_of::<PyComplex>();
    let arr = if scalar {
        np.call_method1("asarray", (x,))?
    } else {
        x.clone()
    };
    let Some(arr) = buffers::raw_array(&arr)? else {
        return Err(PyTypeError::new_err(format!(
            "allreduce takes a numpy array of numbers or a Python number, not {}",
            x.get_type().name()?
        )));
    };
    let result = arr.call_method0("copy")?.cast_into::<PyUntypedArray>()?;
    let code = result.dtype().char();
    // SAFETY: a fresh copy, C-contiguous and writeable; no Python code runs while
    // the bytes are reduced.
    let bytes = unsafe { buffers::bytes_mut(&result) };
    allreduce_bytes(rt, code, bytes, op)?;
    if scalar {
        return Ok(result.call_method0("item")?.unbind());
    }
    Ok(result.into_any().unbind())
}

/// This rank's handle on the job (`ninefold.init()` returns it).
#[pyclass(unsendable, module = "ninefold._native", name = "World")]
pub(crate) struct PyWorld {}

#[pymethods]
impl PyWorld {
    /// This rank, 0..size.
    #[getter]
    fn rank(&self) -> PyResult<usize> {
        Ok(runtime::get()?.world.rank())
    }

    /// Ranks in the job.
    #[getter]
    fn size(&self) -> PyResult<usize> {
        Ok(runtime::get()?.world.size())
    }

    /// The job's id (equal on every rank).
    #[getter]
    fn job_id(&self) -> PyResult<String> {
        Ok(runtime::get()?.world.job_id().to_owned())
    }

    /// Where the wire-up came from ("nf run", "PMIx", "PMI-2", "mpi4py", "singleton").
    #[getter]
    fn bootstrap(&self) -> PyResult<String> {
        Ok(runtime::get()?.world.bootstrap_source())
    }

    /// Returns once every rank has called it.
    fn barrier(&self) -> PyResult<()> {
        runtime::get()?
            .world
            .barrier()
            .map_err(|e| errors::core("barrier", e))
    }

    /// Sends `obj` to rank `dest` with `tag`: numpy arrays and bytes as raw bytes,
    /// anything else pickled. Returns once `obj` may be changed.
    #[pyo3(signature = (dest, obj, tag = 0))]
    fn send(&self, dest: i64, obj: &Bound<'_, PyAny>, tag: i64) -> PyResult<()> {
        let rt = runtime::get()?;
        let dest = check_rank("dest", dest, rt.world.size())?;
        let out = Outgoing::new(obj, check_tag(tag)?)?;
        let payload = out.with_prefix();
        rt.world
            .send_reserved(dest, Reserved::Messages, &out.head.encode(), &payload)
            .map_err(|e| errors::core(&format!("send to rank {dest}"), e))
    }

    /// [`PyWorld::send`] returning a completed request (sends complete when they
    /// return: `obj` may be changed at once).
    #[pyo3(signature = (dest, obj, tag = 0))]
    fn isend(&self, dest: i64, obj: &Bound<'_, PyAny>, tag: i64) -> PyResult<Request> {
        self.send(dest, obj, tag)?;
        Ok(Request::sent())
    }

    /// Receives the oldest message from `source` with `tag` (either may be ANY):
    /// the object sent, or the data copied into `out` (a numpy array) and `out`.
    #[pyo3(signature = (source = ANY, tag = ANY, out = None, status = None))]
    fn recv(
        &self,
        py: Python<'_>,
        source: i64,
        tag: i64,
        out: Option<&Bound<'_, PyAny>>,
        status: Option<&Bound<'_, Status>>,
    ) -> PyResult<Py<PyAny>> {
        let rt = runtime::get()?;
        let p = pattern(source, tag, rt.world.size())?;
        // Checked before anything is taken: a bad `out` must not consume a message.
        let dest = out.map(buffers::dest).transpose()?;
        // Taken in its own statement: `deliver` may borrow the matcher again.
        let queued = rt.p2p.borrow_mut().take(p);
        if let Some(m) = queued {
            return deliver(py, rt, m, out, status);
        }
        let (Some(o), Some(dest)) = (out, dest) else {
            rt.wait(py, "recv", || rt.p2p.borrow().peek(p).is_some())?;
            let m = rt.p2p.borrow_mut().take(p).expect("the wait saw it");
            return deliver(py, rt, m, None, status);
        };
        // Posted with `out` as its destination, so the data is copied once, on arrival.
        let id = rt.p2p.borrow_mut().post_into(p, Some(dest));
        let waited = rt.wait(py, "recv", || rt.p2p.borrow().is_done(id));
        let done = rt.p2p.borrow_mut().take_done(id);
        match (done, waited) {
            (Some(m), _) => deliver(py, rt, m, Some(o), status),
            (None, Err(e)) => {
                // `out` must not be written once we return.
                rt.p2p.borrow_mut().cancel(id);
                Err(e)
            }
            (None, Ok(())) => unreachable!("the wait returns once the receive is done"),
        }
    }

    /// Posts a receive and returns its request (`wait()` gives the message).
    #[pyo3(signature = (source = ANY, tag = ANY, out = None))]
    fn irecv(&self, source: i64, tag: i64, out: Option<Bound<'_, PyAny>>) -> PyResult<Request> {
        let rt = runtime::get()?;
        let p = pattern(source, tag, rt.world.size())?;
        let dest = out.as_ref().map(|o| buffers::dest(o)).transpose()?;
        // `out` is kept by the request until the receive is done or withdrawn.
        let id = rt.p2p.borrow_mut().post_into(p, dest);
        Ok(Request::posted(id, out.map(Bound::unbind)))
    }

    /// Waits for a message from `source` with `tag` and describes it, leaving it queued.
    #[pyo3(signature = (source = ANY, tag = ANY))]
    fn probe(&self, py: Python<'_>, source: i64, tag: i64) -> PyResult<Status> {
        let rt = runtime::get()?;
        let p = pattern(source, tag, rt.world.size())?;
        rt.wait(py, "probe", || rt.p2p.borrow().peek(p).is_some())?;
        let st = Status::of(rt.p2p.borrow().peek(p).expect("the wait saw it"));
        Ok(st)
    }

    /// [`PyWorld::probe`] without waiting: `None` when no such message has arrived.
    #[pyo3(signature = (source = ANY, tag = ANY))]
    fn iprobe(&self, source: i64, tag: i64) -> PyResult<Option<Status>> {
        let rt = runtime::get()?;
        let p = pattern(source, tag, rt.world.size())?;
        rt.world.poll().map_err(|e| errors::core("iprobe", e))?;
        Ok(rt.p2p.borrow().peek(p).map(Status::of))
    }

    /// Broadcasts `obj` from `root`: a numpy array travels raw and, where this rank
    /// passes an array of the same size and dtype, is copied into it; anything else
    /// is pickled. Returns the root's value on every rank.
    #[pyo3(signature = (obj, root = 0))]
    fn bcast(&self, py: Python<'_>, obj: &Bound<'_, PyAny>, root: i64) -> PyResult<Py<PyAny>> {
        let rt = runtime::get()?;
        let root = check_rank("root", root, rt.world.size())?;
        let mut data = Vec::new();
        if rt.world.rank() == root {
            let out = Outgoing::new(obj, 0)?;
            data.extend_from_slice(&out.head.encode());
            data.extend_from_slice(&out.with_prefix());
        }
        rt.world
            .broadcast(root, &mut data)
            .map_err(|e| errors::core("bcast", e))?;
        if rt.world.rank() == root {
            return Ok(obj.clone().unbind());
        }
        let head = data
            .get(..24)
            .and_then(Head::decode)
            .ok_or_else(|| PyRuntimeError::new_err("bcast: the root's message is malformed"))?;
        let m = Msg {
            src: root,
            head,
            data: data.split_off(24),
            filled: None,
        };
        let fits = match obj.cast::<PyUntypedArray>() {
            Ok(a) if head.kind != Kind::Pickle => {
                let (shape, start) = buffers::shape_of(&head, &m.data)?;
                a.dtype().char() == head.dtype
                    && a.shape() == shape.as_slice()
                    && a.is_c_contiguous()
                    && m.data.len() - start == a.len() * a.dtype().itemsize()
            }
            _ => false,
        };
        if fits {
            return deliver(py, rt, m, Some(obj), None);
        }
        buffers::to_python(py, &m.head, m.data)
    }

    /// Combines `x` (a numpy array or a number) elementwise over all ranks with `op`
    /// ("sum", "min", "max"); every rank gets the result, of `x`'s type and shape.
    #[pyo3(signature = (x, op = "sum"))]
    fn allreduce(&self, py: Python<'_>, x: &Bound<'_, PyAny>, op: &str) -> PyResult<Py<PyAny>> {
        allreduce_value(py, runtime::get()?, x, reduce_op(op)?)
    }

    /// Leaves the job (collective); see `ninefold.finalize`.
    fn finalize(&self) -> PyResult<()> {
        Runtime::finalize()
    }

    fn __repr__(&self) -> String {
        match Runtime::current() {
            Some(rt) => format!(
                "<ninefold.World rank {} of {} (job {}, {})>",
                rt.world.rank(),
                rt.world.size(),
                rt.world.job_id(),
                rt.world.bootstrap_source()
            ),
            None => "<ninefold.World (finalized)>".into(),
        }
    }
}
