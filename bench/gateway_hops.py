#!/usr/bin/env python3
"""Where a request's cost goes on the gateway path (bench/compare-gateway.sh --parts
hops): per process on the path, what one request costs it.

Reads DIR/hops/SIDE.json (nf bench 9p --clients 1: how many requests were done) and,
per process PROC of that side (client, gateway, node), DIR/hops/SIDE-PROC.perf
(perf stat -x, output: task-clock, context-switches, raw_syscalls:sys_enter) and
DIR/hops/SIDE-PROC.wire (two lines: bytes received + sent on the interfaces of the
process's host, which it has to itself, before and after).
Writes DIR/hops/hops.json and prints a table: per request, CPU µs, wake-ups (context
switches), system calls and bytes on the wire (in + out), per process,
with the path's total and the gateway path / direct path ratio of each total.

usage: gateway_hops.py --dir DIR
"""

import argparse
import json
import os

SIDES = ("direct", "gateway")
PROCS = {"direct": ("client", "node"), "gateway": ("client", "gateway", "node")}
EVENTS = {"task-clock": "cpu_us", "context-switches": "wakeups", "raw_syscalls:sys_enter": "syscalls"}
FIELDS = ("cpu_us", "wakeups", "syscalls", "bytes")


def perf_counts(path):
    """perf stat -x, lines: value,unit,event,...; task-clock is in ms."""
    got = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) < 3 or parts[2] not in EVENTS:
                continue
            try:
                value = float(parts[0])
            except ValueError:
                continue  # "<not counted>" / "<not supported>"
            if parts[2] == "task-clock":
                value *= 1000.0  # msec -> µs
            got[EVENTS[parts[2]]] = value
    return got


def wire_bytes(path):
    with open(path, encoding="utf-8") as f:
        before, after = (int(v) for v in f.read().split()[:2])
    return after - before


def side_costs(d, side):
    with open(os.path.join(d, f"{side}.json"), encoding="utf-8") as f:
        data = json.load(f)
    requests = sum(c["requests"] for c in data["cases"])
    procs = {}
    for proc in PROCS[side]:
        base = os.path.join(d, f"{side}-{proc}")
        counts = perf_counts(base + ".perf")
        if os.path.exists(base + ".wire"):
            counts["bytes"] = wire_bytes(base + ".wire")
        procs[proc] = {k: counts[k] / requests for k in FIELDS if k in counts}
    total = {k: sum(p.get(k, 0.0) for p in procs.values()) for k in FIELDS}
    return {"requests": requests, "per_request": procs, "total": total}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    d = os.path.join(ap.parse_args().dir, "hops")
    out = {side: side_costs(d, side) for side in SIDES if os.path.exists(os.path.join(d, f"{side}.json"))}
    if set(out) == set(SIDES):
        out["ratio_gateway_to_direct"] = {
            k: out["gateway"]["total"][k] / out["direct"]["total"][k]
            for k in FIELDS
            if out["direct"]["total"][k]
        }
    with open(os.path.join(d, "hops.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
    print("Per request (read a 64 KiB file whole: walk, open, reads, clunk), one client:")
    print(f"{'side':8} {'process':8} {'CPU µs':>8} {'wake-ups':>9} {'syscalls':>9} {'bytes':>9}")
    for side in SIDES:
        if side not in out:
            continue
        rows = list(out[side]["per_request"].items()) + [("total", out[side]["total"])]
        for proc, c in rows:
            print(
                f"{side:8} {proc:8} {c.get('cpu_us', 0):8.1f} {c.get('wakeups', 0):9.2f} "
                f"{c.get('syscalls', 0):9.1f} {c.get('bytes', 0):9.0f}"
            )
        print(f"{'':8} ({out[side]['requests']} requests)")
    if "ratio_gateway_to_direct" in out:
        r = out["ratio_gateway_to_direct"]
        print("gateway path / direct path: " + ", ".join(f"{k} {v:.2f}x" for k, v in r.items()))


if __name__ == "__main__":
    main()
