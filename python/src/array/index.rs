//! numpy's basic indexing (integers, slices with positive steps, `...`) turned into
//! one [`Sel`] per dimension, with numpy's error types.

use pyo3::exceptions::{PyIndexError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PySlice, PySliceMethods, PyTuple};

use super::dist::Sel;

/// The selection `key` makes in an array of `shape`.
pub(crate) fn parse(key: &Bound<'_, PyAny>, shape: &[usize]) -> PyResult<Vec<Sel>> {
    let items: Vec<Bound<'_, PyAny>> = match key.cast::<PyTuple>() {
        Ok(t) => t.iter().collect(),
        Err(_) => vec![key.clone()],
    };
    let ellipses = items
        .iter()
        .filter(|i| i.is_instance_of::<PyEllipsis>())
        .count();
    if ellipses > 1 {
        return Err(PyIndexError::new_err(
            "an index can only have a single ellipsis ('...')",
        ));
    }
    let explicit = items.len() - ellipses;
    if explicit > shape.len() {
        return Err(PyIndexError::new_err(format!(
            "too many indices: the array has {} dimensions but {explicit} were indexed",
            shape.len()
        )));
    }
    let mut sels = Vec::with_capacity(shape.len());
    for item in &items {
        if item.is_instance_of::<PyEllipsis>() {
            for _ in 0..shape.len() - explicit {
                let n = shape[sels.len()];
                sels.push(whole(n));
            }
            continue;
        }
        let d = sels.len();
        sels.push(one(item, d, shape[d])?);
    }
    while sels.len() < shape.len() {
        sels.push(whole(shape[sels.len()]));
    }
    Ok(sels)
}

fn whole(n: usize) -> Sel {
    Sel {
        start: 0,
        step: 1,
        count: n,
        drop: false,
    }
}

/// The selection of one index item along dimension `d` of length `n`.
fn one(item: &Bound<'_, PyAny>, d: usize, n: usize) -> PyResult<Sel> {
    if let Ok(s) = item.cast::<PySlice>() {
        let len = isize::try_from(n).map_err(|_| PyValueError::new_err("dimension too long"))?;
        let ind = s.indices(len)?;
        if ind.step <= 0 {
            return Err(PyValueError::new_err(format!(
                "index {d}: negative slice steps are not supported by global arrays; take a \
                 positive step and reverse the numpy result ([::-1])"
            )));
        }
        return Ok(Sel {
            start: ind.start.max(0) as usize,
            step: ind.step as usize,
            count: ind.slicelength,
            drop: false,
        });
    }
    // Integers, numpy integers, anything with __index__.
    if let Ok(i) = item
        .call_method0("__index__")
        .and_then(|v| v.extract::<i64>())
    {
        let len = n as i64;
        let j = if i < 0 { i + len } else { i };
        if !(0..len).contains(&j) {
            return Err(PyIndexError::new_err(format!(
                "index {i} is out of bounds for dimension {d} with size {n}"
            )));
        }
        return Ok(Sel {
            start: j as usize,
            step: 1,
            count: 1,
            drop: true,
        });
    }
    Err(PyTypeError::new_err(format!(
        "global arrays take integers, slices and '...' as indices, not {} (fancy indexing: \
         get the region, then index the numpy result)",
        item.get_type().name()?
    )))
}
