#!/usr/bin/env python3
"""Ratio table of two sets of benchmark reports (Python 3 standard library only).

Each input is a JSON report in the shape written by `nf bench pingpong --json` and by
bench/mpi/pingpong.c, or by `nf bench rma --json` (one operation and layout) and by
bench/mpi/rma.c (see crates/bench/src/report.rs). Given K reports per side (one per
alternation of bench/compare-mpi.sh or bench/compare-rma.sh), for every size measured
on both sides:

  latency   = best of K: the smallest per-run median time (half round trip for the
              ping-pong, one operation for rma) (us)
  bandwidth = best of K: the largest per-run mb_per_s (size / median time, MB = 10^6 B)
  ratios    = ours / theirs, for latency (below 1 is better for us) and bandwidth
              (above 1 is better for us)

Prints an aligned table and optionally writes it as CSV and JSON (the JSON also keeps
every run's median and mb_per_s, so the spread across alternations is not lost), and
the per-size best rows of each side as report-shaped JSON for plotting.

usage: compare_report.py --ours A1.json [A2.json ...] --theirs B1.json [B2.json ...]
                         [--ours-label L] [--theirs-label L] [--csv F] [--json F]
                         [--best-ours F] [--best-theirs F]
"""

import argparse
import csv
import json
import sys

RESULT_KEYS = ("size", "iters", "min_us", "avg_us", "median_us", "max_us", "stddev_us", "mb_per_s")


def fmt_size(size):
    """8 B, 4 KiB, 8 MiB, 2000000 B (binary units only when exact), as nf-bench does."""
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def load(paths):
    """Reads reports; exits with a message naming the file on any problem."""
    reports = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                rep = json.load(f)
            for row in rep["results"]:
                for key in RESULT_KEYS:
                    if not isinstance(row[key], (int, float)):
                        raise ValueError(f"results.{key} is not a number")
        except KeyError as e:
            sys.exit(f"compare_report: {path}: not a ping-pong report (missing key {e})")
        except (OSError, ValueError, TypeError) as e:
            sys.exit(f"compare_report: {path}: {e}")
        reports.append(rep)
    return reports


def best_of(reports):
    """Per size: (best row by median, all medians, all mb_per_s, best mb_per_s)."""
    by_size = {}
    for rep in reports:
        for row in rep["results"]:
            by_size.setdefault(row["size"], []).append(row)
    out = {}
    for size, rows in by_size.items():
        best = min(rows, key=lambda r: r["median_us"])
        out[size] = {
            "row": best,
            "medians": [r["median_us"] for r in rows],
            "rates": [r["mb_per_s"] for r in rows],
            "best_rate": max(r["mb_per_s"] for r in rows),
        }
    return out


