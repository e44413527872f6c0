"""Distributed linear algebra on global arrays."""

import numpy as _np

from . import _native

# Columns of the inner dimension fetched per step when blocks come from other nodes:
# big enough for an efficient local multiply, small enough that the next block's
# gets overlap this one's multiply.
_REMOTE_BLOCK = 512


def _check(a, b, c):
    for name, x in (("a", a), ("b", b), ("c", c)):
        if not isinstance(x, _native.GlobalArray):
            raise TypeError(f"matmul: {name} must be a GlobalArray, not {type(x).__name__}")
        if x.ndim != 2:
            raise ValueError(f"matmul: {name} has {x.ndim} dimensions; matmul multiplies matrices")
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2 or c.shape != (m, n):
        raise ValueError(
            f"matmul: shapes {a.shape} @ {b.shape} -> {c.shape} do not match (need (m, k) @ (k, n) -> (m, n))"
        )
    if not (a.dtype == b.dtype == c.dtype):
        raise TypeError(f"matmul: dtypes differ ({a.dtype}, {b.dtype}, {c.dtype}); convert first")
    return m, k, n


def matmul(a, b, c, block=None):
    """``c = a @ b`` for 2-D global arrays (collective).

    Each rank computes its own block of ``c``: it fetches the row panel of ``a`` and
    the column panel of ``b`` it needs with one-sided gets, ``block`` columns of the
    inner dimension at a time, the next block's gets in flight while the current
    block is multiplied (numpy's BLAS). ``block`` defaults to the whole inner
    dimension when every rank shares this node (the gets are then plain copies and
    one large multiply is fastest), else to 512. Starts and ends with a sync, so
    earlier puts to ``a`` and ``b`` are seen and ``c`` is complete everywhere after.
    """
    m, k, n = _check(a, b, c)
    if block is not None and (not isinstance(block, int) or block <= 0):
        raise ValueError(f"matmul: block must be a positive int, not {block!r}")
    a.sync()
    rows, cols = c.local_slices
    cl = c.local()
    try:
        if cl.size and k == 0:
            cl[...] = 0
        elif cl.size:
            _multiply_into(a, b, cl, rows, cols, k, block)
    finally:
        del cl
    c.sync()


def _multiply_into(a, b, cl, rows, cols, k, block):
    world = _native.init()
    if block is None:
        local = all(_native.same_node(r) for r in range(world.size))
        block = k if local else _REMOTE_BLOCK
    steps = [(s, min(s + block, k)) for s in range(0, k, block)]
    mr, nc = cl.shape

    def start(step):
        lo, hi = step
        pa = _np.empty((mr, hi - lo), dtype=a.dtype)
        pb = _np.empty((hi - lo, nc), dtype=b.dtype)
        return a.get_nb((rows, slice(lo, hi)), pa), b.get_nb((slice(lo, hi), cols), pb)

    pending = start(steps[0])
    for i in range(len(steps)):
        nxt = start(steps[i + 1]) if i + 1 < len(steps) else None
        pa, pb = (p.wait() for p in pending)
        if i == 0:
            _np.matmul(pa, pb, out=cl)
        else:
            cl += pa @ pb
        pending = nxt
