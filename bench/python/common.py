"""What the Python benchmarks of bench/compare-python.sh share (standard library + numpy).

Every program times many operations after a warm-up and writes one JSON report:
{"bench": NAME, "side": SIDE, "params": {...}, "results": [ROW, ...]} where a ROW is
{"metric": ..., "size": bytes, "iters": n, "median_us": ..., "p10_us", "p90_us",
"p99_us", "min_us", "max_us", "mean_us", and "mb_per_s" (MB = 10^6 B, size / median)
or "gflop_per_s"}. The iteration rule is nf_bench::pingpong::iters_for's: N up to
64 KiB, max(20, min(N, N * 64 KiB / size)) above.
"""

import json
import os
import platform
import statistics
import time

KIB = 1 << 10
MIB = 1 << 20


def iters_for(size, iters):
    if size <= 64 * KIB:
        return iters
    return max(20, min(iters, iters * 64 * KIB // size))


def percentile(sorted_xs, q):
    """The q-th percentile (0..100) of sorted samples, nearest rank."""
    if not sorted_xs:
        return float("nan")
    k = max(0, min(len(sorted_xs) - 1, int(round(q / 100.0 * (len(sorted_xs) - 1)))))
    return sorted_xs[k]


def stats_us(samples_ns):
    """Median, percentiles, min, max and mean of samples in ns, as microseconds."""
    xs = sorted(s / 1000.0 for s in samples_ns)
    return {
        "iters": len(xs),
        "median_us": statistics.median(xs),
        "p10_us": percentile(xs, 10),
        "p90_us": percentile(xs, 90),
        "p99_us": percentile(xs, 99),
        "min_us": xs[0],
        "max_us": xs[-1],
        "mean_us": statistics.fmean(xs),
    }


def row(metric, size, samples_ns, **extra):
    r = {"metric": metric, "size": size}
    r.update(stats_us(samples_ns))
    if size:
        r["mb_per_s"] = size / r["median_us"]  # B / us = MB / s
    r.update(extra)
    return r


def gemm_row(metric, n, samples_s, **extra):
    """A matmul row: seconds per product, and GFLOP/s of the median (2 n^3 flops)."""
    r = {"metric": metric, "size": 0, "n": n}
    r.update(stats_us([s * 1e9 for s in samples_s]))
    flops = 2.0 * n ** 3
    r["gflop_per_s"] = flops / (r["median_us"] * 1e3)
    r["best_gflop_per_s"] = flops / (r["min_us"] * 1e3)
    r.update(extra)
    return r


def gemm_inputs(n, np):
    """The matrices every side multiplies: small integers, so every product entry is an
    integer that float64 holds exactly whatever the summation order, and every side
    must reach the same checksum. Same formulas in bench/python/pdgemm.c."""
    i = np.arange(n, dtype=np.int64)[:, None]
    j = np.arange(n, dtype=np.int64)[None, :]
    a = ((3 * i + 5 * j) % 7 - 3).astype(np.float64)
    b = ((2 * i + 7 * j) % 5 - 2).astype(np.float64)
    return a, b


def gemm_weights(n, np):
    """The checksum's weights: w_i = i % 11 + 1 on rows, v_j = j % 13 + 1 on columns."""
    k = np.arange(n, dtype=np.int64)
    return (k % 11 + 1).astype(np.float64), (k % 13 + 1).astype(np.float64)


def gemm_checksum(c, np):
    """sum_ij w_i C_ij v_j: integers below 2^53 all along, so exact in any order."""
    w, v = gemm_weights(c.shape[0], np)
    return float(w @ c @ v)


def gemm_expected(a, b, np):
    """The checksum of A @ B without the product: (w^T A)(B v)."""
    w, v = gemm_weights(a.shape[0], np)
    return float((w @ a) @ (b @ v))


def spot_check(c_get, a, b, points=64, seed=1):
    """Max abs error of `points` entries of the product against direct dot products;
    c_get(i, j) returns the computed entry."""
    import random

    rnd = random.Random(seed)
    n = a.shape[0]
    worst = 0.0
    for _ in range(points):
        i, j = rnd.randrange(n), rnd.randrange(n)
        worst = max(worst, abs(c_get(i, j) - float(a[i, :] @ b[:, j])))
    return worst


def env_params():
    keys = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
    return {
        "host": platform.node(),
        "python": platform.python_version(),
        "cores": os.cpu_count(),
        "loadavg": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        **{k.lower(): os.environ.get(k, "") for k in keys},
    }


def write_report(path, bench, side, params, results):
    rep = {"bench": bench, "side": side, "params": params, "results": results}
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(rep, f, indent=2)
            f.write("\n")
    return rep


def print_rows(side, results):
    print(f"# {side}")
    print("# metric                 size_B     iters   median_us     p10_us     p90_us     p99_us   MB/s|GFLOP/s")
    for r in results:
        rate = r.get("gflop_per_s", r.get("mb_per_s", float("nan")))
        print(f"{r['metric']:<22} {r['size']:>8} {r['iters']:>9} {r['median_us']:>11.3f} "
              f"{r['p10_us']:>10.3f} {r['p90_us']:>10.3f} {r['p99_us']:>10.3f} {rate:>12.2f}")


def now_ns():
    return time.perf_counter_ns()