def ratio(a, b):
    return a / b if b else None


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def best_report(reports, best, label):
    """A report of the same shape holding each size's best-median row."""
    first = reports[0]
    rep = {k: first[k] for k in ("bench", "transport", "ranks", "host", "timestamp") if k in first}
    if "git" in first:
        rep["git"] = first["git"]
    rep["params"] = dict(first.get("params", {}))
    rep["params"]["best_of"] = len(reports)
    rep["params"]["label"] = label
    rep["results"] = [best[s]["row"] for s in sorted(best)]
    return rep


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--ours", nargs="+", required=True, help="ninefold reports (one per alternation)")
    ap.add_argument("--theirs", nargs="+", required=True, help="reference reports, e.g. Open MPI")
    ap.add_argument("--ours-label", default=None, help="column label (default: transport of the first report)")
    ap.add_argument("--theirs-label", default=None, help="column label (default: transport of the first report)")
    ap.add_argument("--csv", help="write the table as CSV here")
    ap.add_argument("--json", help="write the table (and every run's figures) as JSON here")
    ap.add_argument("--best-ours", help="write our per-size best rows as a report here")
    ap.add_argument("--best-theirs", help="write their per-size best rows as a report here")
    a = ap.parse_args(argv)

    ours, theirs = load(a.ours), load(a.theirs)
    ours_label = a.ours_label or ours[0].get("transport", "ours")
    theirs_label = a.theirs_label or theirs[0].get("transport", "theirs")
    bo, bt = best_of(ours), best_of(theirs)
    sizes = sorted(set(bo) & set(bt))
    for side, b in (("ours", bo), ("theirs", bt)):
        missing = sorted(set(b) - set(sizes))
        if missing:
            print(f"compare_report: sizes only in {side}: {', '.join(map(fmt_size, missing))}", file=sys.stderr)
    if not sizes:
        sys.exit("compare_report: no message size was measured on both sides")

    rows = []
    for s in sizes:
        o, t = bo[s], bt[s]
        lat_o, lat_t = o["row"]["median_us"], t["row"]["median_us"]
        rows.append({
            "size": s,
            "ours_median_us": lat_o,
            "theirs_median_us": lat_t,
            "latency_ratio": ratio(lat_o, lat_t),
            "ours_mb_per_s": o["best_rate"],
            "theirs_mb_per_s": t["best_rate"],
            "bandwidth_ratio": ratio(o["best_rate"], t["best_rate"]),
            "ours_medians_us": o["medians"],
            "theirs_medians_us": t["medians"],
            "ours_mb_per_s_all": o["rates"],
            "theirs_mb_per_s_all": t["rates"],
        })

    k_o, k_t = len(ours), len(theirs)
    bench = ours[0].get("bench", "pingpong")
    what = "median half round trip" if bench == "pingpong" else "median time per operation"
    print(f"{bench}, best of {k_o} ({ours_label}) / {k_t} ({theirs_label}) runs; "
          f"latency = {what}, ratio = ours / theirs")
    head = ("size", f"{ours_label} us", f"{theirs_label} us", "lat ratio",
            f"{ours_label} MB/s", f"{theirs_label} MB/s", "bw ratio")
    widths = [max(10, len(h)) for h in head]
    print("  ".join(h.rjust(w) for h, w in zip(head, widths)))
    for r in rows:
        cells = (fmt_size(r["size"]), f"{r['ours_median_us']:.2f}", f"{r['theirs_median_us']:.2f}",
                 fmt_ratio(r["latency_ratio"]), f"{r['ours_mb_per_s']:.1f}", f"{r['theirs_mb_per_s']:.1f}",
                 fmt_ratio(r["bandwidth_ratio"]))
        print("  ".join(c.rjust(w) for c, w in zip(cells, widths)))

    if a.csv:
        cols = ("size", "ours_median_us", "theirs_median_us", "latency_ratio",
                "ours_mb_per_s", "theirs_mb_per_s", "bandwidth_ratio")
        try:
            with open(a.csv, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(cols)
                for r in rows:
                    w.writerow(["" if r[c] is None else r[c] for c in cols])
        except OSError as e:
            sys.exit(f"compare_report: {a.csv}: {e}")
    outputs = []
    if a.json:
        outputs.append((a.json, {
            "bench": f"{bench}-compare",
            "ours": {"label": ours_label, "runs": k_o, "files": a.ours},
            "theirs": {"label": theirs_label, "runs": k_t, "files": a.theirs},
            "method": f"latency: min over runs of {what}; "
                      "bandwidth: max over runs of mb_per_s; ratios ours / theirs",
            "rows": rows,
        }))
    if a.best_ours:
        outputs.append((a.best_ours, best_report(ours, bo, ours_label)))
    if a.best_theirs:
        outputs.append((a.best_theirs, best_report(theirs, bt, theirs_label)))
    for path, obj in outputs:
        try:
            with open(path, "w", encoding="utf-8") as f:
                json.dump(obj, f, indent=2)
                f.write("\n")
        except OSError as e:
            sys.exit(f"compare_report: {path}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
