//! `GlobalArray`: an n-dimensional array distributed in blocks over the ranks, read
//! and written with numpy indexing by one-sided transfers of the rma layer.

mod dist;
mod index;

use nf_rma::{Handle, Kind, Scale, Shape, Xfer};
use numpy::ndarray::{ArrayViewD, IxDyn};
use numpy::{
    Complex32, Complex64, PyArray, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PySequence, PySlice, PyTuple};

use crate::buffers;
use crate::errors;
use crate::runtime::{self, Runtime};
use dist::{Dist, Sel};

/// Element types a global array may hold (numpy type codes) and their names.
const DTYPES: &str = "int32, int64, float32, float64, complex64 or complex128";

/// The size of an element of type `code`, if global arrays support it.
fn item_size(code: u8) -> Option<usize> {
    match code {
        b'i' | b'f' => Some(4),
        b'l' | b'q' | b'd' | b'F' => Some(8),
        b'D' => Some(16),
        _ => None,
    }
}

/// numpy's `dtype(obj)`, with its type code, if global arrays support it.
fn dtype_of<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, u8, usize)> {
    let dt = py.import("numpy")?.call_method1("dtype", (obj,))?;
    let code: String = dt.getattr("char")?.extract()?;
    let code = code.bytes().next().unwrap_or(0);
    match item_size(code) {
        Some(item) => Ok((dt, code, item)),
        None => Err(PyTypeError::new_err(format!(
            "global arrays hold {DTYPES}, not {}",
            dt.str()?
        ))),
    }
}

