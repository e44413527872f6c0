#!/usr/bin/env python3
"""Table, ratios and targets of bench/compare-python.sh (standard library; matplotlib
for the plot when it is there).

Reads every run's JSON report in DIR (bench/python/common.py's shape: bench "python",
a side, results rows) and DIR/notes.txt ("key<TAB>value" lines: load average at start
and end, cores, BLAS of each pdgemm, what was skipped), takes per side the best of its
K runs (latency: smallest median; bandwidth: largest MB/s of the median; matmul:
largest GFLOP/s of the median product), and prints ninefold, the anchor, the ratio
ninefold / anchor and the target, met or missed:

  p2p 8 B half round trip        ninefold / mpi4py Send+Recv      <= 1.0
  p2p 1 MiB bandwidth            ninefold / mpi4py                >= 1.2
  get 8 elements (64 B) latency  ninefold a[i:j] / Win.Get+Flush  <= 0.5
  get 1 MiB bandwidth            ninefold / mpi4py                >= 1.0
  matmul 2048 GFLOP/s            nf.matmul / pdgemm (OpenBLAS)    >= 0.8 (the target)
                                 nf.matmul / pdgemm (Debian's default libblas.so.3),
                                 / numpy @ with as many threads as ranks, 1 thread,
                                 all cores: reported, no target

Writes DIR/compare.json, DIR/compare.csv and, with matplotlib, DIR/compare.png.
Every matmul report must say its product was correct, or the script fails.

usage: report.py --dir DIR [--ranks 2]
"""

import argparse
import csv
import glob
import json
import os
import sys

KIB, MIB = 1 << 10, 1 << 20


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"report: {path}: {e}")


