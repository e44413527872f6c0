#!/usr/bin/env python3
"""The libarmci targets, from one bench/compare-armci.sh run (standard library only).

Inputs: the out folders of bench/compare-rma.sh --ours libarmci (their
compare-get-contig.json, written by compare_report.py: best of K runs per side and
the ratios ours / ARMCI-MPI), and the JSON reports of bench/mpi/ga.c, K per side.

Targets (ratios ours / ARMCI-MPI):
  same-host get 8 B latency      <= 0.7   (--rma-shm)
  same-host get 1 MiB bandwidth  >= 1.0   (--rma-shm)
  cross-host get 8 B latency     <= 0.8   (--rma-netns)
  GA run time (best of K)        <= 1.0   (--ga-ours / --ga-theirs), per phase too

Every GA run must report the same checksum (the same answer both ways), or the
script fails.

usage: armci_targets.py [--rma-shm DIR] [--rma-netns DIR] --ga-ours A.json ...
                        --ga-theirs B.json ... [--csv F] [--json F]
"""

import argparse
import csv
import json
import os
import sys

SMALL, LARGE = 8, 1 << 20


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"armci_targets: {path}: {e}")


def rma_row(folder, size):
    """The compare_report row of get/contig at `size`, from one compare-rma.sh folder."""
    path = os.path.join(folder, "compare-get-contig.json")
    rows = [r for r in load(path).get("rows", []) if r.get("size") == size]
    if not rows:
        sys.exit(f"armci_targets: {path} has no {size} B row; run with sizes including it")
    return rows[0]


def ga_best(paths):
    """The run with the smallest total time, and every checksum seen."""
    reps = [load(p) for p in paths]
    for p, r in zip(paths, reps):
        if "total_seconds" not in r or "checksum" not in r:
            sys.exit(f"armci_targets: {p} is not a bench/mpi/ga.c report")
    best = min(reps, key=lambda r: r["total_seconds"])
    return best, {r["checksum"] for r in reps}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--rma-shm", help="compare-rma.sh --path shm out folder")
    ap.add_argument("--rma-netns", help="compare-rma.sh --path netns out folder")
    ap.add_argument("--ga-ours", nargs="+", required=True, help="ga.c reports linked with libarmci")
    ap.add_argument("--ga-theirs", nargs="+", required=True, help="ga.c reports linked with ARMCI-MPI")
    ap.add_argument("--csv", help="write the table as CSV here")
    ap.add_argument("--json", help="write the table as JSON here")
    a = ap.parse_args(argv)

    rows = []

    def add(what, ours, theirs, unit, ratio, goal, better):
        met = ratio <= goal if better == "lower" else ratio >= goal
        rows.append({"target": what, "ours": ours, "theirs": theirs, "unit": unit,
                     "ratio": ratio, "goal": f"{'<=' if better == 'lower' else '>='} {goal}",
                     "met": met})

    if a.rma_shm:
        r = rma_row(a.rma_shm, SMALL)
        add("same-host get 8 B latency", r["ours_median_us"], r["theirs_median_us"], "us",
            r["latency_ratio"], 0.7, "lower")
        r = rma_row(a.rma_shm, LARGE)
        add("same-host get 1 MiB bandwidth", r["ours_mb_per_s"], r["theirs_mb_per_s"], "MB/s",
            r["bandwidth_ratio"], 1.0, "higher")
    if a.rma_netns:
        r = rma_row(a.rma_netns, SMALL)
        add("cross-host get 8 B latency", r["ours_median_us"], r["theirs_median_us"], "us",
            r["latency_ratio"], 0.8, "lower")
    ours, sums_o = ga_best(a.ga_ours)
    theirs, sums_t = ga_best(a.ga_theirs)
    if len(sums_o | sums_t) != 1:
        sys.exit(f"armci_targets: GA checksums differ: libarmci {sorted(sums_o)}, "
                 f"ARMCI-MPI {sorted(sums_t)}")
    add(f"GA run time ({ours.get('ranks')} ranks, best of {len(a.ga_ours)})",
        ours["total_seconds"], theirs["total_seconds"], "s",
        ours["total_seconds"] / theirs["total_seconds"], 1.0, "lower")
    phases = []
    for name, t_o in ours.get("phases", {}).items():
        t_t = theirs.get("phases", {}).get(name)
        if t_t:
            phases.append({"phase": name, "ours_s": t_o, "theirs_s": t_t, "ratio": t_o / t_t})

    print("libarmci / ARMCI-MPI, same run (ratio = ours / theirs)")
    head = ("target", "libarmci", "ARMCI-MPI", "unit", "ratio", "goal", "met")
    table = [(r["target"], f"{r['ours']:.3f}", f"{r['theirs']:.3f}", r["unit"],
              f"{r['ratio']:.2f}", r["goal"], "yes" if r["met"] else "NO") for r in rows]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    for line in [head] + table:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
    if phases:
        print("GA phases (best-of runs): " + ", ".join(
            f"{p['phase']} {p['ours_s']:.4f} / {p['theirs_s']:.4f} s = {p['ratio']:.2f}" for p in phases))
    print(f"GA checksum (both ways): {next(iter(sums_o)):.17g}")

    if a.csv:
        try:
            with open(a.csv, "w", newline="", encoding="utf-8") as f:
                w = csv.writer(f)
                w.writerow(("target", "ours", "theirs", "unit", "ratio", "goal", "met"))
                for r in rows:
                    w.writerow((r["target"], r["ours"], r["theirs"], r["unit"], r["ratio"],
                                r["goal"], r["met"]))
        except OSError as e:
            sys.exit(f"armci_targets: {a.csv}: {e}")
    if a.json:
        try:
            with open(a.json, "w", encoding="utf-8") as f:
                json.dump({"bench": "armci-targets", "targets": rows, "ga_phases": phases,
                           "ga_files": {"ours": a.ga_ours, "theirs": a.ga_theirs}}, f, indent=2)
                f.write("\n")
        except OSError as e:
            sys.exit(f"armci_targets: {a.json}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
