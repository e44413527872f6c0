#!/usr/bin/env python3
"""Ratio tables and targets of bench/compare-net.sh (Python 3 standard library only).

Reads the runs in --dir (K rounds of each side, as compare-net.sh names them) and:

1. prints per-size ratio tables (via compare_report.py, best of K per side):
   nf-tcp / raw-tcp, nf-tcp / openmpi-tcp, nf-default / openmpi-tcp,
   nf-ofi / openmpi-tcp, shm-mixed / shm-only; with --lanes, nf-lanesN / nf-tcp
   (--lanes-only: those alone, and no targets);
   each also lands as compare-<ours>-vs-<theirs>.{csv,json}, and each side's per-size
   best rows as best-<side>.json (for `nf bench plot`);
2. prints the small-message and the large-message targets with the measured ratio
   and whether each is met, and writes them to targets.json (each with its "issue"
   field: 3 for a small-message target, 18 for a large-message one).
   Small messages:
   - tcp 8 B half round trip <= 1.15 x raw socket, and <= 1.0 x Open MPI tcp
     (best-of-K medians);
   - tcp 4 MiB bandwidth >= 0.85 x iperf3 single stream (best of K each; ping-pong
     MB/s = size / median half round trip, iperf3 = received bits per second / 8);
   - ofi 8 B half round trip <= 1.3 x fi_pingpong (means, best of K: fi_pingpong only
     reports the mean time per transfer, "usec/xfer", which is half a round trip);
   - shm 8 B with network transports in the job <= 1.05 x a shm-only job
     (best-of-K medians).
   Large messages between hosts (nf-default is the route ninefold picks
   with NF_TRANSPORTS unset, which the report names):
   - nf-default bandwidth >= 1.0 x Open MPI tcp at every measured size >= 256 KiB
     (one row per size; best of K, MB/s = size / median half round trip);
   - nf-default bandwidth at 4 MiB >= 1.0 x iperf3 single stream;
   - nf-default bandwidth >= 0.9 x iperf3 -P 4 (sum received over the four streams),
     taking the best of nf-default's sizes >= 4 MiB (the row names the size);
   - nf-ofi bandwidth at 4 MiB >= 1.0 x fi_pingpong at 4 MiB: both as size / mean half
     round trip (best of K), since fi_pingpong reports only means (see fi_mb_per_s);
   - nf-default 8 B half round trip <= 1.1 x raw-busy 8 B (tcp_pingpong --busy: a
     busy-polling raw socket; best-of-K medians).

usage: compare_net_report.py --dir DIR --rounds K [--fi-sizes 8,...] [--no-ofi]
                             [--lanes 2,4] [--lanes-only]
"""

import argparse
import contextlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_report  # noqa: E402  (the shared ping-pong comparison)

LAT_8 = 8
BW_SIZE = 4 << 20
LARGE = 256 << 10  # the large-message targets start here


class Missing(Exception):
    """A side has no successful round (compare-net.sh lists why in failed.txt)."""


def side_files(d, side, rounds):
    """The rounds of `side` that produced a report; a failed round has none (a side that
    crashed in one round still counts with the others)."""
    paths = [os.path.join(d, f"{side}-{k}.json") for k in range(1, rounds + 1)]
    present = [p for p in paths if os.path.exists(p)]
    if not present:
        raise Missing(side)
    return present


def failed_note(side):
    return f"{side}: no successful round (see failed.txt)"


def pair(d, rounds, ours, theirs, labels):
    """Prints and writes one per-size table; returns its rows keyed by size (none when a
    side has no successful round: the table is left out, saying so)."""
    try:
        ours_files, theirs_files = side_files(d, ours, rounds), side_files(d, theirs, rounds)
    except Missing as m:
        print(f"\n{ours} vs {theirs}: left out, {failed_note(m.args[0])}")
        return {}
    argv = ["--ours", *ours_files, "--theirs", *theirs_files,
            "--ours-label", labels[0], "--theirs-label", labels[1],
            "--csv", os.path.join(d, f"compare-{ours}-vs-{theirs}.csv"),
            "--json", os.path.join(d, f"compare-{ours}-vs-{theirs}.json"),
            "--best-ours", os.path.join(d, f"best-{ours}.json"),
            "--best-theirs", os.path.join(d, f"best-{theirs}.json")]
    print()
    compare_report.main(argv)
    with open(os.path.join(d, f"compare-{ours}-vs-{theirs}.json"), encoding="utf-8") as f:
        return {r["size"]: r for r in json.load(f)["rows"]}


