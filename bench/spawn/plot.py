#!/usr/bin/env python3
"""spawn.png of bench/compare-spawn.sh: median seconds against hosts, one line per tool,
one panel per binary size (failed samples left out; min-max as error bars).

usage: plot.py SPAWN_CSV OUT_PNG     (needs matplotlib)
"""

import csv
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

TOOLS = ("pdsh", "mpirun", "nf-ssh", "nf-exec", "slurm")
LABELS = {"pdsh": "pdcp + pdsh", "mpirun": "Open MPI mpirun", "nf-ssh": "nf run over ssh (+ pdcp)",
          "nf-exec": "nf exec", "slurm": "sbcast + srun"}


def fmt_size(size):
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot.py SPAWN_CSV OUT_PNG")
    groups = {}
    with open(sys.argv[1], encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            if row["ok"] == "1":
                key = (row["tool"], int(row["size"]), int(row["hosts"]))
                groups.setdefault(key, []).append(float(row["seconds"]))
    sizes = sorted({k[1] for k in groups})
    if not sizes:
        sys.exit("plot.py: no successful samples to plot")
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 4), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for tool in TOOLS:
            pts = sorted((k[2], v) for k, v in groups.items() if k[0] == tool and k[1] == size)
            if not pts:
                continue
            xs = [p[0] for p in pts]
            med = [statistics.median(p[1]) for p in pts]
            lo = [m - min(p[1]) for m, p in zip(med, pts)]
            hi = [max(p[1]) - m for m, p in zip(med, pts)]
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=LABELS.get(tool, tool))
        ax.set_title(f"binary {fmt_size(size)}")
        ax.set_xlabel("hosts")
        ax.set_xscale("log", base=2)
        hosts = sorted({k[2] for k in groups})
        ax.set_xticks(hosts)
        ax.set_xticklabels([str(h) for h in hosts])
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("seconds, copy + run on every host (median)")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