/// An accumulate's scale for elements of type `code`.
fn scale_of(code: u8, alpha: &Bound<'_, PyAny>) -> PyResult<Scale> {
    let complex = || -> PyResult<(f64, f64)> {
        let c: num_like::C = alpha.extract()?;
        Ok((c.0, c.1))
    };
    let bad = |e: PyErr| {
        PyTypeError::new_err(format!(
            "alpha {} does not fit the array's element type: {e}",
            alpha.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    };
    Ok(match code {
        b'i' => Scale::Int(alpha.extract().map_err(bad)?),
        b'l' | b'q' => Scale::Long(alpha.extract().map_err(bad)?),
        b'f' => Scale::Float(alpha.extract().map_err(bad)?),
        b'd' => Scale::Double(alpha.extract().map_err(bad)?),
        b'F' => {
            let (re, im) = complex().map_err(bad)?;
            Scale::ComplexFloat([re as f32, im as f32])
        }
        _ => {
            let (re, im) = complex().map_err(bad)?;
            Scale::ComplexDouble([re, im])
        }
    })
}

mod num_like {
    //! A Python number as a complex pair (ints and floats have no imaginary part).
    use pyo3::prelude::*;
    use pyo3::types::PyComplex;

    /// `(re, im)`.
    pub(crate) struct C(pub f64, pub f64);

    impl<'a, 'py> FromPyObject<'a, 'py> for C {
        type Error = PyErr;
        fn extract(ob: pyo3::Borrowed<'a, 'py, PyAny>) -> PyResult<C> {
            if let Ok(c) = ob.cast::<PyComplex>() {
                return Ok(C(c.real(), c.imag()));
            }
            let c = ob.call_method0("__complex__")?.cast_into::<PyComplex>()?;
            Ok(C(c.real(), c.imag()))
        }
    }
}

/// Keeps a rank's block alive for numpy views of it (their `base`); a global array
/// is destroyed only when no view holds one.
#[pyclass(unsendable, module = "ninefold._native")]
pub(crate) struct LocalBlock {}

/// A distributed n-dimensional array (collective to create and destroy).
#[pyclass(unsendable, module = "ninefold._native")]
pub(crate) struct GlobalArray {
    dist: Dist,
    dtype: Py<PyAny>,
    code: u8,
    item: usize,
    /// Each rank's block, as an address in that rank's memory.
    bases: Vec<u64>,
    rank: usize,
    destroyed: bool,
    /// The owners of the numpy views `local()` handed out.
    owners: std::cell::RefCell<Vec<Py<LocalBlock>>>,
}

/// Transfers started and not yet complete, and the memory they write into.
#[pyclass(unsendable, module = "ninefold._native")]
pub(crate) struct Pending {
    handles: Vec<Handle>,
    /// The destination of gets, kept alive (and unmoved) until they complete.
    out: Option<Py<PyAny>>,
}

#[pymethods]
impl Pending {
    /// Waits for the transfers; returns the destination array.
    fn wait(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let rt = runtime::get()?;
        let rma = rt.rma()?;
        for h in self.handles.drain(..) {
            rma.wait(h)
                .map_err(|e| errors::rma("waiting for a get", e))?;
        }
        Ok(self.out.take().unwrap_or_else(|| py.None()))
    }
}

impl Drop for Pending {
    /// Gets still writing into `out` are completed before `out` may go away.
    fn drop(&mut self) {
        if self.handles.is_empty() {
            return;
        }
        if let Some(rma) = Runtime::current().and_then(|rt| rt.rma().ok()) {
            for h in self.handles.drain(..) {
                let _ = rma.wait(h);
            }
        }
    }
}

/// Where one transfer's pieces go, and how.
struct Transfer<'a> {
    kind: Kind,
    sels: &'a [Sel],
    /// The local memory: the whole C-ordered region the selection covers.
    local: *mut u8,
    /// The region's shape, every dimension included (1 for integer indices).
    local_shape: &'a [usize],
}

impl GlobalArray {
    fn live(&self) -> PyResult<&'static Runtime> {
        if self.destroyed {
            return Err(PyRuntimeError::new_err("this global array was destroyed"));
        }
        runtime::get()
    }

    /// The dtype object.
    fn np_dtype<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        self.dtype.bind(py).clone()
    }

    /// Runs (or with `handles`, starts) the transfers of `t`, one per block touched.
    ///
    /// # Safety
    /// `t.local` must be valid for the whole region (read for put and accumulate,
    /// write for get) until the transfers complete: on return without `handles`,
    /// else until every handle pushed is waited for.
    unsafe fn transfer(
        &self,
        rt: &Runtime,
        t: &Transfer<'_>,
        mut handles: Option<&mut Vec<Handle>>,
    ) -> PyResult<()> {
        let rma = rt.rma()?;
        let steps: Vec<usize> = t.sels.iter().map(|s| s.step).collect();
        let pieces = self.dist.pieces(t.sels);
        let mut started = Vec::new();
        let alone = pieces.len() == 1 && handles.is_none();
        for p in pieces {
            let s = p.strided(&steps, t.local_shape, self.item);
            let remote = self.bases[p.rank] + s.block_start as u64;
            // SAFETY: `out_start` lies inside the region (the piece is part of it).
            let local = unsafe { t.local.add(s.out_start) };
            let shape = if s.count.len() == 1 {
                Shape::Contig {
                    local,
                    remote,
                    bytes: s.count[0],
                }
            } else {
                Shape::Strided {
                    local,
                    local_strides: &s.out_strides,
                    remote,
                    remote_strides: &s.block_strides,
                    count: &s.count,
                }
            };
            let x = Xfer {
                kind: t.kind,
                proc: p.rank,
                shape,
            };
            let what = t.kind.name();
            if alone {
                // SAFETY: the caller's promise covers the region for this call.
                unsafe { rma.xfer(&x) }.map_err(|e| errors::rma(what, e))?;
            } else {
                // SAFETY: as above, until the handle is waited for (below, or by
                // the caller's `handles`).
                started.push(unsafe { rma.start(&x) }.map_err(|e| errors::rma(what, e))?);
            }
        }
        match handles.as_mut() {
            Some(h) => h.append(&mut started),
            None => {
                for h in started {
                    rma.wait(h).map_err(|e| errors::rma(t.kind.name(), e))?;
                }
            }
        }
        Ok(())
    }

    /// A C-ordered array of the region, `value` broadcast and cast to the dtype;
    /// raises as numpy would for shapes, and TypeError for an unsafe cast.
    fn region_data<'py>(
        &self,
        py: Python<'py>,
        value: &Bound<'py, PyAny>,
        sels: &[Sel],
    ) -> PyResult<Bound<'py, PyUntypedArray>> {
        let np = py.import("numpy")?;
        let x = np.call_method1("asarray", (value,))?;
        let dt = self.np_dtype(py);
        let ok: bool = np
            .call_method1("can_cast", (x.getattr("dtype")?, &dt, "same_kind"))?
            .extract()?;
        if !ok {
            return Err(PyTypeError::new_err(format!(
                "cannot store {} values in a global array of {} without losing information: \
                 convert them first (numpy's 'same_kind' casting rule)",
                x.getattr("dtype")?.str()?,
                dt.str()?
            )));
        }
        let visible: Vec<usize> = sels.iter().filter(|s| !s.drop).map(|s| s.count).collect();
        let full: Vec<usize> = sels.iter().map(|s| s.count).collect();
        let b = np
            .call_method1("broadcast_to", (&x, PyTuple::new(py, &visible)?))
            .map_err(|_| {
                let got = x
                    .getattr("shape")
                    .and_then(|s| s.str())
                    .map(|s| s.to_string())
                    .unwrap_or_default();
                PyValueError::new_err(format!(
                    "a value of shape {got} cannot be stored into a region of shape {visible:?}"
                ))
            })?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("dtype", &dt)?;
        let c = np.call_method(
            "ascontiguousarray",
            (b.call_method1("reshape", (full,))?,),
            Some(&kwargs),
        )?;
        Ok(c.cast_into::<PyUntypedArray>()?)
    }

    /// The latency path of `__getitem__`: `a[i:j]` of a 1-D array inside one block
    /// is one contiguous get, without the general decomposition (`None`: not such a
    /// key, take the general path).
    fn get_run<'py>(
        &self,
        py: Python<'py>,
        rt: &Runtime,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let ([n], Ok(slice)) = (self.dist.shape.as_slice(), key.cast::<PySlice>()) else {
            return Ok(None);
        };
        let ind = slice.indices(*n as isize)?;
        if ind.step != 1 || ind.slicelength == 0 {
            return Ok(None);
        }
        let (lo, len) = (ind.start as usize, ind.slicelength);
        let bounds = &self.dist.bounds[0];
        // The block holding `lo` (the last boundary at or below it); in one dimension
        // block b is rank b's.
        let b = bounds.partition_point(|&x| x <= lo) - 1;
        if lo + len > bounds[b + 1] {
            return Ok(None);
        }
        // SAFETY: the get below writes all `len` elements before Python sees them.
        let out = unsafe { buffers::empty(py, self.code, &[len]) }?;
        let remote = self.bases[b] + ((lo - bounds[b]) * self.item) as u64;
        // SAFETY: `out` holds `len` elements, alive for the call.
        unsafe {
            rt.rma()?
                .get(remote, buffers::array_data(&out).0, len * self.item, b)
        }
        .map_err(|e| errors::rma("get", e))?;
        Ok(Some(out.into_any()))
    }

    /// A numpy view of this rank's block (zero-copy), owned by a new [`LocalBlock`].
    fn local_view<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rt = self.live()?;
        let shape = self.dist.block_shape(self.rank);
        let bytes = shape.iter().product::<usize>() * self.item;
        let np = py.import("numpy")?;
        if bytes == 0 {
            let kwargs = pyo3::types::PyDict::new(py);
            kwargs.set_item("dtype", self.np_dtype(py))?;
            return np.call_method("empty", (shape,), Some(&kwargs));
        }
        let ptr = rt
            .rma()?
            .local_ptr(self.rank, self.bases[self.rank], bytes)
            .map_err(|e| errors::rma("local", e))?
            .ok_or_else(|| PyRuntimeError::new_err("this rank's block is not in its own memory"))?;
        let owner = Py::new(py, LocalBlock {})?;
        {
            let mut owners = self.owners.borrow_mut();
            // Owners no view holds any more are forgotten, so repeated local(), sum()
            // or fill() calls do not grow the list.
            owners.retain(view_alive);
            owners.push(owner.clone_ref(py));
        }
        let container = owner.into_bound(py).into_any();
        // SAFETY: `ptr` holds `bytes` bytes of this rank's block, page-aligned, for as
        // long as the array is not destroyed; `destroy` refuses while the view's owner
        // (its numpy base) is referenced, so the memory outlives the view.
        unsafe {
            Ok(match self.code {
                b'i' => view::<i32>(ptr, &shape, container),
                b'l' | b'q' => view::<i64>(ptr, &shape, container),
                b'f' => view::<f32>(ptr, &shape, container),
                b'd' => view::<f64>(ptr, &shape, container),
                b'F' => view::<Complex32>(ptr, &shape, container),
                _ => view::<Complex64>(ptr, &shape, container),
            })
        }
    }

    /// GA's sync: every put and accumulate applied everywhere, then a barrier.
    fn sync_all(&self) -> PyResult<()> {
        let rt = self.live()?;
        rt.rma()?.barrier().map_err(|e| errors::rma("sync", e))
    }
}

