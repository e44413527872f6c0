"""A program that already uses mpi4py: ninefold joins through MPI's communicator."""

import numpy as np
from common import ok
from mpi4py import MPI

import ninefold as nf

comm = MPI.COMM_WORLD
w = nf.init()
assert w.bootstrap == "mpi4py", w.bootstrap
assert (w.rank, w.size) == (comm.Get_rank(), comm.Get_size())
r, n = w.rank, w.size

a = nf.GlobalArray((20, 6), "float64")
a[r * 20 // n : (r + 1) * 20 // n] = r
a.sync()
col = a[:, 0]
want = np.repeat(np.arange(n, dtype=float), [(q + 1) * 20 // n - q * 20 // n for q in range(n)])
assert np.array_equal(col, want), col
# MPI and ninefold in the same job, interleaved.
total = comm.allreduce(float(a.sum()))
assert total == float(a.sum()) * n
w.send((r + 1) % n, np.array([r]), tag=9)
assert w.recv((r - 1) % n, 9)[0] == (r - 1) % n
comm.Barrier()
a.destroy()
ok(w, "mpi_interop")
