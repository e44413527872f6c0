//! Python objects as bytes on the wire and back: numpy arrays and bytes travel raw
//! (dtype and shape beside them), anything else is pickled, as mpi4py's lower-case
//! methods do.

use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};

use crate::p2p::{Head, Kind, HEADER_DIMS};

/// The bytes of an object to send, and the header that describes them.
pub(crate) struct Outgoing<'py> {
    pub head: Head,
    /// Shape prefix ([`Kind::ArrayShaped`]), sent before `body`.
    pub prefix: Vec<u8>,
    body: Body<'py>,
}

enum Body<'py> {
    /// A contiguous numpy array, borrowed for the send.
    Array(Bound<'py, PyUntypedArray>),
    Bytes(Bound<'py, PyBytes>),
    Owned(Vec<u8>),
}

/// numpy kinds that are plain bytes in memory (bool, ints, floats, complex).
fn is_raw_kind(kind: u8) -> bool {
    matches!(kind, b'b' | b'i' | b'u' | b'f' | b'c')
}

/// `obj` as a C-contiguous numpy array of plain numbers, if it is a numpy array of
/// them.
pub(crate) fn raw_array<'py>(
    obj: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyUntypedArray>>> {
    let Ok(arr) = obj.cast::<PyUntypedArray>() else {
        return Ok(None);
    };
    if !is_raw_kind(arr.dtype().kind()) {
        return Ok(None);
    }
    if arr.is_c_contiguous() {
        return Ok(Some(arr.clone()));
    }
    let np = obj.py().import("numpy")?;
    let c = np.call_method1("ascontiguousarray", (arr,))?;
    Ok(Some(c.cast_into::<PyUntypedArray>()?))
}

/// The bytes of a C-contiguous array.
///
/// The slice is valid while `arr` is alive and no Python code runs (the GIL is held
/// by the caller, who runs none before it is done with the slice).
pub(crate) fn array_bytes<'a>(arr: &'a Bound<'_, PyUntypedArray>) -> &'a [u8] {
    let n = arr.len() * arr.dtype().itemsize();
    if n == 0 {
        return &[];
    }
    // SAFETY: `arr` is C-contiguous (callers pass arrays from `raw_array` or check),
    // so its `n` bytes start at `data`; it lives as long as the borrow, and no
    // Python code that could resize or free it runs while the slice is used.
    unsafe {
        std::slice::from_raw_parts(
            (*numpy::npyffi::objects::_PyArray_GET_ITEM_DATA(arr.as_array_ptr()))
                .data
                .cast::<u8>(),
            n,
        )
    }
}

/// Where a C-contiguous array's data starts, and its length in bytes (writing
/// through the pointer needs a writeable array and no Python code running).
pub(crate) fn array_data(arr: &Bound<'_, PyUntypedArray>) -> (*mut u8, usize) {
    let n = arr.len() * arr.dtype().itemsize();
    // SAFETY: reading the data field of a live array object (no access to the data).
    let p = unsafe { (*numpy::npyffi::objects::_PyArray_GET_ITEM_DATA(arr.as_array_ptr())).data };
    (p.cast::<u8>(), n)
}

/// The bytes of a C-contiguous array, to write into.
///
/// # Safety
/// `arr` must be C-contiguous and writeable, and stay alive and untouched by Python
/// code while the slice is used (the lifetime is the caller's to keep).
pub(crate) unsafe fn bytes_mut<'a>(arr: &Bound<'_, PyUntypedArray>) -> &'a mut [u8] {
    let (ptr, len) = array_data(arr);
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's promise; `len` bytes start at `ptr` in a C-contiguous array.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

/// Checks that `out` can receive into its memory in place.
pub(crate) fn writable_out<'py>(out: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    let arr = out.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!(
            "out must be a numpy array, not {}",
            out.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err(
            "out must be C-contiguous (numpy.ascontiguousarray makes one)",
        ));
    }
    let writeable: bool = out.getattr("flags")?.getattr("writeable")?.extract()?;
    if !writeable {
        return Err(PyValueError::new_err("out is read-only"));
    }
    Ok(arr.clone())
}