/// Whether a numpy view still holds `owner`: we hold one reference, each view another.
fn view_alive(owner: &Py<LocalBlock>) -> bool {
    // SAFETY: `owner` is a live object (we hold a reference) and the caller holds the
    // GIL (every method of the array does).
    unsafe { pyo3::ffi::Py_REFCNT(owner.as_ptr()) > 1 }
}

/// A numpy array of `shape` over the memory at `ptr`, with `container` as its base.
///
/// # Safety
/// `ptr` must hold a C-ordered array of `shape` of `T`, aligned, valid for reads and
/// writes while `container` lives.
unsafe fn view<'py, T: numpy::Element>(
    ptr: *mut u8,
    shape: &[usize],
    container: Bound<'py, PyAny>,
) -> Bound<'py, PyAny> {
    // SAFETY: the caller's promise.
    let v = unsafe { ArrayViewD::<T>::from_shape_ptr(IxDyn(shape), ptr.cast::<T>()) };
    // SAFETY: the view's memory lives while `container` does, which the array keeps.
    unsafe { PyArray::<T, IxDyn>::borrow_from_array(&v, container) }.into_any()
}

/// Per-dimension chunk sizes from the `chunks` argument.
fn parse_chunks(chunks: &Bound<'_, PyAny>, ndim: usize) -> PyResult<Vec<Vec<usize>>> {
    let items: Vec<Bound<'_, PyAny>> = if chunks.is_instance_of::<PyInt>() {
        vec![chunks.clone(); ndim]
    } else {
        chunks
            .cast::<PySequence>()?
            .try_iter()?
            .collect::<PyResult<_>>()?
    };
    items
        .iter()
        .map(|c| {
            if c.is_instance_of::<PyInt>() {
                Ok(vec![c.extract::<usize>().map_err(|_| {
                    PyValueError::new_err("chunk sizes must be positive integers")
                })?])
            } else {
                c.extract::<Vec<usize>>().map_err(|_| {
                    PyValueError::new_err(
                        "each entry of chunks is a block size or a list of block sizes",
                    )
                })
            }
        })
        .collect()
}

