#!/usr/bin/env python3
"""ninefold from Python, the "ours" side of bench/compare-python.sh.

Run under `nf run -n 2 -- python3 nf_bench.py ...` (2 ranks; other ranks only join
the collectives). Rank 0 measures, rank 1 answers (p2p) or waits in a barrier (get),
and rank 0 writes one JSON report (bench/python/common.py).

Parts (--parts):
  p2p     ping-pong between ranks 0 and 1 with World.send and World.recv(out=) over
          preallocated numpy uint8 buffers, the same tag every time; rank 0 times each
          round trip and records half of it. Sizes 8 B and 1 MiB by default; the
          bandwidth of a size is size / median half round trip (ping-pong, not
          streaming: the same method as bench/python/mpi4py_bench.py)
  get     a 1-D float64 GlobalArray of 2 MiB per rank; rank 0 gets 8 elements (64 B)
          and 1 MiB from rank 1's block with a[i:j] (a new numpy array each time)
          while rank 1 waits in World.barrier
  matmul  nf.matmul(a, b, c) of n x n float64 GlobalArrays (default 2048): every rank
          enters, the time is from the call to the end of c.sync(), --reps times after
          one untimed product; checked once against the exact integer product
          (common.gemm_inputs: checksum equal, spot checks)

usage: nf_bench.py [--parts p2p,get,matmul] [--sizes 8,1048576] [--iters N] [--warmup W]
                   [--n N] [--reps R] [--json FILE]
"""

import argparse
import sys

import numpy as np

import common

TAG = 7


def pingpong(w, size, iters, warmup):
    sbuf = np.full(size, 1, dtype=np.uint8)
    rbuf = np.empty(size, dtype=np.uint8)
    send, recv, now = w.send, w.recv, common.now_ns
    samples = []
    w.barrier()
    if w.rank == 0:
        for it in range(warmup + iters):
            t0 = now()
            send(1, sbuf, tag=TAG)
            recv(source=1, tag=TAG, out=rbuf)
            t1 = now()
            if it >= warmup:
                samples.append((t1 - t0) / 2)
        if rbuf[0] != 1 or rbuf[-1] != 1:
            sys.exit("nf_bench: the ping-pong's payload came back wrong")
    elif w.rank == 1:
        for _ in range(warmup + iters):
            recv(source=0, tag=TAG, out=rbuf)
            send(0, rbuf, tag=TAG)
    w.barrier()
    return samples


def gets(nf, w, sizes, iters, warmup):
    per = 2 * common.MIB // 8  # elements per rank: rank 1's block holds 1 MiB gets
    a = nf.GlobalArray((per * w.size,), "float64")
    a.local()[:] = w.rank + 1
    a.sync()
    rows = []
    if w.rank == 0:
        whole = a[0: per * w.size]
        mine = np.nonzero(whole == 2)[0]  # rank 1's block, wherever the layout puts it
        if len(mine) == 0 or mine[-1] - mine[0] + 1 != len(mine):
            sys.exit(f"nf_bench: rank 1's block is not one contiguous range ({len(mine)} elements)")
        lo = int(mine[0])
        now = common.now_ns
        for size in sizes:
            k = size // 8
            if k > len(mine):
                sys.exit(f"nf_bench: get of {size} B is larger than rank 1's block")
            n = common.iters_for(size, iters)
            samples = []
            for it in range(min(warmup, n) + n):
                t0 = now()
                x = a[lo: lo + k]
                t1 = now()
                if it >= min(warmup, n):
                    samples.append(t1 - t0)
            if x.shape != (k,) or not np.all(x == 2):
                sys.exit(f"nf_bench: get of {size} B returned wrong data")
            rows.append(common.row("get", size, samples))
    w.barrier()
    a.destroy()
    return rows


def matmul(nf, w, n, reps):
    A, B = common.gemm_inputs(n, np)
    a = nf.GlobalArray((n, n), "float64")
    b = nf.GlobalArray((n, n), "float64")
    c = nf.GlobalArray((n, n), "float64")
    if w.rank == 0:
        a[0:n, 0:n] = A
        b[0:n, 0:n] = B
    a.sync()
    b.sync()
    c.sync()
    times = []
    now = common.now_ns
    for it in range(1 + reps):
        w.barrier()
        t0 = now()
        nf.matmul(a, b, c)
        c.sync()
        t1 = now()
        if it >= 1:
            times.append((t1 - t0) / 1e9)
    rows = []
    if w.rank == 0:
        C = c[0:n, 0:n]
        got = common.gemm_checksum(C, np)
        want = common.gemm_expected(A, B, np)
        err = common.spot_check(lambda i, j: float(C[i, j]), A, B)
        ok = got == want and err == 0.0
        rows.append(common.gemm_row("matmul", n, times, checksum=got, expected_checksum=want,
                                    max_spot_err=err, correct=ok))
        if not ok:
            print(f"nf_bench: nf.matmul is WRONG: checksum {got!r} (want {want!r}), "
                  f"spot error {err}", file=sys.stderr)
    w.barrier()
    for g in (c, b, a):
        g.destroy()
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--parts", default="p2p,get,matmul")
    ap.add_argument("--sizes", default="8,1048576", help="p2p sizes, bytes")
    ap.add_argument("--get-sizes", default="64,1048576", help="get sizes, bytes (multiples of 8)")
    ap.add_argument("--iters", type=int, default=10000)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--git", default="")
    o = ap.parse_args()
    parts = o.parts.split(",")

    import ninefold as nf

    w = nf.init()
    if w.size < 2:
        sys.exit("nf_bench: needs 2 ranks (nf run -n 2)")
    results = []
    skipped = {}
    if not hasattr(nf, "GlobalArray") or not hasattr(nf, "matmul"):
        for part in ("get", "matmul"):
            if part in parts:
                parts.remove(part)
                skipped[part] = "this build of ninefold has no GlobalArray / matmul"
    if "p2p" in parts:
        for size in (int(s) for s in o.sizes.split(",")):
            n = common.iters_for(size, o.iters)
            s = pingpong(w, size, n, min(o.warmup, n))
            if w.rank == 0:
                results.append(common.row("pingpong", size, s, method="ping-pong, half round trip"))
    if "get" in parts:
        results += gets(nf, w, [int(s) for s in o.get_sizes.split(",")], o.iters, o.warmup)
    if "matmul" in parts:
        results += matmul(nf, w, o.n, o.reps)
    if w.rank == 0:
        params = common.env_params()
        params.update(ranks=w.size, iters=o.iters, warmup=o.warmup, git=o.git,
                      ninefold=getattr(nf, "__version__", ""), numpy=np.__version__,
                      skipped=skipped)
        common.write_report(o.json, "python", "ninefold", params, results)
        common.print_rows("ninefold (Python)", results)
        for part, why in skipped.items():
            print(f"# {part}: not run ({why})")
    w.barrier()


if __name__ == "__main__":
    main()
