#!/usr/bin/env python3
"""Instructions per 8 B round trip from callgrind profiles of `nf bench pingpong`
(Python 3 standard library only; reads callgrind's own output files).

Each profile comes from a run where only that rank was under valgrind and its peer
ran natively (bench/callgrind-pingpong.sh). The native peer answers within a
microsecond, long before the slowed rank polls again, so the profiled rank almost
never polls in vain and its count is the message path itself: the send, the poll
that finds the message, dispatch, the handler (and on rank 1 the echo sent from
inside it), plus the benchmark's clock reads on rank 0.

  Ir per round trip = Ir of PingPong::measure / round trips (iters + warm-up)
  empty poll        = Ir of World::poll per call in the empty-poll phase

usage: callgrind_report.py --round-trips R RANK0-PROFILE RANK1-PROFILE [--json F]
"""

import argparse
import json
import re
import sys

def parse(path):
    """{function: [self Ir, {callee: [inclusive Ir, calls]}]} from a callgrind file.

    Reads the raw format (not callgrind_annotate's text), because the annotator
    splits a function into one entry per source file inlined into it."""
    names, funcs = {}, {}
    cur, pending = None, None  # current function; (callee, calls) awaiting its cost

    def name(v):
        m = re.match(r"\((\d+)\)(?: (.*))?$", v)
        if not m:
            return v
        if m[2] is not None:
            names[m[1]] = m[2]
        return names[m[1]]

    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                cur = funcs.setdefault(name(line[3:]), [0, {}])
            elif line.startswith("cfn="):
                target = name(line[4:])
            elif line.startswith("calls="):
                pending = (target, int(line[6:].split()[0]))
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if cur is None:
                    continue
                if pending:
                    c = cur[1].setdefault(pending[0], [0, 0])
                    c[0] += cost
                    c[1] += pending[1]
                    pending = None
                else:
                    cur[0] += cost
            elif "=" in line:
                key = line.split("=", 1)[0]
                if key in ("fl", "fi", "fe", "cfi", "cfl", "ob", "cob"):
                    name(line.split("=", 1)[1])
    return funcs


def inclusive(funcs, fn):
    return funcs[fn][0] + sum(ir for ir, _ in funcs[fn][1].values())


def find(funcs, suffix):
    """The one function whose name ends with `suffix`."""
    hits = [n for n in funcs if n.endswith(suffix)]
    if len(hits) != 1:
        sys.exit(f"callgrind_report: expected one function named *{suffix}, found {hits}")
    return hits[0]


def callee(funcs, caller, suffix):
    """(Ir, calls) of the callee of `caller` whose name ends with `suffix`."""
    hits = [v for n, v in funcs[caller][1].items() if n.endswith(suffix)]
    if len(hits) != 1:
        sys.exit(f"callgrind_report: {caller} has {len(hits)} callees named *{suffix}")
    return hits[0]


def rank_cost(path, round_trips):
    funcs = parse(path)
    measure = inclusive(funcs, find(funcs, "nf_bench::pingpong::PingPong::measure"))
    empty = find(funcs, "nf_bench::pingpong::empty_poll_ns")
    poll_ir, poll_calls = callee(funcs, empty, "World>::poll")
    return {
        "ir_per_round_trip": measure / round_trips,
        "empty_poll_ir": poll_ir / poll_calls,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--round-trips", type=int, required=True)
    ap.add_argument("--json")
    ap.add_argument("ranks", nargs=2)
    a = ap.parse_args()
    rows = [rank_cost(p, a.round_trips) for p in a.ranks]
    print(f"callgrind, 8 B ping-pong, {a.round_trips} round trips, one rank profiled at a time")
    print(f"{'rank':>4} {'Ir/round trip':>14} {'empty poll Ir':>14}")
    for r, row in enumerate(rows):
        print(f"{r:>4} {row['ir_per_round_trip']:>14.0f} {row['empty_poll_ir']:>14.1f}")
    total = sum(row["ir_per_round_trip"] for row in rows)
    print(f"both ranks: {total:.0f} Ir per round trip")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"round_trips": a.round_trips, "ranks": rows, "total_ir_per_round_trip": total}, f, indent=2)


if __name__ == "__main__":
    main()