/// The array's shape from an int or a sequence of ints.
fn parse_shape(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims: Vec<i64> = if shape.is_instance_of::<PyInt>() {
        vec![shape.extract()?]
    } else {
        shape
            .extract()
            .map_err(|_| PyTypeError::new_err("shape is an int or a sequence of ints"))?
    };
    if dims.is_empty() {
        return Err(PyValueError::new_err(
            "a global array has at least one dimension",
        ));
    }
    dims.iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| PyValueError::new_err(format!("negative dimension {d} in shape")))
        })
        .collect()
}

#[pymethods]
impl GlobalArray {
    /// Creates a zero-filled array of `shape` and `dtype` (collective: every rank
    /// passes the same arguments), in blocks over the ranks, or in the blocks
    /// `chunks` gives (per dimension: a block size, or a list of block sizes).
    #[new]
    #[pyo3(signature = (shape, dtype = None, chunks = None))]
    fn new(
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        chunks: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<GlobalArray> {
        let rt = runtime::get()?;
        let shape = parse_shape(shape)?;
        let float64 = pyo3::types::PyString::new(py, "float64").into_any();
        let (dt, code, item) = dtype_of(py, dtype.unwrap_or(&float64))?;
        let procs = rt.world.size();
        let dist = match chunks {
            None => Dist::block(&shape, procs),
            Some(c) => Dist::chunked(&shape, &parse_chunks(c, shape.len())?, procs)
                .map_err(PyValueError::new_err)?,
        };
        let rank = rt.world.rank();
        let bytes = dist
            .block_shape(rank)
            .iter()
            .try_fold(item, |acc, &n| acc.checked_mul(n))
            .ok_or_else(|| {
                PyValueError::new_err("the array's blocks overflow the address space")
            })?;
        let bases = rt
            .rma()?
            .malloc(bytes)
            .map_err(|e| errors::rma("creating a global array", e))?;
        Ok(GlobalArray {
            dist,
            dtype: dt.unbind(),
            code,
            item,
            bases,
            rank,
            destroyed: false,
            owners: Default::default(),
        })
    }

    /// The shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.dist.shape)
    }