def best_avg(d, side, rounds, size):
    """Smallest per-run mean half round trip at `size` (us) over the rounds."""
    try:
        best = compare_report.load(side_files(d, side, rounds))
    except Missing:
        return None
    avgs = [row["avg_us"] for rep in best for row in rep["results"] if row["size"] == size]
    return min(avgs) if avgs else None


def best_median(d, side, rounds, size):
    """Smallest per-run median half round trip at `size` (us) over the rounds."""
    try:
        best = compare_report.best_of(compare_report.load(side_files(d, side, rounds)))
    except Missing:
        return None
    return best[size]["row"]["median_us"] if size in best else None


def route_of(d, side, rounds):
    """The transports the side's reports name (rank 0 to rank 1), e.g. "ofi"."""
    try:
        reps = compare_report.load(side_files(d, side, rounds))
    except Missing:
        return "?"
    names = {rep.get("transport", "?") for rep in reps}
    return ",".join(sorted(names))


def iperf_mb_per_s(d, rounds, name="iperf3", streams=1):
    """Largest received rate of the iperf3 rounds `name`-K.json, MB/s (10^6 B), and all
    of them; with several streams, sum_received is the sum over all of them."""
    rates = []
    for k in range(1, rounds + 1):
        path = os.path.join(d, f"{name}-{k}.json")
        if not os.path.exists(path):
            continue  # a failed round (failed.txt)
        try:
            with open(path, encoding="utf-8") as f:
                rep = json.load(f)
            got = rep["start"]["test_start"]["num_streams"]
            if got != streams:
                sys.exit(f"compare_net_report: {path}: {got} streams, not {streams}")
            rates.append(rep["end"]["sum_received"]["bits_per_second"] / 8 / 1e6)
        except (OSError, ValueError, KeyError, TypeError) as e:
            sys.exit(f"compare_net_report: {path}: not an iperf3 --json report ({e})")
    return (max(rates) if rates else None), rates


# A result row of fi_pingpong (fabtests 1.17):
#   bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
#   4m      200     =200     1.5g        3.01s    556.97    7530.51       0.00
# "bytes" is the message size as fabtests prints sizes: powers of 1024 with a k, m or
# g suffix, and one decimal below 10 of the unit when the size is not a whole multiple
# (1536 -> 1.5k; a size like 100000 prints as 97k, so rows are matched on this label).
# usec/xfer is the mean time of one transfer, half a round trip; MB/sec (10^6 B) is
# the total moved both ways over the time, which comes to size / usec/xfer.
FI_ROW = re.compile(r"^\s*([0-9.]+[kmg]?)\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+([0-9.]+)\s+\S+\s*$")
FI_UNITS = (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10))


def fi_size_label(size):
    """`size` written as fi_pingpong writes its bytes column (4194304 -> 4m, 8 -> 8)."""
    for suffix, unit in FI_UNITS:
        if size >= unit:
            break
    else:
        suffix, unit = "", 1
    whole, tenths = size // unit, (size % unit) * 10 // unit if size // unit < 10 else 0
    return f"{whole}.{tenths}{suffix}" if tenths else f"{whole}{suffix}"


def fi_size(label):
    """fi_pingpong's bytes column as a number of bytes (4m -> 4194304, 1.5k -> 1536)."""
    unit = dict(FI_UNITS).get(label[-1:], 1)
    return int(float(label.rstrip("kmg")) * unit)


def fi_usec(d, rounds, size):
    """Smallest fi_pingpong usec/xfer at `size` over the rounds, and all of them."""
    vals = []
    want = fi_size_label(size)
    for k in range(1, rounds + 1):
        path = os.path.join(d, f"fi-{size}-{k}.txt")
        if not os.path.exists(path):
            continue  # a failed round (failed.txt)
        try:
            with open(path, encoding="utf-8") as f:
                rows = [FI_ROW.match(line) for line in f]
        except OSError as e:
            sys.exit(f"compare_net_report: {path}: {e}")
        got = [float(m.group(2)) for m in rows
               if m and (m.group(1) == want or fi_size(m.group(1)) == size)]
        if not got:
            sys.exit(f"compare_net_report: {path}: no fi_pingpong result row for {size} B")
        vals.append(got[0])
    return (min(vals) if vals else None), vals


