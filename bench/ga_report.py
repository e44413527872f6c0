#!/usr/bin/env python3
"""The report of bench/compare-ga.sh: per path, rank count and program, the median
wall time of each library's finished runs, the ratio libarmci / ARMCI-MPI, and beside
it both ARMCI call profiles (bench/mpi/armci_prof.c's per-rank JSON, averaged over the
ranks and the finished runs of a side). Beside the wall time, each side's *ARMCI span*:
ARMCI_Init to ARMCI_Finalize (the profiler's wall_s, the longest rank's; median over
the finished runs), with its own ratio. The rest of the wall time (mpirun's launch,
MPI_Init before GA_Initialize, MPI_Finalize and the exit) is the same code on both
sides: a program whose span is a small part of its wall time has a wall ratio near 1
whatever the library does.

usage: ga_report.py OUT_DIR [--cap S] [--cores N] [--top K]

Reads OUT_DIR/runs.csv and OUT_DIR/prof/<run>/prof-R.json; writes OUT_DIR/report.csv
(one line per path, ranks, program), OUT_DIR/profile.csv (one line per call and side)
and OUT_DIR/report.json (both), and prints the text table. A side with no finished run
shows its status (cap S s: killed at the cap; fail:RC) instead of a time; a ratio is
then a bound (>= or <=) when the other side finished, never left out.
"""
import argparse
import csv
import glob
import json
import os
import statistics

SIDES = ("libarmci", "armci-mpi")


def profile(out, runs):
    """Mean per rank, over the finished runs given, of each call's count, time, bytes."""
    acc, n = {}, 0
    for r in runs:
        for f in glob.glob(os.path.join(run_dir(out, r), "prof-*.json")):
            n += 1
            for call, v in json.load(open(f))["calls"].items():
                a = acc.setdefault(call, [0.0, 0.0, 0.0])
                a[0] += v["calls"]
                a[1] += v["total_s"]
                a[2] += v["bytes"]
    return {c: {"calls": a[0] / n, "total_s": a[1] / n, "bytes": a[2] / n,
                "mean_us": 1e6 * a[1] / a[0] if a[0] else 0.0}
            for c, a in acc.items()} if n else {}


def run_dir(out, r):
    return os.path.join(out, "prof", "-".join(r[k] for k in ("path", "ranks", "program", "side", "k")))


def span(out, r):
    """ARMCI_Init to ARMCI_Finalize of one run: the longest rank's, None without profiles."""
    spans = [json.load(open(f))["wall_s"] for f in glob.glob(os.path.join(run_dir(out, r), "prof-*.json"))]
    return max(spans) if spans else None


def side_summary(out, runs, cap):
    ok = [r for r in runs if r["status"] == "ok"]
    walls = [float(r["wall_s"]) for r in ok]
    spans = [s for s in (span(out, r) for r in ok) if s is not None]
    bad = sorted({("cap %s s" % cap) if r["status"] == "cap" else r["status"] for r in runs if r["status"] != "ok"})
    return {
        "wall_s": statistics.median(walls) if walls else None,
        "span_s": statistics.median(spans) if spans else None,
        "runs": len(runs),
        "finished": len(ok),
        "not_finished": bad,
        "load1": [float(r["load1"]) for r in runs],
        "profile": profile(out, ok),
    }


def ratio(ours, theirs, cap):
    """The ratio, or a bound when a side did not finish, as (value, text)."""
    o, t = ours["wall_s"], theirs["wall_s"]
    if o is not None and t is not None:
        return o / t, "%.2f" % (o / t)
    if o is None and t is not None and ours["not_finished"] and ours["not_finished"][0].startswith("cap"):
        return None, ">=%.2f" % (cap / t)
    if t is None and o is not None and theirs["not_finished"] and theirs["not_finished"][0].startswith("cap"):
        return None, "<=%.2f" % (o / cap)
    return None, "-"