impl<'py> Outgoing<'py> {
    /// How `obj` travels with `tag`.
    pub(crate) fn new(obj: &Bound<'py, PyAny>, tag: i32) -> PyResult<Outgoing<'py>> {
        let mut head = Head {
            tag,
            kind: Kind::Bytes,
            dtype: 0,
            ndim: 0,
            dims: [0; HEADER_DIMS],
        };
        if let Some(arr) = raw_array(obj)? {
            head.dtype = arr.dtype().char();
            let shape = arr.shape();
            let in_header =
                shape.len() <= HEADER_DIMS && shape.iter().all(|&d| d <= u32::MAX as usize);
            let mut prefix = Vec::new();
            if in_header {
                head.kind = Kind::Array;
                head.ndim = shape.len() as u8;
                for (slot, &d) in head.dims.iter_mut().zip(shape) {
                    *slot = d as u32;
                }
            } else {
                head.kind = Kind::ArrayShaped;
                head.ndim = u8::try_from(shape.len()).map_err(|_| {
                    PyValueError::new_err("arrays of more than 255 dimensions cannot be sent")
                })?;
                for &d in shape {
                    prefix.extend_from_slice(&(d as u64).to_le_bytes());
                }
            }
            return Ok(Outgoing {
                head,
                prefix,
                body: Body::Array(arr),
            });
        }
        if let Ok(b) = obj.cast::<PyBytes>() {
            return Ok(Outgoing {
                head,
                prefix: Vec::new(),
                body: Body::Bytes(b.clone()),
            });
        }
        if let Ok(b) = obj.cast::<PyByteArray>() {
            return Ok(Outgoing {
                head,
                prefix: Vec::new(),
                body: Body::Owned(b.to_vec()),
            });
        }
        head.kind = Kind::Pickle;
        let pickled = obj
            .py()
            .import("pickle")?
            .call_method1("dumps", (obj, -1))?
            .cast_into::<PyBytes>()?;
        Ok(Outgoing {
            head,
            prefix: Vec::new(),
            body: Body::Bytes(pickled),
        })
    }

    /// The payload after any prefix.
    pub(crate) fn body(&self) -> &[u8] {
        match &self.body {
            Body::Array(a) => array_bytes(a),
            Body::Bytes(b) => b.as_bytes(),
            Body::Owned(v) => v,
        }
    }

    /// The whole payload in one buffer (prefix and body; copies only with a prefix).
    pub(crate) fn with_prefix(&self) -> std::borrow::Cow<'_, [u8]> {
        if self.prefix.is_empty() {
            return std::borrow::Cow::Borrowed(self.body());
        }
        let mut v = self.prefix.clone();
        v.extend_from_slice(self.body());
        std::borrow::Cow::Owned(v)
    }
}

/// The shape of an array message and where its data starts in the payload.
pub(crate) fn shape_of(head: &Head, data: &[u8]) -> PyResult<(Vec<usize>, usize)> {
    let n = head.ndim as usize;
    match head.kind {
        Kind::Array if n <= HEADER_DIMS => {
            Ok((head.dims[..n].iter().map(|&d| d as usize).collect(), 0))
        }
        Kind::ArrayShaped if data.len() >= 8 * n => Ok((
            data[..8 * n]
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")) as usize)
                .collect(),
            8 * n,
        )),
        _ => Err(PyValueError::new_err(
            "a message's array header is malformed",
        )),
    }
}

/// A received message as the Python object that was sent.
pub(crate) fn to_python(py: Python<'_>, head: &Head, data: Vec<u8>) -> PyResult<Py<PyAny>> {
    match head.kind {
        Kind::Bytes => Ok(PyBytes::new(py, &data).into_any().unbind()),
        Kind::Pickle => Ok(py
            .import("pickle")?
            .call_method1("loads", (PyBytes::new(py, &data),))?
            .unbind()),
        Kind::Array | Kind::ArrayShaped => {
            let (shape, start) = shape_of(head, &data)?;
            let np = py.import("numpy")?;
            let dtype = np.call_method1("dtype", ((head.dtype as char).to_string(),))?;
            let raw = if start == 0 {
                numpy::PyArray1::from_vec(py, data).into_any()
            } else {
                numpy::PyArray1::from_slice(py, &data[start..]).into_any()
            };
            Ok(raw
                .call_method1("view", (dtype,))?
                .call_method1("reshape", (shape,))?
                .unbind())
        }
    }
}