    /// The element type (a numpy dtype).
    #[getter]
    fn dtype(&self, py: Python<'_>) -> Py<PyAny> {
        self.dtype.clone_ref(py)
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.dist.shape.len()
    }

    /// Number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.dist.shape.iter().product()
    }

    /// Blocks along each dimension.
    #[getter]
    fn grid<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.dist.grid())
    }

    /// The global index range of `rank`'s block (this rank's by default), as a tuple
    /// of slices: `a[a.distribution(r)]` is rank r's block.
    #[pyo3(signature = (rank = None))]
    fn distribution<'py>(
        &self,
        py: Python<'py>,
        rank: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let r = rank.unwrap_or(self.rank);
        if r >= self.bases.len() {
            return Err(PyValueError::new_err(format!(
                "rank {r} is not in the job (ranks 0..{})",
                self.bases.len() - 1
            )));
        }
        let slices: Vec<Bound<'py, PySlice>> = self
            .dist
            .range_of(r)
            .iter()
            .map(|&(lo, hi)| PySlice::new(py, lo as isize, hi as isize, 1))
            .collect();
        PyTuple::new(py, slices)
    }

    /// This rank's block's global index range (see `distribution`).
    #[getter]
    fn local_slices<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.distribution(py, None)
    }

    /// A zero-copy numpy view of this rank's block; `local_slices` says where it
    /// lies. Writes to it are local stores: `sync()` before others read them.
    fn local<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.local_view(py)
    }

    /// `a[i:j, k:l]`: the region as a new numpy array (one-sided gets from its owners).
    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let rt = self.live()?;
        if let Some(r) = self.get_run(py, rt, key)? {
            return Ok(r);
        }
        let sels = index::parse(key, &self.dist.shape)?;
        let full: Vec<usize> = sels.iter().map(|s| s.count).collect();
        // Dropped dimensions have length 1: the result's memory is the same with or
        // without them, so it is made in its final shape.
        let visible: Vec<usize> = sels.iter().filter(|s| !s.drop).map(|s| s.count).collect();
        // SAFETY: the get below writes every element (the pieces cover the region),
        // and on an error the array is dropped unseen.
        let out = unsafe { buffers::empty(py, self.code, &visible) }?;
        let t = Transfer {
            kind: Kind::Get,
            sels: &sels,
            local: buffers::array_data(&out).0,
            local_shape: &full,
        };
        // SAFETY: `out` covers the whole region, alive for the whole call.
        unsafe { self.transfer(rt, &t, None) }?;
        if visible.is_empty() {
            // Every dimension indexed by an integer: one element, as numpy gives it.
            return out.call_method1(intern!(py, "__getitem__"), (PyTuple::empty(py),));
        }
        Ok(out.into_any())
    }

    /// `a[i:j, k:l] = x`: puts `x` (broadcast as numpy does) into the region. The
    /// data is on its way when this returns; `sync()` before other ranks read, put or
    /// accumulate into it: transfers from different ranks are not ordered.
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let rt = self.live()?;
        let sels = index::parse(key, &self.dist.shape)?;
        let data = self.region_data(py, value, &sels)?;
        let full: Vec<usize> = sels.iter().map(|s| s.count).collect();
        let t = Transfer {
            kind: Kind::Put,
            sels: &sels,
            local: buffers::array_data(&data).0,
            local_shape: &full,
        };
        // SAFETY: `data` is a C-ordered array of the region, alive for the call; a
        // put only reads it and copies it before returning.
        unsafe { self.transfer(rt, &t, None) }
    }

    /// Accumulates: `a[idx] += alpha * x`, atomically per element with respect to
    /// other accumulates (GA's NGA_Acc), not to other ranks' puts: `sync()` between.
    #[pyo3(signature = (idx, x, alpha = None))]
    fn acc(
        &self,
        py: Python<'_>,
        idx: &Bound<'_, PyAny>,
        x: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let rt = self.live()?;
        let one = PyInt::new(py, 1).into_any();
        let scale = scale_of(self.code, alpha.unwrap_or(&one))?;
        let sels = index::parse(idx, &self.dist.shape)?;
        let data = self.region_data(py, x, &sels)?;
        let full: Vec<usize> = sels.iter().map(|s| s.count).collect();
        let t = Transfer {
            kind: Kind::Acc(scale),
            sels: &sels,
            local: buffers::array_data(&data).0,
            local_shape: &full,
        };
        // SAFETY: as for a put.
        unsafe { self.transfer(rt, &t, None) }
    }

    /// Starts a get of `a[idx]` into `out` (a C-ordered array of the region's shape
    /// and dtype) and returns at once; `.wait()` on the result completes it.
    fn get_nb(
        &self,
        py: Python<'_>,
        idx: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
    ) -> PyResult<Pending> {
        let rt = self.live()?;
        let sels = index::parse(idx, &self.dist.shape)?;
        let arr = buffers::writable_out(out)?;
        let full: Vec<usize> = sels.iter().map(|s| s.count).collect();
        let n: usize = full.iter().product();
        let same_dtype = {
            let c = arr.dtype().char();
            c == self.code || (matches!(c, b'l' | b'q') && matches!(self.code, b'l' | b'q'))
        };
        if !same_dtype || arr.len() != n {
            return Err(PyValueError::new_err(format!(
                "out must be an array of {n} elements of {} for this region (got {} of {})",
                self.np_dtype(py).str()?,
                arr.len(),
                arr.getattr("dtype")?.str()?
            )));
        }
        // Checked C-contiguous, writeable, of the region's size.
        let local = buffers::array_data(&arr).0;
        let t = Transfer {
            kind: Kind::Get,
            sels: &sels,
            local,
            local_shape: &full,
        };
        let mut handles = Vec::new();
        // SAFETY: `out` is kept by the returned `Pending` until its gets complete
        // (its wait, or its drop), and a numpy array with references cannot be
        // resized, so the memory stays.
        unsafe { self.transfer(rt, &t, Some(&mut handles)) }?;
        Ok(Pending {
            handles,
            out: Some(out.clone().unbind()),
        })
    }

    /// Sets every element to `value` (collective; starts and ends with a sync, so
    /// reads before it see the old values and reads after it the new).
    fn fill(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let view = self.local_view(py)?;
        let dt = self.np_dtype(py);
        let np = py.import("numpy")?;
        let v = np.call_method1("asarray", (value,))?;
        let ok: bool = np
            .call_method1("can_cast", (v.getattr("dtype")?, &dt, "same_kind"))?
            .extract()?;
        if !ok {
            return Err(PyTypeError::new_err(format!(
                "cannot fill a global array of {} with {} without losing information",
                dt.str()?,
                v.getattr("dtype")?.str()?
            )));
        }
        self.sync_all()?;
        view.call_method1("fill", (value,))?;
        drop(view);
        self.sync_all()
    }

    /// Completes every put and accumulate and waits for every rank (GA_Sync).
    fn sync(&self) -> PyResult<()> {
        self.sync_all()
    }

    /// The sum of all elements (collective).
    fn sum(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.sync_all()?;
        let part = self
            .local_view(py)?
            .call_method0("sum")?
            .call_method0("item")?;
        let rt = runtime::get()?;
        crate::world::allreduce_value(py, rt, &part, nf_core::ReduceOp::Sum)
    }

    /// The sum of the elementwise products with `other` (same shape; GA's dot, no
    /// complex conjugation) (collective).
    fn dot(&self, py: Python<'_>, other: &Bound<'_, GlobalArray>) -> PyResult<Py<PyAny>> {
        let rt = self.live()?;
        {
            let b = other.borrow();
            if b.dist.shape != self.dist.shape {
                return Err(PyValueError::new_err(format!(
                    "dot of arrays of shapes {:?} and {:?}: shapes must be equal",
                    self.dist.shape, b.dist.shape
                )));
            }
        }
        self.sync_all()?;
        let mine = self.local_view(py)?;
        let region = self.distribution(py, None)?;
        let theirs = other.as_any().get_item(region)?;
        let np = py.import("numpy")?;
        let part = np
            .call_method1(
                "dot",
                (mine.call_method0("ravel")?, theirs.call_method0("ravel")?),
            )?
            .call_method0("item")?;
        // The allreduce ends only once every rank has read its part of `other`.
        crate::world::allreduce_value(py, rt, &part, nf_core::ReduceOp::Sum)
    }

    /// Frees the array on every rank (collective). Refused while numpy views from
    /// `local()` are alive anywhere, since they would point at freed memory.
    fn destroy(&mut self, py: Python<'_>) -> PyResult<()> {
        let rt = self.live()?;
        let mut owners = self.owners.borrow_mut();
        owners.retain(view_alive);
        let _ = py;
        let mut busy = [owners.len() as u64];
        drop(owners);
        rt.world
            .allreduce(&mut busy, nf_core::ReduceOp::Max)
            .map_err(|e| errors::core("destroy", e))?;
        if busy[0] > 0 {
            return Err(PyRuntimeError::new_err(
                "a numpy view from local() of this array is still alive on some rank: \
                 delete the views (del v) before destroy()",
            ));
        }
        self.destroyed = true;
        rt.rma()?
            .free(self.bases[self.rank])
            .map_err(|e| errors::rma("destroy", e))
    }

    /// The whole array as a numpy array (`numpy.asarray(a)`).
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = copy;
        let all = self.__getitem__(py, &py.Ellipsis().into_bound(py))?;
        match dtype {
            Some(d) => all.call_method1("astype", (d,)),
            None => Ok(all),
        }
    }

    fn __len__(&self) -> usize {
        self.dist.shape[0]
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let dt = self
            .np_dtype(py)
            .str()
            .map(|s| s.to_string())
            .unwrap_or_default();
        format!(
            "GlobalArray(shape={:?}, dtype={dt}, grid={:?}{})",
            self.dist.shape,
            self.dist.grid(),
            if self.destroyed { ", destroyed" } else { "" }
        )
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    /// Leaving a `with` block destroys the array.
    fn __exit__(
        &mut self,
        py: Python<'_>,
        _kind: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if !self.destroyed {
            self.destroy(py)?;
        }
        Ok(false)
    }
}