def show(side):
    if side["wall_s"] is not None and not side["not_finished"]:
        return "%.2f" % side["wall_s"]
    if side["wall_s"] is not None:
        return "%.2f (%d/%d; %s)" % (side["wall_s"], side["finished"], side["runs"], ", ".join(side["not_finished"]))
    return ", ".join(side["not_finished"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--cap", type=float, default=0)
    ap.add_argument("--cores", type=int, default=os.cpu_count())
    ap.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    cap = int(a.cap) if a.cap == int(a.cap) else a.cap
    rows = list(csv.DictReader(open(os.path.join(a.out, "runs.csv"))))
    keys = []
    for r in rows:
        k = (r["path"], int(r["ranks"]), r["program"])
        if k not in keys:
            keys.append(k)
    results = []
    for path, ranks, prog in keys:
        mine = [r for r in rows if (r["path"], int(r["ranks"]), r["program"]) == (path, ranks, prog)]
        sides = {s: side_summary(a.out, [r for r in mine if r["side"] == s], cap) for s in SIDES}
        value, text = ratio(sides["libarmci"], sides["armci-mpi"], cap)
        o, t = sides["libarmci"]["span_s"], sides["armci-mpi"]["span_s"]
        span_ratio = o / t if o is not None and t else None
        results.append({"path": path, "ranks": ranks, "program": prog,
                        # The namespace hosts share this machine's cores.
                        "oversubscribed": ranks > a.cores,
                        "ratio": value, "ratio_text": text, "span_ratio": span_ratio,
                        "sides": sides})

    with open(os.path.join(a.out, "report.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "ranks", "program", "oversubscribed", "libarmci_s", "armci_mpi_s",
                    "ratio", "libarmci_status", "armci_mpi_status", "libarmci_span_s",
                    "armci_mpi_span_s", "span_ratio"])
        for r in results:
            s = r["sides"]
            w.writerow([r["path"], r["ranks"], r["program"], int(r["oversubscribed"]),
                        s["libarmci"]["wall_s"], s["armci-mpi"]["wall_s"], r["ratio_text"],
                        ";".join(s["libarmci"]["not_finished"]) or "ok",
                        ";".join(s["armci-mpi"]["not_finished"]) or "ok",
                        s["libarmci"]["span_s"], s["armci-mpi"]["span_s"],
                        "" if r["span_ratio"] is None else "%.2f" % r["span_ratio"]])
    with open(os.path.join(a.out, "profile.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["path", "ranks", "program", "side", "call", "calls_per_rank",
                    "total_s_per_rank", "mean_us", "bytes_per_rank"])
        for r in results:
            for s in SIDES:
                for c, v in sorted(r["sides"][s]["profile"].items(), key=lambda x: -x[1]["total_s"]):
                    w.writerow([r["path"], r["ranks"], r["program"], s, c, "%.1f" % v["calls"],
                                "%.6f" % v["total_s"], "%.3f" % v["mean_us"], "%.0f" % v["bytes"]])
    json.dump({"cap_s": cap, "cores": a.cores, "results": results},
              open(os.path.join(a.out, "report.json"), "w"), indent=1)

    print("GA programs, libarmci / ARMCI-MPI (median wall s of finished runs; cap %s s a run; %d cores)"
          % (cap, a.cores))
    for r in results:
        s = r["sides"]
        over = "  [oversubscribed: %d ranks on %d cores]" % (r["ranks"], a.cores) if r["oversubscribed"] else ""
        print("\n%-6s %3d ranks  %-14s libarmci %-22s ARMCI-MPI %-22s ratio %s%s"
              % (r["path"], r["ranks"], r["program"], show(s["libarmci"]), show(s["armci-mpi"]),
                 r["ratio_text"], over))
        tops = [sorted(s[x]["profile"].items(), key=lambda c: -c[1]["total_s"])[:a.top] for x in SIDES]
        if not any(tops):
            print("    (no profile: no run finished)")
            continue
        inside = ["%.3f" % sum(v["total_s"] for v in s[x]["profile"].values()) if s[x]["profile"] else "-"
                  for x in SIDES]
        spans = ["-" if s[x]["span_s"] is None else "%.3f" % s[x]["span_s"] for x in SIDES]
        span_ratio = "-" if r["span_ratio"] is None else "%.2f" % r["span_ratio"]
        print("    ARMCI_Init to _Finalize, s: libarmci %s, ARMCI-MPI %s, ratio %s" % (*spans, span_ratio))
        print("    in ARMCI, s per rank: libarmci %s, ARMCI-MPI %s" % tuple(inside))
        print("    %-30s %9s %9s %9s | %-30s %9s %9s %9s" % ("libarmci call", "calls", "s/rank", "µs/call",
                                                             "ARMCI-MPI call", "calls", "s/rank", "µs/call"))
        for i in range(max(len(t) for t in tops)):
            cells = []
            for t in tops:
                if i < len(t):
                    c, v = t[i]
                    cells.append("%-30s %9.0f %9.3f %9.1f" % (c, v["calls"], v["total_s"], v["mean_us"]))
                else:
                    cells.append("%-30s %9s %9s %9s" % ("", "", "", ""))
            print("    " + " | ".join(cells))


if __name__ == "__main__":
    main()
