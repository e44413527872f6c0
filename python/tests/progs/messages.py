"""Point-to-point messages and collectives, checked against the values sent."""

import numpy as np
from common import ok, raises, start

import ninefold as nf

w, r, n = start()
right, left = (r + 1) % n, (r - 1) % n

# Every kind of object around the ring, to ourselves when alone.
values = [
    np.arange(10, dtype=np.float64) * r,
    np.arange(24, dtype=np.int32).reshape(2, 3, 4) + r,
    np.ones((2, 2, 2, 2, 2), dtype=np.complex128) * (r + 1j),  # 5 dims: shape in the payload
    np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2],  # not contiguous
    np.zeros((0, 5), dtype=np.int64),
    np.array(7, dtype=np.uint16),  # 0-d
    b"raw bytes %d" % r,
    bytearray(b"mutable"),
    {"rank": r, "list": [1, 2, 3], "text": "é"},
    None,
]
for i, v in enumerate(values):
    w.send(right, v, tag=i)
for i, v in enumerate(values):
    st = nf.Status()
    got = w.recv(left, i, status=st)
    assert st.source == left and st.tag == i, st
    want = [
        np.arange(10, dtype=np.float64) * left,
        np.arange(24, dtype=np.int32).reshape(2, 3, 4) + left,
        np.ones((2, 2, 2, 2, 2), dtype=np.complex128) * (left + 1j),
        np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2],
        np.zeros((0, 5), dtype=np.int64),
        np.array(7, dtype=np.uint16),
        b"raw bytes %d" % left,
        b"mutable",
        {"rank": left, "list": [1, 2, 3], "text": "é"},
        None,
    ][i]
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray) and got.dtype == want.dtype and got.shape == want.shape, (i, got)
        assert (got == want).all(), (i, got, want)
    else:
        assert got == want, (i, got, want)

# Order: messages with one tag arrive in the order sent; tags select.
for k in range(50):
    w.send(right, np.array([k]), tag=100 + k % 2)
odd = [int(w.recv(left, 101)[0]) for _ in range(25)]
even = [int(w.recv(left, 100)[0]) for _ in range(25)]
assert odd == list(range(1, 50, 2)) and even == list(range(0, 50, 2)), (odd, even)

# Posted receives are matched in the order they were posted, ANY_SOURCE included.
reqs = [w.irecv(nf.ANY_SOURCE, 200) for _ in range(3)]
for k in range(3):
    w.isend(right, np.array([k * 10 + r]), tag=200).wait()
got = [int(x[0]) for x in nf.waitall(reqs)]
assert got == [k * 10 + left for k in range(3)], got

# Receiving in place; a message too large for out stays queued.
buf = np.zeros(1 << 16, dtype=np.int64)
w.send(right, np.arange(1 << 16, dtype=np.int64) + r, tag=300)
small = np.zeros(4, dtype=np.int64)
raises(ValueError, w.recv, left, 300, out=small, match="stays queued")
raises(TypeError, w.recv, left, 300, out=np.zeros(1 << 16, dtype=np.float64), match="dtype")
assert w.recv(left, 300, out=buf) is buf and buf[-1] == (1 << 16) - 1 + left
# A large message (rendezvous) both ways at once.
big = np.full(1 << 21, r, dtype=np.float64)
w.isend(right, big, tag=301)
assert (w.recv(left, 301) == left).all()

# probe / iprobe leave the message queued; test() completes.
w.send(right, b"x" * 33, tag=400)
st = w.probe(left, 400)
assert (st.source, st.tag, st.nbytes) == (left, 400, 33), st
assert w.iprobe(left, 400) is not None
req = w.irecv(left, 400)
done, val = req.test()
while not done:
    done, val = req.test()
assert val == b"x" * 33
assert w.iprobe(left, 400) is None

# An unwaited receive request gives its message back when dropped.
w.send(right, b"kept", tag=401)
w.barrier()
req = w.irecv(left, 401)
del req
assert w.recv(left, 401) == b"kept"

# Collectives.
assert w.bcast({"from": 0} if r == 0 else None, root=0) == {"from": 0}
root = n - 1
arr = np.arange(5, dtype=np.float64) if r == root else np.zeros(5)
res = w.bcast(arr, root=root)
assert res is arr and (arr == np.arange(5)).all()
assert (w.bcast(np.eye(3) if r == 0 else None) == np.eye(3)).all()
for dt in (np.int32, np.int64, np.uint8, np.float32, np.float64):
    x = np.array([r, n - 1 - r, 2], dtype=dt)
    s = w.allreduce(x, "sum")
    assert s.dtype == dt and s[0] == dt(sum(range(n))), (dt, s)
    assert w.allreduce(x, "max")[0] == n - 1 and w.allreduce(x, "min")[0] == 0
c = w.allreduce(np.array([1 + 2j]) * r)
assert c[0] == sum(range(n)) * (1 + 2j), c
assert w.allreduce(r) == sum(range(n)) and w.allreduce(0.5, "max") == 0.5

# Bad arguments are Python exceptions, not crashes.
raises(ValueError, w.send, n, b"x", match="not a rank")
raises(ValueError, w.send, 0, b"x", tag=-3, match="tag")
raises(ValueError, w.recv, n + 5, match="not a rank")
raises(ValueError, w.allreduce, np.ones(2), "prod", match="unknown reduction")
raises(TypeError, w.allreduce, "text", match="numbers")
raises(ValueError, w.allreduce, np.ones(1, dtype=complex), "max", match="order")
raises(TypeError, w.recv, 0, 0, out=[1, 2], match="numpy array")
assert nf.init() is w

ok(w, "messages")