def target(name, ours, theirs, limit, higher_is_better, unit, method, issue=3):
    ratio = ours / theirs if ours is not None and theirs else None
    if ratio is None or limit is None:
        met = None
    elif higher_is_better:
        met = ratio >= limit
    else:
        met = ratio <= limit
    return {"target": name, "issue": issue, "ours": ours, "theirs": theirs, "ratio": ratio,
            "limit": limit, "higher_is_better": higher_is_better, "unit": unit, "met": met,
            "method": method}


def print_targets(title, targets, width):
    print(f"\n{title}, ratio = ours / theirs")
    for t in targets:
        if t["ratio"] is None:
            print(f"  {t['target']:<{width}} not measured")
            continue
        sign = ">=" if t["higher_is_better"] else "<="
        verdict = "-" if t["met"] is None else ("met" if t["met"] else "MISSED")
        goal = f"{sign} {t['limit']:.2f}" if t["limit"] is not None else "(no target)"
        print(f"  {t['target']:<{width}} {t['ours']:10.2f} / {t['theirs']:10.2f} {t['unit']:<4}"
              f" = {t['ratio']:.3f}  {goal:<8} {verdict}")


def issue_18(d, k, dflt, no_ofi, fi_sizes, iperf, iperf_all):
    """The large-message targets (between hosts), and the default route's name;
    `dflt` is the nf-default / openmpi-tcp table by size."""
    route = route_of(d, "nf-default", k)
    try:
        best = compare_report.best_of(compare_report.load(side_files(d, "nf-default", k)))
    except Missing:
        best = {}
    fmt = compare_report.fmt_size
    bw = "best of K: size / median half round trip"
    targets = []
    large = [s for s in sorted(dflt) if s >= LARGE]
    for s in large:
        targets.append(target(f"default {fmt(s)} bandwidth vs Open MPI tcp",
                              dflt[s]["ours_mb_per_s"], dflt[s]["theirs_mb_per_s"], 1.0, True,
                              "MB/s", f"{bw}, both sides", 18))
    if not large:
        targets.append(target(f"default >= {fmt(LARGE)} bandwidth vs Open MPI tcp", None, None,
                              1.0, True, "MB/s", "no size >= 256 KiB measured", 18))
    all_iperf = f"iperf3 received rate ({', '.join(f'{r:.0f}' for r in iperf_all)} MB/s)"
    d4 = best.get(BW_SIZE)
    targets.append(target("default 4 MiB bandwidth vs iperf3", d4 and d4["best_rate"], iperf,
                          1.0, True, "MB/s", f"{bw}; {all_iperf}", 18))
    p4, p4_all = iperf_mb_per_s(d, k, "iperf3-p4", 4)
    big = {s: b["best_rate"] for s, b in best.items() if s >= BW_SIZE}
    top = max(big, key=big.get) if big else None
    targets.append(target(
        f"default best >= 4 MiB ({fmt(top) if top else '-'}) bandwidth vs iperf3 -P 4",
        big.get(top), p4, 0.9, True, "MB/s",
        f"{bw}, the highest of nf-default's sizes >= 4 MiB "
        f"({', '.join(f'{fmt(s)} {r:.0f}' for s, r in sorted(big.items()))} MB/s); iperf3 -P 4 "
        f"received rate summed over its streams ({', '.join(f'{r:.0f}' for r in p4_all)} MB/s)",
        18))
    if not no_ofi:
        # fi_pingpong reports only means: usec/xfer, the mean half round trip, and
        # MB/sec, which is size / usec/xfer (10^6 B). So both sides here are size / mean
        # half round trip, nf-ofi's from its reports' avg_us (not the median that the
        # other bandwidth figures use), fi_pingpong's from usec/xfer.
        if BW_SIZE in fi_sizes:
            fi, fi_all = fi_usec(d, k, BW_SIZE)
            ours = best_avg(d, "nf-ofi", k, BW_SIZE)
            targets.append(target(
                "ofi 4 MiB bandwidth vs fi_pingpong", ours and BW_SIZE / ours, fi and BW_SIZE / fi,
                1.0, True, "MB/s",
                "best of K: size / mean half round trip (fi_pingpong: size / usec/xfer, "
                f"{', '.join(f'{BW_SIZE / v:.0f}' for v in fi_all)} MB/s)", 18))
        else:
            targets.append(target("ofi 4 MiB bandwidth vs fi_pingpong", None, None, 1.0, True,
                                  "MB/s", "4194304 not in --fi-sizes", 18))
    targets.append(target("default 8 B vs busy-polling raw socket",
                          best_median(d, "nf-default", k, LAT_8),
                          best_median(d, "raw-busy", k, LAT_8), 1.1, False, "us",
                          "best-of-K median half round trip; raw-busy is "
                          "bench/net/tcp_pingpong.c --busy (recv spins, TCP_NODELAY)", 18))
    return route, targets