def fmt_size(size):
    for scale, unit in ((MIB, "MiB"), (KIB, "KiB")):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    a = ap.parse_args(argv)

    notes = {}
    path = os.path.join(a.dir, "notes.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                k, _, v = line.rstrip("\n").partition("\t")
                notes[k] = v

    # runs[side] = [report, ...]
    runs = {}
    def round_of(p):  # runs/SIDE-K.json: round order, 10 after 9
        stem = os.path.basename(p)[: -len(".json")]
        side, _, k = stem.rpartition("-")
        return (side, int(k) if k.isdigit() else 0)

    for p in sorted(glob.glob(os.path.join(a.dir, "runs", "*.json")), key=round_of):
        rep = load(p)
        if rep.get("bench") != "python":
            continue
        runs.setdefault(rep["side"], []).append(rep)
        for r in rep.get("results", []):
            if r.get("metric") == "matmul" and not r.get("correct", False):
                sys.exit(f"report: {p}: the {rep['side']} product is WRONG "
                         f"(checksum {r.get('checksum')}, want {r.get('expected_checksum')})")

    def best(side, metric, size, key, larger):
        rows = [r for rep in runs.get(side, []) for r in rep.get("results", [])
                if r.get("metric") == metric and r.get("size") == size]
        if not rows:
            return None
        return (max if larger else min)(rows, key=lambda r: r[key])

    def values(side, metric, size, key):
        """The metric of every run of a side, in round order (the spread behind best-of)."""
        return [r[key] for rep in runs.get(side, []) for r in rep.get("results", [])
                if r.get("metric") == metric and r.get("size") == size]

    def count(side):
        return len(runs.get(side, []))

    rows = []

    def add(what, ours_side, theirs_side, metric, size, key, unit, goal, larger, anchor):
        o = best(ours_side, metric, size, key, larger)
        t = best(theirs_side, metric, size, key, larger)
        row = {"metric": what, "ours_side": ours_side, "anchor_side": theirs_side,
               "anchor": anchor, "unit": unit, "ours": o[key] if o else None,
               "theirs": t[key] if t else None, "ratio": None, "goal": None, "met": None,
               "ours_p90_us": o.get("p90_us") if o else None,
               "theirs_p90_us": t.get("p90_us") if t else None,
               "runs": f"{count(ours_side)}/{count(theirs_side)}"}
        if o and t and t[key]:
            row["ratio"] = o[key] / t[key]
        row["ours_runs"] = values(ours_side, metric, size, key)
        row["theirs_runs"] = values(theirs_side, metric, size, key)
        if goal is not None:
            row["goal"] = f"{'>=' if larger else '<='} {goal}"
            if row["ratio"] is not None:
                row["met"] = row["ratio"] >= goal if larger else row["ratio"] <= goal
        rows.append(row)

    add("p2p 8 B half round trip", "ninefold", "mpi4py", "pingpong", 8, "median_us", "us",
        1.0, False, "mpi4py Send/Recv")
    add("p2p 1 MiB bandwidth (ping-pong)", "ninefold", "mpi4py", "pingpong", MIB, "mb_per_s",
        "MB/s", 1.2, True, "mpi4py Send/Recv")
    add("get 8 x float64 latency", "ninefold", "mpi4py", "get", 64, "median_us", "us", 0.5,
        False, "mpi4py Win.Get+Flush")
    add("get 1 MiB bandwidth", "ninefold", "mpi4py", "get", MIB, "mb_per_s", "MB/s", 1.0,
        True, "mpi4py Win.Get+Flush")
    n = notes.get("n", "2048")
    add(f"matmul {n}^2 GFLOP/s", "ninefold", "pdgemm-openblas", "matmul", 0, "gflop_per_s",
        "GFLOP/s", 0.8, True, f"ScaLAPACK pdgemm, OpenBLAS, {a.ranks} ranks")
    add(f"matmul {n}^2 GFLOP/s", "ninefold", "pdgemm-system", "matmul", 0, "gflop_per_s",
        "GFLOP/s", None, True,
        f"ScaLAPACK pdgemm, {os.path.basename(notes.get('system_blas', 'libblas.so.3'))}, {a.ranks} ranks")
    threads = sorted({int(s.split("-")[1][:-1]) for s in runs if s.startswith("numpy-")})
    for t in sorted(threads, key=lambda t: (t != a.ranks, t)):
        tag = " (same cores as the ranks)" if t == a.ranks else ""
        add(f"matmul {n}^2 GFLOP/s", "ninefold", f"numpy-{t}t", "matmul", 0, "gflop_per_s",
            "GFLOP/s", None, True, f"numpy @, 1 process, {t} thread{'s' if t > 1 else ''}{tag}")

    def num(x, unit):
        if x is None:
            return "not run"
        return f"{x:.3f}" if unit == "us" else f"{x:.2f}"

    print(f"ninefold from Python vs mpi4py / ScaLAPACK / numpy, same run, {a.ranks} local ranks "
          f"(ratio = ninefold / anchor; best of K runs per side)")
    print(f"# load average: start {notes.get('load_start', '?')}, end {notes.get('load_end', '?')}; "
          f"cores {notes.get('cores', '?')}; git {notes.get('git', '?')}")
    for k in sorted(notes):
        if k.startswith("skipped") or k in ("pdgemm_blas_openblas", "system_blas", "mpi4py",
                                             "numpy_blas", "p2p_method"):
            print(f"# {k}: {notes[k]}")
    head = ("metric", "anchor", "ninefold", "anchor_value", "unit", "ratio", "target", "met", "runs")
    table = []
    for r in rows:
        table.append((r["metric"], r["anchor"], num(r["ours"], r["unit"]), num(r["theirs"], r["unit"]),
                      r["unit"], "-" if r["ratio"] is None else f"{r['ratio']:.2f}",
                      r["goal"] or "(reported)",
                      "-" if r["met"] is None else ("met" if r["met"] else "MISSED"), r["runs"]))
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    for line in [head] + table:
        print("  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(line, widths))))
    lat = [r for r in rows if r["unit"] == "us" and r["ours_p90_us"] is not None]
    if lat:
        print("# p90 latency (us): " + "; ".join(
            f"{r['metric']}: ninefold {r['ours_p90_us']:.3f}, anchor "
            f"{r['theirs_p90_us']:.3f}" for r in lat if r["theirs_p90_us"] is not None))
    print("# every run (round order), ninefold | anchor:")
    for r in rows:
        if r["ours_runs"] or r["theirs_runs"]:
            f = (lambda x: f"{x:.3f}") if r["unit"] == "us" else (lambda x: f"{x:.1f}")
            print(f"#   {r['metric']} vs {r['anchor']} ({r['unit']}): "
                  f"{' '.join(map(f, r['ours_runs'])) or '-'} | {' '.join(map(f, r['theirs_runs'])) or '-'}")
    for side, reps in sorted(runs.items()):
        for rep in reps[:1]:
            for r in rep["results"]:
                if r.get("metric") == "matmul":
                    print(f"# {side}: matmul checksum {r['checksum']:.17g} (expected "
                          f"{r['expected_checksum']:.17g}, spot error {r['max_spot_err']})")

    try:
        with open(os.path.join(a.dir, "compare.csv"), "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            keys = ("metric", "anchor", "ours", "theirs", "unit", "ratio", "goal", "met", "runs")
            w.writerow(keys)
            for r in rows:
                w.writerow([r[k] for k in keys])
        with open(os.path.join(a.dir, "compare.json"), "w", encoding="utf-8") as f:
            json.dump({"bench": "compare-python", "notes": notes, "rows": rows,
                       "runs": {s: [rep["params"] for rep in reps] for s, reps in runs.items()}},
                      f, indent=2)
            f.write("\n")
    except OSError as e:
        sys.exit(f"report: {e}")
    plot(a.dir, rows, runs)
    return 0


def plot(d, rows, runs):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# no matplotlib: no compare.png", file=sys.stderr)
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5))
    rr = [r for r in rows if r["ratio"] is not None]
    labels = [f"{r['metric']}\nvs {r['anchor']}" for r in rr]
    colors = ["tab:gray" if r["met"] is None else ("tab:green" if r["met"] else "tab:red") for r in rr]
    ax1.barh(range(len(rr)), [r["ratio"] for r in rr], color=colors)
    for i, r in enumerate(rr):
        if r["goal"]:
            g = float(r["goal"].split()[1])
            ax1.plot([g, g], [i - 0.4, i + 0.4], color="black", linewidth=2)
    ax1.set_yticks(range(len(rr)))
    ax1.set_yticklabels(labels, fontsize=7)
    ax1.invert_yaxis()
    ax1.axvline(1.0, color="gray", linestyle=":")
    ax1.set_xlabel("ninefold / anchor (black bar: target; green met, red missed, gray no target)")
    ax1.set_title("ratios (latency: lower is better; bandwidth, GFLOP/s: higher)", fontsize=9)
    sides, gf = [], []
    for side in sorted(runs):
        vals = [r["gflop_per_s"] for rep in runs[side] for r in rep["results"]
                if r.get("metric") == "matmul"]
        if vals:
            sides.append(side)
            gf.append(max(vals))
    ax2.bar(range(len(sides)), gf, color=["tab:blue" if s == "ninefold" else "tab:orange" for s in sides])
    ax2.set_xticks(range(len(sides)))
    ax2.set_xticklabels(sides, rotation=20, fontsize=8)
    ax2.set_ylabel("GFLOP/s (median product, best run)")
    ax2.set_title("matmul, float64", fontsize=9)
    fig.tight_layout()
    fig.savefig(os.path.join(d, "compare.png"), dpi=110)
    print(f"# plot: {os.path.join(d, 'compare.png')}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
