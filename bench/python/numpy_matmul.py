#!/usr/bin/env python3
"""Single-process numpy reference of bench/compare-python.sh: C = A @ B of n x n float64
(np.matmul into a preallocated C), --reps timed products after one untimed, checked
once against the exact integer product (common.gemm_inputs). BLAS threads come from
the environment (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS); --side names the report.

usage: numpy_matmul.py [--n N] [--reps R] [--side NAME] [--json FILE]
"""

import argparse
import sys

import numpy as np

import common


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--side", default="numpy")
    ap.add_argument("--json")
    ap.add_argument("--git", default="")
    o = ap.parse_args()
    A, B = common.gemm_inputs(o.n, np)
    C = np.empty_like(A)
    times = []
    now = common.now_ns
    for it in range(1 + o.reps):
        t0 = now()
        np.matmul(A, B, out=C)
        t1 = now()
        if it >= 1:
            times.append((t1 - t0) / 1e9)
    got = common.gemm_checksum(C, np)
    want = common.gemm_expected(A, B, np)
    err = common.spot_check(lambda i, j: float(C[i, j]), A, B)
    ok = got == want and err == 0.0
    if not ok:
        print(f"numpy_matmul: WRONG product: checksum {got!r} (want {want!r})", file=sys.stderr)
    blas = ""
    try:
        cfg = np.show_config(mode="dicts")
        info = cfg.get("Build Dependencies", {}).get("blas", {})
        blas = f"{info.get('name', '')} {info.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - informational only
        pass
    params = common.env_params()
    params.update(numpy=np.__version__, blas=blas, git=o.git, ranks=1)
    rows = [common.gemm_row("matmul", o.n, times, checksum=got, expected_checksum=want,
                            max_spot_err=err, correct=ok)]
    common.write_report(o.json, "python", o.side, params, rows)
    common.print_rows(o.side, rows)


if __name__ == "__main__":
    main()
