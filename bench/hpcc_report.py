#!/usr/bin/env python3
"""Tables, ratios and the plot of bench/compare-hpcc.sh (standard library; matplotlib
for the plot, skipped with a note when it is missing).

Reads from DIR the runs compare-hpcc.sh left (K rounds per side) and notes.txt (the
run's facts, one "key<TAB>value" line each: command, load averages, placement), then
per part (--parts; each part is one function, part_NAME, returning its printed lines):

rings    hpcc's hpccoutf.txt (rings/hpcc-K/) against nf bench rings' JSON (rings/nf-K.json).
         hpcc's figures are its summary lines (Min/Avg/MaxPingPongLatency_usec,
         ...PingPongBandwidth_GBytes, NaturallyOrderedRing..., RandomlyOrderedRing...;
         GBytes = 10^9 B/s, shown here in MB/s = 10^6 B/s). nf bench rings' are
         recomputed from its per-pair and per-rank figures the way hpcc defines them
         (hpcc 1.5's bench_lat_bw, b_eff):
           ping-pong latency   half round trip of 8 B per pair; min / avg / max over
                               pairs (hpcc: mean of a short loop, best of 5
                               measurements; nf: the median of its iterations)
           ping-pong bandwidth 2,000,000 B / that pair's half round trip of 2,000,000 B
           ring latency        per ring, the slowest rank's time of one iteration (a
                               message to each neighbour and one from each) / 2, i.e.
                               per message; nf reports the whole iteration averaged
                               over ranks, hence max(latency_us) / 2 here
           ring bandwidth      per ring, 2,000,000 B / that per-message time of the
                               slowest rank = 2 x 2,000,000 B / its iteration time,
                               i.e. nf's per-rank bandwidth_mb_s (both directions
                               sent by one rank), its smallest over ranks
           random rings        geometric mean of the per-ring figures over the
                               orderings (hpcc: 30 latency / 10 bandwidth orderings)
         nf's own averages (natural_latency_us, ...) stay in the JSON as nf_reported.
netpipe  NetPIPE's np.out (netpipe/npmpi-K.out, netpipe/nptcp-K.out; columns bytes,
         "Mbps" = 2^20 bit/s, half round trip in s: used here are bytes and seconds,
         MB/s = bytes / s / 10^6, checked against the Mbps column) and nf bench
         pingpong's JSON (netpipe/nf-default-K.json, nf-tcp-K.json: median half round
         trip and mb_per_s). Ratio tables nf-default / NPopenmpi and nf-tcp / NPtcp at
         the sizes both measured; one PNG with every curve (MB/s against size, and the
         half round trip up to 64 KiB).

Best of K per metric and side: the smallest latency, the largest bandwidth (every
round's figure is kept in the JSON). Ratios are ours / theirs: below 1 is better for
latencies, above 1 for bandwidths. Writes DIR/rings.{json,csv}, DIR/netpipe.{json,csv,png}
(each JSON carries the script's command line, for nf bench report DIR) and prints
everything (compare-hpcc.sh tees it into summary.txt).

usage: hpcc_report.py --dir DIR --parts rings,netpipe --rounds K
"""

import argparse
import contextlib
import csv
import json
import math
import os
import statistics
import sys

MB = 1e6  # MB/s here are 10^6 B/s