/// Whether `rank` shares this rank's node (its memory is reached directly).
#[pyfunction]
pub(crate) fn same_node(rank: usize) -> PyResult<bool> {
    let rt = runtime::get()?;
    if rank >= rt.world.size() {
        return Err(PyValueError::new_err(format!(
            "rank {rank} is not in the job"
        )));
    }
    Ok(rt.rma()?.same_node(rank))
}

/// Completes every put and accumulate this rank issued, to every rank (ARMCI's
/// AllFence); no barrier.
#[pyfunction]
pub(crate) fn fence() -> PyResult<()> {
    let rt = runtime::get()?;
    rt.rma()?.all_fence().map_err(|e| errors::rma("fence", e))
}

/// A shared integer for dynamic load balancing: `next()` is GA's read-and-increment.
#[pyclass(unsendable, module = "ninefold._native")]
pub(crate) struct Counter {
    base: u64,
    destroyed: bool,
}

#[pymethods]
impl Counter {
    /// Creates the counter with value `start`, held by rank 0 (collective).
    #[new]
    #[pyo3(signature = (start = 0))]
    fn new(start: i64) -> PyResult<Counter> {
        let rt = runtime::get()?;
        let rma = rt.rma()?;
        let me = rt.world.rank();
        let bases = rma
            .malloc(if me == 0 { 8 } else { 0 })
            .map_err(|e| errors::rma("creating a counter", e))?;
        if me == 0 && start != 0 {
            let v = start.to_le_bytes();
            // SAFETY: `v` holds 8 readable bytes for the call.
            unsafe { rma.put(v.as_ptr(), bases[0], 8, 0) }
                .map_err(|e| errors::rma("creating a counter", e))?;
        }
        rma.barrier()
            .map_err(|e| errors::rma("creating a counter", e))?;
        Ok(Counter {
            base: bases[0],
            destroyed: false,
        })
    }

    /// Adds `inc` and returns the value before (atomic across ranks).
    #[pyo3(signature = (inc = 1))]
    fn next(&self, inc: i64) -> PyResult<i64> {
        if self.destroyed {
            return Err(PyRuntimeError::new_err("this counter was destroyed"));
        }
        let rt = runtime::get()?;
        rt.rma()?
            .rmw(nf_rma::RmwOp::FetchAddLong(inc), self.base, 0)
            .map_err(|e| errors::rma("counter next", e))
    }

    /// The current value (a read-and-add of 0).
    fn value(&self) -> PyResult<i64> {
        self.next(0)
    }

    /// Frees the counter (collective).
    fn destroy(&mut self) -> PyResult<()> {
        if self.destroyed {
            return Ok(());
        }
        let rt = runtime::get()?;
        self.destroyed = true;
        let mine = if rt.world.rank() == 0 { self.base } else { 0 };
        rt.rma()?.free(mine).map_err(|e| errors::rma("destroy", e))
    }
}
