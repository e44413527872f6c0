"""nf.matmul against numpy's @ on square, non-square and non-divisible shapes."""

import sys

import numpy as np
from common import ok, raises, start

import ninefold as nf

w, r, n = start()
rng = np.random.default_rng(3)
shapes = [(64, 64, 64), (37, 23, 51), (1, 100, 7), (100, 1, 3), (5, 0, 4)]
for dtype in (np.float64, np.float32, np.complex128, np.int64):
    for m, k, q in shapes:
        ra = (rng.random((m, k)) * 10).astype(dtype)
        rb = (rng.random((k, q)) * 10).astype(dtype)
        a, b, c = nf.GlobalArray((m, k), dtype), nf.GlobalArray((k, q), dtype), nf.GlobalArray((m, q), dtype)
        if r == 0:
            a[...], b[...] = ra, rb
            c[...] = np.full((m, q), 99, dtype=dtype)  # overwritten, not added to
        for block in (None, 7):
            nf.matmul(a, b, c, block=block)
            want = ra @ rb
            got = c[...]
            tol = 1e-3 if dtype == np.float32 else 1e-9
            assert np.allclose(got, want, rtol=tol, atol=tol), (dtype, m, k, q, block)
        for x in (a, b, c):
            x.destroy()

# Chunks that differ between the operands.
if n >= 2:
    a = nf.GlobalArray((30, 20), chunks=((10, 20), 20))
    b = nf.GlobalArray((20, 9), chunks=(20, (4, 5)))
    c = nf.GlobalArray((30, 9))
    ra, rb = rng.random((30, 20)), rng.random((20, 9))
    if r == n - 1:
        a[...], b[...] = ra, rb
    nf.matmul(a, b, c)
    assert np.allclose(c[...], ra @ rb)

x, y = nf.GlobalArray((4, 5)), nf.GlobalArray((4, 5))
raises(ValueError, nf.matmul, x, y, x, match="do not match")
raises(TypeError, nf.matmul, x, np.ones((5, 4)), x, match="GlobalArray")
raises(TypeError, nf.matmul, x, nf.GlobalArray((5, 4), "int32"), nf.GlobalArray((4, 4)), match="dtypes")
raises(ValueError, nf.matmul, nf.GlobalArray(4), x, x, match="dimensions")
sys.stdout.flush()
ok(w, "matmul")
