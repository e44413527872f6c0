#!/usr/bin/env python3
"""Ratios, targets and plots of bench/compare-gateway.sh (standard library; matplotlib
for the plots, skipped with a note when it is missing).

Reads from DIR: notes.txt (the run's facts, one "key<TAB>value" line each: load average
at start and end, setup, failures), 9p/compare.json (nf bench 9p, gateway as "ours" and
the node directly as "theirs"), copy.csv (one row per copy: side, item, repeat, seconds,
ok) and load/load.json (nf bench 9p --clients); any part may be missing. Then:

1. prints the 9p ratios gateway / direct per msize (small-op rate, streaming read and
   write: the median of the same-round ratios, as nf bench 9p gives them);
2. prints the copies: median seconds per side and item (small files, big file), and the
   ratios nf-gateway / nf-direct, nf-gateway / scp-jump, scp-jump / scp-direct: the
   median over repeats of the same-repeat ratio (the sides of a repeat ran back to
   back, in alternating order);
3. prints the load test: requests/s and p99 latency per client count for both sides,
   and the ratios gateway / direct;
4. prints the targets, measured value and met / missed:
   - 9p small >= 0.8 x direct, streaming read and write >= 0.9 x, at every msize;
   - copy nf-gateway <= 1.1 x nf-direct, and <= 0.5 x scp-jump, for each item;
5. writes DIR/gateway.json (everything above, the notes, the load average),
   DIR/gateway.csv (one row per ratio: part, metric, case, value, target, met) and the
   plots DIR/9p-ratios.png, DIR/copy.png, DIR/load.png.

usage: gateway_report.py --dir DIR
"""

import argparse
import csv
import json
import os
import statistics

COPY_SIDES = ("nf-gateway", "nf-direct", "scp-jump", "scp-direct")
COPY_ITEMS = ("small", "big")
# (part, metric, numerator, denominator, bound, "min" | "max") of the copy ratios.
COPY_RATIOS = (
    ("nf-gateway", "nf-direct", 1.1, "max"),
    ("nf-gateway", "scp-jump", 0.5, "max"),
    ("scp-jump", "scp-direct", None, None),
)
NINEP_TARGETS = {"small": 0.8, "read": 0.9, "write": 0.9}


