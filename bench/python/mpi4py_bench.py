#!/usr/bin/env python3
"""mpi4py, the anchor side of bench/compare-python.sh: the same measurements as
bench/python/nf_bench.py, through MPI.

Run under `mpirun -np 2 python3 mpi4py_bench.py ...`. Rank 0 measures and writes one
JSON report (bench/python/common.py).

Parts (--parts):
  p2p  ping-pong between ranks 0 and 1 with the buffer methods Comm.Send / Comm.Recv
       over preallocated numpy uint8 buffers, one tag; half round trip per iteration;
       bandwidth = size / median half round trip (ping-pong)
  get  MPI.Win.Allocate of 2 MiB per rank (disp_unit 8), Lock_all once; rank 0 times
       Win.Get of 8 float64 (64 B) and of 1 MiB from rank 1's window into a
       preallocated numpy array, each followed by Win.Flush(1), while rank 1 waits in
       Comm.Barrier (which lets MPI progress for it)

usage: mpi4py_bench.py [--parts p2p,get] [--sizes 8,1048576] [--iters N] [--warmup W]
                       [--json FILE]
"""

import argparse
import sys

import numpy as np
from mpi4py import MPI

import common

TAG = 7


def pingpong(comm, size, iters, warmup):
    sbuf = np.full(size, 1, dtype=np.uint8)
    rbuf = np.empty(size, dtype=np.uint8)
    rank = comm.Get_rank()
    send, recv, now = comm.Send, comm.Recv, common.now_ns
    samples = []
    comm.Barrier()
    if rank == 0:
        for it in range(warmup + iters):
            t0 = now()
            send(sbuf, 1, TAG)
            recv(rbuf, 1, TAG)
            t1 = now()
            if it >= warmup:
                samples.append((t1 - t0) / 2)
        if rbuf[0] != 1 or rbuf[-1] != 1:
            sys.exit("mpi4py_bench: the ping-pong's payload came back wrong")
    elif rank == 1:
        for _ in range(warmup + iters):
            recv(rbuf, 0, TAG)
            send(rbuf, 0, TAG)
    comm.Barrier()
    return samples


def gets(comm, sizes, iters, warmup):
    per = 2 * common.MIB // 8
    rank = comm.Get_rank()
    win = MPI.Win.Allocate(per * 8, 8, comm=comm)
    win.Lock_all()
    mem = np.frombuffer(win.tomemory(), dtype=np.float64)
    mem[:] = rank + 1
    win.Sync()
    comm.Barrier()
    rows = []
    if rank == 0:
        now = common.now_ns
        for size in sizes:
            k = size // 8
            buf = np.empty(k, dtype=np.float64)
            n = common.iters_for(size, iters)
            samples = []
            get, flush = win.Get, win.Flush
            for it in range(min(warmup, n) + n):
                t0 = now()
                get(buf, 1, 0)
                flush(1)
                t1 = now()
                if it >= min(warmup, n):
                    samples.append(t1 - t0)
            if not np.all(buf == 2):
                sys.exit(f"mpi4py_bench: Get of {size} B returned wrong data")
            rows.append(common.row("get", size, samples))
    comm.Barrier()
    win.Unlock_all()
    win.Free()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--parts", default="p2p,get")
    ap.add_argument("--sizes", default="8,1048576")
    ap.add_argument("--get-sizes", default="64,1048576")
    ap.add_argument("--iters", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--json")
    ap.add_argument("--git", default="")
    o = ap.parse_args()
    parts = o.parts.split(",")
    comm = MPI.COMM_WORLD
    if comm.Get_size() < 2:
        sys.exit("mpi4py_bench: needs 2 ranks (mpirun -np 2)")
    results = []
    if "p2p" in parts:
        for size in (int(s) for s in o.sizes.split(",")):
            n = common.iters_for(size, o.iters)
            s = pingpong(comm, size, n, min(o.warmup, n))
            if comm.Get_rank() == 0:
                results.append(common.row("pingpong", size, s, method="ping-pong, half round trip"))
    if "get" in parts:
        results += gets(comm, [int(s) for s in o.get_sizes.split(",")], o.iters, o.warmup)
    if comm.Get_rank() == 0:
        import mpi4py

        params = common.env_params()
        params.update(ranks=comm.Get_size(), iters=o.iters, warmup=o.warmup, git=o.git,
                      mpi4py=mpi4py.__version__, mpi_library=MPI.Get_library_version().strip(),
                      numpy=np.__version__)
        common.write_report(o.json, "python", "mpi4py", params, results)
        common.print_rows("mpi4py", results)
    comm.Barrier()


if __name__ == "__main__":
    main()
