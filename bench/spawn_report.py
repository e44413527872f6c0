#!/usr/bin/env python3
"""Median table, ratios and targets of bench/compare-spawn.sh (Python 3 standard library only).

Reads DIR/spawn.csv (one row per sample: tool, hosts, size, repeat, seconds, ok, copy_s,
run_s) and DIR/notes.txt (the run's facts, one "key<TAB>value" line each: load average
at start and end, how mpirun copied, which sides were skipped and why), and:

1. prints, per binary size, the median time of every tool at every host count (over the
   samples that succeeded; "k/R" beside it when only k of R did), the ratios
   nf-exec / pdsh and nf-ssh / pdsh, and for the two-command sides the median copy and
   run parts;
2. prints the targets, measured ratio and met / missed:
   - at 64 hosts and 16 MiB, nf-exec <= 0.5 x pdcp + pdsh (median against median);
   - nf-exec at 64 hosts <= 2 x nf-exec at 8 hosts, at every size measured;
3. writes DIR/spawn.json: {"notes": {...}, "samples": [...], "medians": [...],
   "targets": [...]}.

usage: spawn_report.py --dir DIR
"""

import argparse
import csv
import json
import os
import statistics
import sys

TOOLS = ("pdsh", "mpirun", "nf-ssh", "nf-exec", "slurm")
BIG_HOSTS, BIG_SIZE = 64, 16 << 20
SMALL_HOSTS = 8


def fmt_size(size):
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def num(text):
    return float(text) if text not in ("", None) else None


def load(d):
    samples = []
    with open(os.path.join(d, "spawn.csv"), encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            samples.append({
                "tool": row["tool"],
                "hosts": int(row["hosts"]),
                "size": int(row["size"]),
                "repeat": int(row["repeat"]),
                "seconds": num(row["seconds"]),
                "ok": row["ok"] == "1",
                "copy_s": num(row.get("copy_s")),
                "run_s": num(row.get("run_s")),
            })
    notes = {}
    path = os.path.join(d, "notes.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("\t")
                notes[key] = value
    return samples, notes


def medians(samples):
    groups = {}
    for s in samples:
        groups.setdefault((s["tool"], s["hosts"], s["size"]), []).append(s)
    rows = []
    for (tool, hosts, size), group in sorted(groups.items()):
        good = [s for s in group if s["ok"]]
        row = {"tool": tool, "hosts": hosts, "size": size, "samples": len(group), "ok": len(good),
               "median_s": None, "min_s": None, "max_s": None,
               "median_copy_s": None, "median_run_s": None}
        if good:
            secs = [s["seconds"] for s in good]
            row.update(median_s=statistics.median(secs), min_s=min(secs), max_s=max(secs))
            copies = [s["copy_s"] for s in good if s["copy_s"] is not None]
            runs = [s["run_s"] for s in good if s["run_s"] is not None]
            if copies:
                row["median_copy_s"] = statistics.median(copies)
            if runs:
                row["median_run_s"] = statistics.median(runs)
        rows.append(row)
    return rows


def targets(med, notes):
    by = {(r["tool"], r["hosts"], r["size"]): r["median_s"] for r in med}
    sizes = sorted({r["size"] for r in med})
    out = []
    skipped = notes.get("skipped_nf-exec")
    ours, theirs = by.get(("nf-exec", BIG_HOSTS, BIG_SIZE)), by.get(("pdsh", BIG_HOSTS, BIG_SIZE))
    t = {"target": f"nf-exec <= 0.5 x pdcp+pdsh at {BIG_HOSTS} hosts, {fmt_size(BIG_SIZE)}",
         "limit": 0.5, "ratio": None, "met": None}
    if ours and theirs:
        t["ratio"] = ours / theirs
        t["met"] = t["ratio"] <= t["limit"]
    else:
        t["why"] = skipped and f"nf-exec skipped: {skipped}" or "not measured at that point"
    out.append(t)
    for size in sizes:
        lo, hi = by.get(("nf-exec", SMALL_HOSTS, size)), by.get(("nf-exec", BIG_HOSTS, size))
        t = {"target": f"nf-exec {BIG_HOSTS} hosts <= 2 x nf-exec {SMALL_HOSTS} hosts, {fmt_size(size)}",
             "limit": 2.0, "ratio": None, "met": None}
        if lo and hi:
            t["ratio"] = hi / lo
            t["met"] = t["ratio"] <= t["limit"]
        else:
            t["why"] = skipped and f"nf-exec skipped: {skipped}" or "not measured at both host counts"
        out.append(t)
    return out


def cell(row):
    if row is None:
        return "-"
    if row["median_s"] is None:
        return f"fail {row['samples']}/{row['samples']}"
    text = f"{row['median_s']:.3f}"
    if row["ok"] < row["samples"]:
        text += f" ({row['ok']}/{row['samples']})"
    return text


def print_summary(med, tgt, notes):
    by = {(r["tool"], r["hosts"], r["size"]): r for r in med}
    tools = [t for t in TOOLS if any(r["tool"] == t for r in med)]
    sizes = sorted({r["size"] for r in med})
    hosts = sorted({r["hosts"] for r in med})
    print("# compare-spawn: median seconds from the start of the copy to the exit of the last copy")
    print(f"# load average at start {notes.get('load_start', '?')}, at end {notes.get('load_end', '?')}"
          f"; {notes.get('cores', '?')} cores; git {notes.get('git', '?')}")
    for key in ("pdsh_fanout", "mpirun", "mpirun_copy", "nf_exec", "slurm"):
        if key in notes:
            print(f"# {key}: {notes[key]}")
    for key in sorted(k for k in notes if k.startswith(("skipped_", "gave_up_", "size_"))):
        print(f"# {key}: {notes[key]}")
    for size in sizes:
        print()
        print(f"size {fmt_size(size)}")
        head = ["hosts"] + tools + ["nf-exec/pdsh", "nf-ssh/pdsh"]
        lines = [head]
        for n in hosts:
            line = [str(n)] + [cell(by.get((t, n, size))) for t in tools]
            p = by.get(("pdsh", n, size))
            for ours in ("nf-exec", "nf-ssh"):
                o = by.get((ours, n, size))
                if o and p and o["median_s"] and p["median_s"]:
                    line.append(f"{o['median_s'] / p['median_s']:.2f}")
                else:
                    line.append("-")
            lines.append(line)
        widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
        for l in lines:
            print("  ".join(c.rjust(w) for c, w in zip(l, widths)))
        parts = []
        for t in tools:
            for n in hosts:
                r = by.get((t, n, size))
                if r and r["median_copy_s"] is not None:
                    parts.append(f"{t}@{n} {r['median_copy_s']:.3f}+{r['median_run_s']:.3f}")
        if parts:
            print("  copy+run: " + ", ".join(parts))
    print()
    print("targets")
    for t in tgt:
        if t["ratio"] is None:
            print(f"  {t['target']}: not measured ({t['why']})")
        else:
            print(f"  {t['target']}: {t['ratio']:.2f} ({'met' if t['met'] else 'missed'})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", required=True)
    args = ap.parse_args()
    try:
        samples, notes = load(args.dir)
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"spawn_report: {args.dir}: {e}")
    med = medians(samples)
    tgt = targets(med, notes)
    print_summary(med, tgt, notes)
    with open(os.path.join(args.dir, "spawn.json"), "w", encoding="utf-8") as f:
        json.dump({"notes": notes, "samples": samples, "medians": med, "targets": tgt}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