def fmt_size(size):
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def read_json(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def read_notes(d):
    notes = {}
    path = os.path.join(d, "notes.txt")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("\t")
                notes[key] = value
    return notes


def read_copies(d):
    path = os.path.join(d, "copy.csv")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", newline="") as f:
        return [{"side": r["side"], "item": r["item"], "repeat": int(r["repeat"]),
                 "seconds": float(r["seconds"]), "ok": r["ok"] == "1"}
                for r in csv.DictReader(f)]


def judged(value, bound, kind):
    if value is None or bound is None:
        return None
    return value >= bound if kind == "min" else value <= bound


def met_text(met):
    return {True: "met", False: "MISSED", None: "-"}[met]


def ninep_part(data, lines, rows):
    lines.append("9p through the gateway / directly (nf bench 9p; ratio: median of same-round ratios)")
    if data is None:
        lines.append("  (not run, or failed: see notes)")
        return []
    lines.append(f"  {'test':<6} {'msize':>9} {'gateway':>11} {'direct':>11} {'ratio':>7} {'target':>8}")
    out = []
    for r in data.get("ratios", []):
        test, ratio = r["test"], r.get("ratio")
        bound = NINEP_TARGETS.get(test)
        met = judged(ratio, bound, "min")
        ratio_text = f"{ratio:.2f}" if ratio is not None else "-"
        lines.append(f"  {test:<6} {fmt_size(r['msize']):>9} {r['ours']:>11.1f} {r['theirs']:>11.1f} "
                     f"{ratio_text:>7} {'>= ' + str(bound):>8}  {r['unit']}  {met_text(met)}")
        row = {"part": "9p", "metric": f"{test} gateway/direct", "case": f"msize {r['msize']}",
               "value": ratio, "gateway": r["ours"], "direct": r["theirs"], "unit": r["unit"],
               "target": f">= {bound}", "met": met}
        rows.append(row)
        out.append(row)
    return out


def copy_part(samples, lines, rows):
    lines.append("")
    lines.append("copies into the node (seconds; median over repeats, k/R when only k of R succeeded)")
    if not samples:
        lines.append("  (not run)")
        return {"medians": [], "ratios": []}
    medians = []
    header = f"  {'item':<6}" + "".join(f" {s:>11}" for s in COPY_SIDES)
    lines.append(header)
    for item in COPY_ITEMS:
        cells = []
        for side in COPY_SIDES:
            group = [s for s in samples if s["side"] == side and s["item"] == item]
            good = [s["seconds"] for s in group if s["ok"]]
            med = statistics.median(good) if good else None
            medians.append({"side": side, "item": item, "samples": len(group), "ok": len(good),
                            "median_s": med, "min_s": min(good) if good else None,
                            "max_s": max(good) if good else None})
            text = "-" if med is None else f"{med:.2f}"
            if group and len(good) < len(group):
                text += f" {len(good)}/{len(group)}"
            cells.append(f" {text:>11}")
        lines.append(f"  {item:<6}" + "".join(cells))
    ratios = []
    lines.append("  ratios (median of same-repeat ratios):")
    for num, den, bound, kind in COPY_RATIOS:
        for item in COPY_ITEMS:
            per = []
            for rep in sorted({s["repeat"] for s in samples}):
                a = [s for s in samples if (s["side"], s["item"], s["repeat"]) == (num, item, rep) and s["ok"]]
                b = [s for s in samples if (s["side"], s["item"], s["repeat"]) == (den, item, rep) and s["ok"]]
                if a and b and b[0]["seconds"] > 0:
                    per.append(a[0]["seconds"] / b[0]["seconds"])
            value = statistics.median(per) if per else None
            met = judged(value, bound, kind)
            target = f"<= {bound}" if bound is not None else "-"
            value_text = f"{value:.2f}" if value is not None else "-"
            lines.append(f"    {num + ' / ' + den:<25} {item:<6} {value_text:>7} {target:>8}  {met_text(met)}")
            row = {"part": "copy", "metric": f"{num}/{den}", "case": item, "value": value,
                   "per_repeat": per, "unit": "time ratio", "target": target, "met": met}
            rows.append(row)
            ratios.append(row)
    return {"medians": medians, "ratios": ratios}


def load_part(data, lines, rows):
    lines.append("")
    lines.append("load: N clients at once through the gateway / directly (nf bench 9p --clients)")
    if data is None:
        lines.append("  (not run, or failed: see notes)")
        return None
    request = data.get("params", {}).get("request", "")
    seconds = data.get("params", {}).get("seconds")
    lines.append(f"  request: {request}; {seconds} s per side, count and round")
    lines.append(f"  {'clients':>7} {'side':<8} {'req/s':>10} {'MB/s':>9} {'p50 µs':>10} {'p99 µs':>10}")
    for c in data.get("cases", []):
        lines.append(f"  {c['clients']:>7} {c['server']:<8} {c['rate']:>10.1f} {c['mb_per_s']:>9.1f} "
                     f"{c['p50_us']:>10.1f} {c['p99_us']:>10.1f}")
    lines.append("  ratios gateway / direct (median of same-round ratios): req/s (above 1: faster), "
                 "p99 (below 1: faster)")
    for r in data.get("ratios", []):
        lines.append(f"  {r['clients']:>7} clients  req/s {r['rate_ratio']:.2f}  p99 {r['p99_ratio']:.2f}")
        rows.append({"part": "load", "metric": "req/s gateway/direct", "case": f"{r['clients']} clients",
                     "value": r["rate_ratio"], "unit": "rate ratio", "target": "-", "met": None})
        rows.append({"part": "load", "metric": "p99 gateway/direct", "case": f"{r['clients']} clients",
                     "value": r["p99_ratio"], "unit": "latency ratio", "target": "-", "met": None})
    return data


def plots(d, ninep, copies, load, lines):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        lines.append("no matplotlib: no plots")
        return
    made = []
    if ninep and ninep.get("ratios"):
        fig, ax = plt.subplots(figsize=(7, 4))
        tests = ["small", "read", "write"]
        msizes = sorted({r["msize"] for r in ninep["ratios"]})
        width = 0.8 / max(1, len(msizes))
        for i, m in enumerate(msizes):
            vals = []
            for t in tests:
                r = [x for x in ninep["ratios"] if x["test"] == t and x["msize"] == m]
                vals.append(r[0]["ratio"] if r and r[0].get("ratio") is not None else 0)
            ax.bar([j + i * width for j in range(len(tests))], vals, width, label=f"msize {fmt_size(m)}")
        for j, t in enumerate(tests):
            ax.hlines(NINEP_TARGETS[t], j - width / 2, j + 0.8 - width / 2, colors="red", linestyles="dashed")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xticks([j + width * (len(msizes) - 1) / 2 for j in range(len(tests))])
        ax.set_xticklabels(["small ops (walk/open/read 1 B/clunk)", "streaming read", "streaming write"])
        ax.set_ylabel("gateway / direct (rate)")
        ax.set_title("nf bench 9p through the gateway (red: target)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "9p-ratios.png"), dpi=120)
        plt.close(fig)
        made.append("9p-ratios.png")
    if any(m["median_s"] is not None for m in copies["medians"]):
        fig, axes = plt.subplots(1, 2, figsize=(9, 4))
        for ax, item in zip(axes, COPY_ITEMS):
            meds = [m for m in copies["medians"] if m["item"] == item and m["median_s"] is not None]
            ax.bar([m["side"] for m in meds], [m["median_s"] for m in meds],
                   yerr=[[m["median_s"] - m["min_s"] for m in meds], [m["max_s"] - m["median_s"] for m in meds]],
                   color=["tab:blue", "tab:cyan", "tab:orange", "tab:olive"][:len(meds)], capsize=4)
            ax.set_title("small files" if item == "small" else "big file")
            ax.set_ylabel("seconds (median, min-max)")
            ax.tick_params(axis="x", labelrotation=20)
        fig.suptitle("copy into the node: through the gateway, directly, scp -J")
        fig.tight_layout()
        fig.savefig(os.path.join(d, "copy.png"), dpi=120)
        plt.close(fig)
        made.append("copy.png")
    if load and load.get("cases"):
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
        for side in sorted({c["server"] for c in load["cases"]}):
            cs = sorted((c for c in load["cases"] if c["server"] == side), key=lambda c: c["clients"])
            xs = [c["clients"] for c in cs]
            a1.plot(xs, [c["rate"] for c in cs], marker="o", label=side)
            a2.plot(xs, [c["p99_us"] / 1000 for c in cs], marker="o", label=side)
        counts = sorted({c["clients"] for c in load["cases"]})
        for ax, label in ((a1, "requests / s"), (a2, "p99 latency, ms")):
            ax.set_xscale("log", base=2)
            ax.set_xticks(counts)
            ax.set_xticklabels([str(n) for n in counts])
            ax.set_ylim(bottom=0)
            ax.set_xlabel("clients at once")
            ax.set_ylabel(label)
            ax.legend()
            ax.grid(True, alpha=0.3)
        a1.set_title("throughput (64 KiB file read whole)")
        a2.set_title("p99 latency per request")
        fig.tight_layout()
        fig.savefig(os.path.join(d, "load.png"), dpi=120)
        plt.close(fig)
        made.append("load.png")
    if made:
        lines.append("plots: " + ", ".join(made))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True)
    d = ap.parse_args().dir
    notes = read_notes(d)
    lines, rows = [], []
    lines.append(f"compare-gateway, git {notes.get('git', '?')}, {notes.get('cores', '?')} cores; "
                 f"load average {notes.get('load_start', '?')} at start, {notes.get('load_end', '?')} at end")
    per_part = [f"{part} {notes[f'load_{part}_start']} -> {notes[f'load_{part}_end']}"
                for part in ("9p", "copy", "load")
                if f"load_{part}_start" in notes and f"load_{part}_end" in notes]
    if per_part:
        lines.append("load average (1, 5, 15 min) per part: " + "; ".join(per_part))
    cpu = [f"{part} {notes[f'cpu_{part}']}" for part in ("9p", "copy", "load") if f"cpu_{part}" in notes]
    if cpu:
        lines.append("CPU time (user + system) per part: " + "; ".join(cpu))
    if "hosts" in notes:
        lines.append(f"hosts: {notes['hosts']}")
    lines.append("")
    ninep = read_json(os.path.join(d, "9p", "compare.json"))
    ninep_rows = ninep_part(ninep, lines, rows)
    copies = copy_part(read_copies(d), lines, rows)
    load = load_part(read_json(os.path.join(d, "load", "load.json")), lines, rows)

    lines.append("")
    lines.append("targets")
    for r in rows:
        if r["target"] == "-":
            continue
        value = "-" if r["value"] is None else f"{r['value']:.2f}"
        lines.append(f"  {r['part']:<5} {r['metric']:<25} {r['case']:<14} {value:>6} "
                     f"{r['target']:>8}  {met_text(r['met'])}")
    failures = {k: v for k, v in notes.items() if k.startswith(("failed_", "skipped_"))}
    if failures:
        lines.append("")
        lines.append("did not run as asked:")
        for k, v in failures.items():
            lines.append(f"  {k}: {v}")
    plots(d, ninep, copies, load, lines)
    print("\n".join(lines))

    with open(os.path.join(d, "gateway.json"), "w", encoding="utf-8") as f:
        json.dump({"notes": notes,
                   "load_average": {key[len("load_"):]: value for key, value in notes.items()
                                    if key.startswith("load_")},
                   "ninep": {"ratios": ninep_rows, "servers": (ninep or {}).get("servers")},
                   "copy": copies,
                   "load": None if load is None else {"cases": load.get("cases"), "ratios": load.get("ratios"),
                                                      "params": load.get("params")},
                   "targets": [r for r in rows if r["target"] != "-"]}, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "gateway.csv"), "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["part", "metric", "case", "value", "target", "met"])
        for r in rows:
            w.writerow([r["part"], r["metric"], r["case"],
                        "" if r["value"] is None else f"{r['value']:.4f}", r["target"],
                        "" if r["met"] is None else int(r["met"])])


if __name__ == "__main__":
    main()
