"""Global arrays against a serial numpy reference, every dtype, many shapes."""

import numpy as np
from common import ok, raises, start

import ninefold as nf

w, r, n = start()
rng = np.random.default_rng(7)  # the same stream on every rank


def reference(shape, dtype):
    x = rng.integers(-50, 50, size=shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.integers(-50, 50, size=shape)
    return x.astype(dtype)


keys = [
    (...,),
    (slice(None), 3),
    (slice(1, 9, 3), slice(None, None, 2)),
    (4,),
    (-1, -2),
    (slice(2, 2), slice(None)),
    (slice(None, None, 4), slice(5, None)),
]

for dtype in (np.int32, np.int64, np.float32, np.float64, np.complex64, np.complex128):
    ref = reference((11, 7), dtype)
    a = nf.GlobalArray((11, 7), dtype)
    assert a.shape == (11, 7) and a.dtype == dtype and a.ndim == 2 and a.size == 77
    if r == 0:
        a[...] = ref
    a.sync()
    for k in keys:
        got, want = a[k], ref[k]
        assert np.shape(got) == np.shape(want) and np.array_equal(got, want), (dtype, k, got, want)
    # Everyone puts a row range of its own, then reads the whole.
    w.barrier()
    rows = slice(r * 11 // n, (r + 1) * 11 // n)
    a[rows, :] = ref[rows, :] * 2
    a.sync()
    ref2 = ref * 2
    assert np.array_equal(a[...], ref2), dtype
    assert np.array_equal(np.asarray(a), ref2)
    # Accumulates from every rank add up (once everyone has read).
    w.barrier()
    a.acc((slice(0, 11), slice(1, 7, 2)), np.ones((11, 3), dtype=dtype), alpha=dtype(3))
    a.sync()
    ref2[:, 1:7:2] += 3 * n
    assert np.array_equal(a[...], ref2), dtype
    # Local view: zero-copy, at local_slices (written once everyone has read).
    w.barrier()
    v = a.local()
    assert np.array_equal(v, ref2[a.local_slices])
    v += 1
    del v
    a.sync()
    ref2 += 1
    assert np.array_equal(a[...], ref2)
    assert a.sum() == ref2.sum()
    b = nf.GlobalArray((11, 7), dtype, chunks=(11, 4) if n >= 2 else 11)
    if r == 0:
        b[...] = ref
    b.sync()
    assert np.isclose(a.dot(b), (ref2 * ref).sum()), dtype
    a.fill(5)
    assert (a[...] == 5).all()
    a.destroy()
    b.destroy()

# Three dimensions, given chunks, a rank without a block.
if n >= 2:
    g = nf.GlobalArray((4, 5, 6), "int64", chunks=((1, 3), 5, 6))
    assert g.grid == (2, 1, 1)
    spans = [g.distribution(q) for q in range(n)]
    assert spans[1] == (slice(1, 4, 1), slice(0, 5, 1), slice(0, 6, 1))
    if r >= 2:
        assert g.local().size == 0 and g.local_slices == (slice(0, 0, 1),) * 3
    ref = np.arange(120).reshape(4, 5, 6)
    if r == n - 1:
        g[...] = ref
    g.sync()
    assert np.array_equal(g[1:4, ::2, 3], ref[1:4, ::2, 3])
    assert np.array_equal(g[:, 4], ref[:, 4])
    g.destroy()

# One dimension, non-blocking gets.
h = nf.GlobalArray(1000, "float64")
if r == 0:
    h[:] = np.arange(1000.0)
h.sync()
out = np.empty(300)
p = h.get_nb(slice(650, 950), out)
assert p.wait() is out and np.array_equal(out, np.arange(650.0, 950.0))

# A counter hands out every value once.
c = nf.Counter(10)
mine = [c.next() for _ in range(20)]
got = []
for q in range(n):
    got += w.bcast(mine if q == r else None, root=q)
assert sorted(got) == list(range(10, 10 + 20 * n)), got
w.barrier()
assert c.value() == 10 + 20 * n
c.destroy()

# Errors are Python exceptions with messages.
raises(IndexError, h.__getitem__, 1000, match="out of bounds")
raises(IndexError, h.__getitem__, (1, 2), match="too many indices")
raises(TypeError, h.__getitem__, [1, 2], match="fancy")
raises(ValueError, h.__getitem__, slice(None, None, -1), match="negative")
raises(TypeError, h.__setitem__, 0, 1 + 2j, match="same_kind")
raises(ValueError, h.__setitem__, slice(0, 10), np.ones(3), match="shape")
raises(TypeError, nf.GlobalArray, (3,), "U8", match="int32")
raises(ValueError, nf.GlobalArray, (-3,), match="negative")
raises(ValueError, nf.GlobalArray, (8,), chunks=(1,) if n < 8 else (0,), match="chunks")
raises(ValueError, h.get_nb, slice(0, 3), np.empty(4), match="elements")
i32 = nf.GlobalArray((4,), "int32")
raises(TypeError, i32.fill, 2.5, match="losing")
raises(TypeError, i32.acc, slice(0, 4), np.ones(4, dtype=np.int32), alpha=0.5)
view = h.local()
raises(RuntimeError, h.destroy, match="view")
del view
h.destroy()
raises(RuntimeError, h.__getitem__, 0, match="destroyed")
with nf.GlobalArray((3, 3), "float32") as tmp:
    tmp.fill(1)
    assert tmp.sum() == 9

ok(w, "arrays")