def read_failed(d):
    """The lines of failed.txt: one per run that failed (side, round, why, its log)."""
    try:
        with open(os.path.join(d, "failed.txt"), encoding="utf-8") as f:
            return [line.rstrip("\n") for line in f if line.strip()]
    except FileNotFoundError:
        return []


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--rounds", type=int, required=True)
    ap.add_argument("--fi-sizes", default="8")
    ap.add_argument("--no-ofi", action="store_true")
    ap.add_argument("--lanes", default="")
    ap.add_argument("--lanes-only", action="store_true")
    a = ap.parse_args(argv)
    d, k = a.dir, a.rounds

    for n in [x for x in a.lanes.split(",") if x]:
        pair(d, k, f"nf-lanes{n}", "nf-tcp", (f"nf tcp {n} lanes", "nf tcp"))
    if a.lanes_only:
        return 0

    raw = pair(d, k, "nf-tcp", "raw-tcp", ("nf tcp", "raw socket"))
    mpi = pair(d, k, "nf-tcp", "openmpi-tcp", ("nf tcp", "Open MPI tcp"))
    dflt = pair(d, k, "nf-default", "openmpi-tcp", ("nf default", "Open MPI tcp"))
    if not a.no_ofi:
        pair(d, k, "nf-ofi", "openmpi-tcp", ("nf ofi", "Open MPI tcp"))
    shm = pair(d, k, "shm-mixed", "shm-only", ("shm+net", "shm only"))

    med = "best-of-K median half round trip"
    targets = []
    r8 = raw.get(LAT_8)
    targets.append(target("tcp 8 B vs raw socket", r8 and r8["ours_median_us"],
                          r8 and r8["theirs_median_us"], 1.15, False, "us", med))
    m8 = mpi.get(LAT_8)
    targets.append(target("tcp 8 B vs Open MPI tcp", m8 and m8["ours_median_us"],
                          m8 and m8["theirs_median_us"], 1.0, False, "us", med))
    iperf, iperf_all = iperf_mb_per_s(d, k)
    bw = raw.get(BW_SIZE)
    targets.append(target("tcp 4 MiB bandwidth vs iperf3", bw and bw["ours_mb_per_s"], iperf,
                          0.85, True, "MB/s",
                          f"best of K: ping-pong size / median half round trip; iperf3 received "
                          f"rate ({', '.join(f'{r:.0f}' for r in iperf_all)} MB/s)"))
    fi_sizes = [int(x) for x in a.fi_sizes.split(",")]
    if not a.no_ofi:
        for s in fi_sizes:
            fi, fi_all = fi_usec(d, k, s)
            targets.append(target(f"ofi {compare_report.fmt_size(s)} vs fi_pingpong", best_avg(d, "nf-ofi", k, s), fi,
                                  1.3 if s == LAT_8 else None, False, "us",
                                  "best-of-K mean half round trip (fi_pingpong reports means: "
                                  f"{', '.join(f'{v:.2f}' for v in fi_all)} us)"))
    s8 = shm.get(LAT_8)
    targets.append(target("shm 8 B with network transports vs shm only",
                          s8 and s8["ours_median_us"], s8 and s8["theirs_median_us"], 1.05,
                          False, "us", med))

    route, t18 = issue_18(d, k, dflt, a.no_ofi, fi_sizes, iperf, iperf_all)

    width = max(46, *(len(t["target"]) for t in targets + t18))
    print_targets("targets (small messages)", targets, width)
    print_targets(f"targets (large messages; default route between hosts: {route})", t18, width)
    failed = read_failed(d)
    if failed:
        print("\nfailed runs (their rounds are left out; each line names the side):")
        for line in failed:
            print(f"  {line}")
    try:
        with open(os.path.join(d, "targets.json"), "w", encoding="utf-8") as f:
            json.dump({"bench": "compare-net", "rounds": k, "default_route": route,
                       "targets": targets + t18, "failed": read_failed(d)}, f, indent=2)
            f.write("\n")
    except OSError as e:
        sys.exit(f"compare_net_report: {e}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