def fmt_size(size):
    """8 B, 4 KiB, 8 MiB, 2000000 B (binary units only when exact)."""
    for scale, unit in ((1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


def fail(msg):
    sys.exit(f"hpcc_report: {msg}")


def read_notes(d):
    notes = {}
    with contextlib.suppress(OSError):
        with open(os.path.join(d, "notes.txt"), encoding="utf-8") as f:
            for line in f:
                key, _, value = line.rstrip("\n").partition("\t")
                if key:
                    notes[key] = value
    return notes


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: {e}")


def write_json(path, obj):
    try:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2)
            f.write("\n")
    except OSError as e:
        fail(f"{path}: {e}")


def write_csv(path, head, rows):
    try:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(head)
            for r in rows:
                w.writerow(["" if v is None else v for v in r])
    except OSError as e:
        fail(f"{path}: {e}")


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt_ratio(r):
    return "-" if r is None else f"{r:.2f}"


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def best(values, lower_is_better):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return min(values) if lower_is_better else max(values)


def table(head, rows):
    """Aligned text: the first column left, the rest right."""
    widths = [max(len(str(c)) for c in col) for col in zip(head, *rows)]
    out = []
    for r in (head, *rows):
        cells = [str(r[0]).ljust(widths[0])] + [str(c).rjust(w) for c, w in zip(r[1:], widths[1:])]
        out.append("  ".join(cells))
    return out


# ---------------------------------------------------------------------------------
# rings

# (key, label, unit, lower is better, hpcc summary key, scale to the unit)
RING_METRICS = (
    ("pingpong_latency_min", "ping-pong latency min (8 B)", "us", True, "MinPingPongLatency_usec", 1.0),
    ("pingpong_latency_avg", "ping-pong latency avg (8 B)", "us", True, "AvgPingPongLatency_usec", 1.0),
    ("pingpong_latency_max", "ping-pong latency max (8 B)", "us", True, "MaxPingPongLatency_usec", 1.0),
    ("pingpong_bandwidth_min", "ping-pong bandwidth min (2,000,000 B)", "MB/s", False,
     "MinPingPongBandwidth_GBytes", 1e3),
    ("pingpong_bandwidth_avg", "ping-pong bandwidth avg (2,000,000 B)", "MB/s", False,
     "AvgPingPongBandwidth_GBytes", 1e3),
    ("pingpong_bandwidth_max", "ping-pong bandwidth max (2,000,000 B)", "MB/s", False,
     "MaxPingPongBandwidth_GBytes", 1e3),
    ("natural_ring_latency", "natural ring latency (8 B)", "us", True, "NaturallyOrderedRingLatency_usec", 1.0),
    ("random_ring_latency", "random ring latency (8 B)", "us", True, "RandomlyOrderedRingLatency_usec", 1.0),
    ("natural_ring_bandwidth", "natural ring bandwidth (2,000,000 B)", "MB/s", False,
     "NaturallyOrderedRingBandwidth_GBytes", 1e3),
    ("random_ring_bandwidth", "random ring bandwidth (2,000,000 B)", "MB/s", False,
     "RandomlyOrderedRingBandwidth_GBytes", 1e3),
)


def hpcc_figures(path):
    """hpcc's summary figures (us, MB/s) from one hpccoutf.txt."""
    summary = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, eq, value = line.strip().partition("=")
                if eq:
                    summary[key] = value
    except OSError as e:
        fail(f"{path}: {e}")
    figs = {}
    for key, _, _, _, hkey, scale in RING_METRICS:
        try:
            figs[key] = round(float(summary[hkey]) * scale, 6)
        except (KeyError, ValueError):
            fail(f"{path}: no {hkey}= line (did hpcc finish?)")
    return figs


def nf_ring_figures(path):
    """nf bench rings' figures, recomputed with hpcc's definitions (us, MB/s)."""
    r = read_json(path)
    try:
        pl, pb = r["pingpong_latency_us"], r["pingpong_bandwidth_mb_s"]
        nat = r["natural"]
        rand = r["random"] or [nat]  # no orderings: the natural ring stands in
        figs = {
            "pingpong_latency_min": pl["min"], "pingpong_latency_avg": pl["avg"],
            "pingpong_latency_max": pl["max"],
            "pingpong_bandwidth_min": pb["min"], "pingpong_bandwidth_avg": pb["avg"],
            "pingpong_bandwidth_max": pb["max"],
            "natural_ring_latency": max(nat["latency_us"]) / 2,
            "random_ring_latency": geomean([max(x["latency_us"]) / 2 for x in rand]),
            "natural_ring_bandwidth": min(nat["bandwidth_mb_s"]),
            "random_ring_bandwidth": geomean([min(x["bandwidth_mb_s"]) for x in rand]),
        }
        own = {k: r[k] for k in ("natural_latency_us", "natural_bandwidth_mb_s",
                                 "random_latency_us", "random_bandwidth_mb_s")}
        transports = sorted({t for i, row in enumerate(r["transport"])
                             for j, t in enumerate(row) if i != j})
        meta = {"ranks": r["ranks"], "hosts": sorted(set(r["hosts"])), "transports": transports,
                "params": r["params"], "orderings": len(r["random"])}
    except (KeyError, TypeError, ValueError) as e:
        fail(f"{path}: not an nf bench rings report ({e})")
    return figs, own, meta


def part_rings(d, k, notes):
    hp = [hpcc_figures(os.path.join(d, "rings", f"hpcc-{i}", "hpccoutf.txt")) for i in range(1, k + 1)]
    nf = [nf_ring_figures(os.path.join(d, "rings", f"nf-{i}.json")) for i in range(1, k + 1)]
    meta = nf[0][2]
    rows = []
    for key, label, unit, lower, hkey, _ in RING_METRICS:
        ours = [f[0][key] for f in nf]
        theirs = [f[key] for f in hp]
        bo, bt = best(ours, lower), best(theirs, lower)
        rows.append({"metric": key, "label": label, "unit": unit,
                     "better": "lower" if lower else "higher",
                     "ninefold": bo, "hpcc": bt, "ratio": ratio(bo, bt),
                     "ninefold_rounds": ours, "hpcc_rounds": theirs, "hpcc_key": hkey})
    lines = [
        f"rings: hpcc (b_eff, Open MPI) vs nf bench rings, {meta['ranks']} ranks on "
        f"{len(meta['hosts'])} host(s); best of {k} round(s) per side; ratio = ninefold / hpcc",
        f"  placement: {notes.get('placement', '?')}; nf transports between ranks: "
        f"{', '.join(meta['transports'])}; Open MPI: "
        f"{'its defaults (vader)' if notes.get('hosts', '1') == '1' else 'ob1, tcp (vader within a host)'}",
        "  nf's figures recomputed as hpcc defines them: ring latency = slowest rank's "
        "iteration / 2 (per message),",
        "  ring bandwidth = 2 x 2,000,000 B / slowest rank's iteration; random rings: "
        f"geometric mean over {meta['orderings']} orderings",
        f"  load average: {notes.get('load_rings_start', '?')} at the start, "
        f"{notes.get('load_rings_end', '?')} at the end",
    ]
    head = ("metric", "unit", "ninefold", "hpcc", "ratio", "better")
    cells = [(r["label"], r["unit"], f"{r['ninefold']:.3f}" if r["unit"] == "us" else f"{r['ninefold']:.1f}",
              f"{r['hpcc']:.3f}" if r["unit"] == "us" else f"{r['hpcc']:.1f}",
              fmt_ratio(r["ratio"]), r["better"]) for r in rows]
    lines += ["  " + s for s in table(head, cells)]
    write_csv(os.path.join(d, "rings.csv"), ("metric", "unit", "better", "ninefold", "hpcc", "ratio"),
              [(r["metric"], r["unit"], r["better"], r["ninefold"], r["hpcc"], r["ratio"]) for r in rows])
    write_json(os.path.join(d, "rings.json"), {
        "bench": "compare-hpcc-rings",
        "command": notes.get("command", "bench/compare-hpcc.sh --parts rings"),
        "rounds": k,
        "placement": notes.get("placement"),
        "load_average": {"start": notes.get("load_rings_start"), "end": notes.get("load_rings_end")},
        "ninefold": {"transports": meta["transports"], "hosts": meta["hosts"], "params": meta["params"],
                     "nf_reported": [f[1] for f in nf]},
        "hpcc": {"package": notes.get("hpcc"), "openmpi": notes.get("openmpi")},
        "method": "best of rounds per metric and side (latency: smallest, bandwidth: largest); "
                  "nf bench rings recomputed with hpcc's definitions (see bench/hpcc_report.py); "
                  "ratio = ninefold / hpcc; us = 1e-6 s, MB/s = 1e6 B/s",
        "rows": rows,
    })
    return lines


# ---------------------------------------------------------------------------------
# netpipe

NP_SIDES = (
    # (side, file stem, kind, label)
    ("nf-default", "nf-default", "nf", "nf bench pingpong"),
    ("npmpi", "npmpi", "netpipe", "NPopenmpi"),
    ("nf-tcp", "nf-tcp", "nf", "nf bench pingpong"),
    ("nptcp", "nptcp", "netpipe", "NPtcp"),
)
NP_PAIRS = (("nf-default", "npmpi"), ("nf-tcp", "nptcp"))


def netpipe_rows(path):
    """{size: (half round trip us, MB/s)} from one np.out."""
    rows = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                parts = line.split()
                if not parts:
                    continue
                try:
                    size, mbps, secs = int(parts[0]), float(parts[1]), float(parts[2])
                except (IndexError, ValueError):
                    fail(f"{path}:{n}: not a NetPIPE row (bytes Mbps seconds): {line.strip()!r}")
                if secs <= 0:
                    continue
                # The rate comes from the Mbps column (2^20 bit/s): the seconds column is
                # printed with as few as one significant digit at small sizes.
                rate = mbps * (1 << 20) / 8 / MB
                # A mismatch beyond the seconds' printed precision means the columns
                # changed.
                digits = len(parts[2].lower().split("e")[0].replace(".", "").lstrip("0")) or 1
                tol = max(0.02, 0.5 * 10 ** (1 - digits))
                if abs(size / secs / MB - rate) > tol * rate + 1e-3:
                    fail(f"{path}:{n}: Mbps {mbps} does not match {size} B / {secs} s")
                rows[size] = (size / rate, rate)
    except OSError as e:
        fail(f"{path}: {e}")
    if not rows:
        fail(f"{path}: no NetPIPE rows")
    return rows


def nf_pp_rows(path):
    """{size: (median half round trip us, MB/s)} and the transport of one nf bench pingpong report."""
    r = read_json(path)
    try:
        return {row["size"]: (row["median_us"], row["mb_per_s"]) for row in r["results"]}, r.get("transport", "?")
    except (KeyError, TypeError) as e:
        fail(f"{path}: not a ping-pong report ({e})")


def plot_netpipe(path, sides, title, lines):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        lines.append("  no matplotlib: no plot")
        return
    fig, (bw, lat) = plt.subplots(1, 2, figsize=(13, 5))
    styles = {"nf-default": ("C0", "-"), "npmpi": ("C1", "--"), "nf-tcp": ("C2", "-"), "nptcp": ("C3", "--")}
    for side, s in sides.items():
        color, ls = styles[side]
        sizes = s["size"]
        bw.plot(sizes, s["mb_per_s"], color=color, linestyle=ls, marker=".", label=s["label"])
        small = [(x, y) for x, y in zip(sizes, s["half_rtt_us"]) if x <= 65536]
        if small:
            lat.plot(*zip(*small), color=color, linestyle=ls, marker=".", label=s["label"])
    bw.set(xscale="log", yscale="log", xlabel="message size, bytes",
           ylabel="MB/s (10^6 B/s), size / half round trip", title="bandwidth")
    lat.set(xscale="log", yscale="log", xlabel="message size, bytes",
            ylabel="half round trip, us", title="latency, up to 64 KiB")
    for ax in (bw, lat):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    lines.append(f"  plot: {path}")


def part_netpipe(d, k, notes):
    nd = os.path.join(d, "netpipe")
    sides = {}
    for side, stem, kind, label in NP_SIDES:
        runs, transport = [], None
        for i in range(1, k + 1):
            if kind == "nf":
                rows, transport = nf_pp_rows(os.path.join(nd, f"{stem}-{i}.json"))
            else:
                rows = netpipe_rows(os.path.join(nd, f"{stem}-{i}.out"))
            runs.append(rows)
        sizes = sorted(set().union(*runs))
        lat = [best([r[s][0] for r in runs if s in r], True) for s in sizes]
        rate = [best([r[s][1] for r in runs if s in r], False) for s in sizes]
        path = transport if kind == "nf" else notes.get(f"{side}_path")
        if path:
            label = f"{label} ({path})"
        sides[side] = {"label": label, "transport": transport, "rounds": k, "size": sizes,
                       "half_rtt_us": lat, "mb_per_s": rate,
                       "half_rtt_us_rounds": [[r.get(s, (None, None))[0] for s in sizes] for r in runs]}
    place = notes.get("netpipe_placement", "?")
    lines = [
        f"netpipe: NetPIPE vs nf bench pingpong, 2 ranks, {place}; best of {k} round(s) per size "
        "and side; ratio = ninefold / NetPIPE",
        "  latency: half round trip (nf: median of its iterations; NetPIPE: mean of a repeat loop, "
        "best of its trials); MB/s = size / that time, 10^6 B/s",
        f"  load average: {notes.get('load_netpipe_start', '?')} at the start, "
        f"{notes.get('load_netpipe_end', '?')} at the end",
    ]
    ratio_sets, csv_rows = [], []
    for ours, theirs in NP_PAIRS:
        o, t = sides[ours], sides[theirs]
        oi = dict(zip(o["size"], zip(o["half_rtt_us"], o["mb_per_s"])))
        ti = dict(zip(t["size"], zip(t["half_rtt_us"], t["mb_per_s"])))
        common = sorted(set(oi) & set(ti))
        rs = {"ours": o["label"], "theirs": t["label"], "size": common,
              "latency_ratio": [ratio(oi[s][0], ti[s][0]) for s in common],
              "bandwidth_ratio": [ratio(oi[s][1], ti[s][1]) for s in common]}
        ratio_sets.append(rs)
        lines += ["", f"  {o['label']} / {t['label']}"]
        cells = []
        for s, lr, br in zip(common, rs["latency_ratio"], rs["bandwidth_ratio"]):
            cells.append((fmt_size(s), f"{oi[s][0]:.2f}", f"{ti[s][0]:.2f}", fmt_ratio(lr),
                          f"{oi[s][1]:.1f}", f"{ti[s][1]:.1f}", fmt_ratio(br)))
            csv_rows.append((ours, theirs, s, oi[s][0], ti[s][0], lr, oi[s][1], ti[s][1], br))
        head = ("size", "ours us", "theirs us", "lat ratio", "ours MB/s", "theirs MB/s", "bw ratio")
        lines += ["  " + x for x in table(head, cells)]
    write_csv(os.path.join(d, "netpipe.csv"),
              ("ours", "theirs", "size", "ours_us", "theirs_us", "latency_ratio",
               "ours_mb_per_s", "theirs_mb_per_s", "bandwidth_ratio"), csv_rows)
    write_json(os.path.join(d, "netpipe.json"), {
        "bench": "compare-hpcc-netpipe",
        "command": notes.get("command", "bench/compare-hpcc.sh --parts netpipe"),
        "rounds": k,
        "placement": place,
        "args": notes.get("netpipe_args"),
        "load_average": {"start": notes.get("load_netpipe_start"), "end": notes.get("load_netpipe_end")},
        "netpipe": notes.get("netpipe"),
        "method": "best of rounds per size and side (latency: smallest half round trip, "
                  "bandwidth: largest MB/s); NetPIPE np.out: bytes, 2^20 bit/s, half round trip s; "
                  "MB/s = 1e6 B/s; ratio = ninefold / NetPIPE",
        "sides": sides,
        "ratios": ratio_sets,
    })
    lines.append("")
    plot_netpipe(os.path.join(d, "netpipe.png"), sides,
                 f"NetPIPE and nf bench pingpong, 2 ranks, {place}, best of {k} round(s)", lines)
    return lines


# ---------------------------------------------------------------------------------
# app

def part_app(d, k, notes):
    nf = [read_json(os.path.join(d, "app", f"nf-{i}.json")) for i in range(1, k + 1)]
    pd = [read_json(os.path.join(d, "app", f"pdgemm-{i}.json")) for i in range(1, k + 1)]
    for i, r in enumerate(pd, 1):
        if not r["results"][0]["correct"]:
            fail(f"pdgemm's product in round {i} was wrong")
    np_ = max(r["ranks"] for r in nf[0]["rows"])
    n = nf[0]["params"]["n"]

    def nf_best(ranks, via):
        runs = [r for rep in nf for r in rep["rows"] if r["ranks"] == ranks and r["via"] == via]
        if not runs:
            return None
        b = min(runs, key=lambda r: r["best_s"])
        return {"best_s": b["best_s"], "gflops": b["gflops"], "efficiency": b["efficiency"],
                "hosts": b["hosts"], "rounds_s": [r["best_s"] for r in runs]}

    pd_rounds = [r["results"][0]["best_gflop_per_s"] for r in pd]
    pdg = max(pd_rounds)
    direct = nf_best(np_, "direct")
    files = nf_best(np_, "files")
    one = nf_best(1, "direct")
    # files / direct per round (the two alternate inside each job), then the best round.
    fd = []
    for rep in nf:
        t = {r["via"]: r["best_s"] for r in rep["rows"] if r["ranks"] == np_}
        if "files" in t and "direct" in t:
            fd.append(t["files"] / t["direct"])
    rows = [
        {"metric": "gflops", "label": f"C = A.B, {n}^2 f64, {np_} ranks", "unit": "GFLOP/s",
         "better": "higher", "ninefold": direct["gflops"], "pdgemm": pdg,
         "ratio": ratio(direct["gflops"], pdg), "ninefold_rounds_s": direct["rounds_s"],
         "pdgemm_rounds_gflops": pd_rounds},
        {"metric": "efficiency", "label": f"parallel efficiency at {np_} ranks (nf, vs its 1 rank)",
         "unit": "", "better": "higher", "ninefold": direct["efficiency"], "pdgemm": None, "ratio": None},
        {"metric": "gflops_1rank", "label": "nf bench app, 1 rank (no communication)", "unit": "GFLOP/s",
         "better": "higher", "ninefold": one["gflops"] if one else None, "pdgemm": None, "ratio": None},
    ]
    if files:
        rows.append({"metric": "files_vs_direct", "label": f"files / direct time, {np_} ranks (best round)",
                     "unit": "x", "better": "lower", "ninefold": min(fd), "pdgemm": None, "ratio": None,
                     "rounds": fd})
    lines = [
        f"app: nf bench app vs ScaLAPACK pdgemm, {n} x {n} doubles, {np_} ranks on "
        f"{direct['hosts']} host(s); best of {k} round(s) x {nf[0]['params']['reps']} products per side",
        f"  {notes.get('app_blas', '?')}; nf: matrixmultiply's dgemm, one thread per rank",
        f"  load average: {notes.get('load_app_start', '?')} at the start, "
        f"{notes.get('load_app_end', '?')} at the end",
    ]
    head = ("metric", "unit", "ninefold", "pdgemm", "ratio")
    cells = [(r["label"], r["unit"], f"{r['ninefold']:.3f}",
              "-" if r["pdgemm"] is None else f"{r['pdgemm']:.2f}", fmt_ratio(r["ratio"])) for r in rows]
    lines += ["  " + s for s in table(head, cells)]
    if files:
        lines.append(f"  files / direct per round: {', '.join(f'{x:.3f}' for x in fd)}, median "
                     f"{statistics.median(fd):.3f} (target <= 1.05; CellFS measured 1.10-1.16)")
    write_csv(os.path.join(d, "app.csv"), ("metric", "unit", "better", "ninefold", "pdgemm", "ratio"),
              [(r["metric"], r["unit"], r["better"], r["ninefold"], r["pdgemm"], r["ratio"]) for r in rows])
    write_json(os.path.join(d, "app.json"), {
        "bench": "compare-hpcc-app",
        "command": notes.get("command", "bench/compare-hpcc.sh --parts app"),
        "rounds": k,
        "placement": notes.get("placement"),
        "load_average": {"start": notes.get("load_app_start"), "end": notes.get("load_app_end")},
        "ninefold": notes.get("app_nf"), "pdgemm": notes.get("app_pdgemm"), "blas": notes.get("app_blas"),
        "method": "GFLOP/s = 2 n^3 / the best product's time, best over rounds per side; "
                  "ratio = ninefold / pdgemm; files / direct from the same nf job (alternating)",
        "rows": rows,
    })
    return lines


PARTS = {"rings": part_rings, "netpipe": part_netpipe, "app": part_app}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--parts", default="rings,netpipe,app")
    ap.add_argument("--rounds", type=int, required=True)
    a = ap.parse_args(argv)
    notes = read_notes(a.dir)
    print(f"compare-hpcc: {notes.get('command', '')}")
    print(f"  git {notes.get('git', '?')}, {notes.get('cores', '?')} cores; load average "
          f"{notes.get('load_start', '?')} at the start, {notes.get('load_end', '?')} at the end")
    for part in a.parts.split(","):
        if part not in PARTS:
            fail(f"unknown part {part!r}")
        print()
        for line in PARTS[part](a.dir, a.rounds, notes):
            print(line)
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
