#!/usr/bin/env python3
"""Instructions per 8 B round trip from callgrind profiles of `nf bench pingpong`
(Python 3 standard library only; reads callgrind's own output files).

A waiting rank polls again and again until its message is there, and under valgrind
how often depends on scheduling, so each rank is profiled twice and the empty polls
are solved away rather than guessed:

  run a: only this rank under valgrind, its peer native. The peer answers long
         before the slowed rank polls again, so few polls are empty (more when a
         loaded machine deschedules the peer: the script repeats this run, up to
         3 times, until fewer than 2 polls per round trip were empty, and keeps the
         one with the fewest);
  run b: both ranks under valgrind, each waiting on a slow peer: usually many more
         empty polls (on a loaded machine either run may have more; what matters is
         that they differ).

  For each run, y = Ir of PingPong::measure / R and x = empty polls / R, with R the
  round trips (iters + warm-up) and the empty polls counted exactly — calls of
  `Backoff::idle_once` made inside the loop (callgrind --separate-callers), which
  runs once per empty poll of a wait (in builds without it: calls of
  `Backoff::after`, once per poll, minus R). An empty poll costs the
  same every time, so y = A + e * x, and two runs give both:

  Ir per round trip A = y_a - e * x_a,   e = (y_b - y_a) / (x_b - x_a)

With x_a near zero, A hardly depends on e. A is the message path: the send, the poll that finds the message, dispatch, the
handler (on rank 1 with the echo sent from inside it), plus the benchmark's own
clock reads on rank 0. e, one empty wait iteration, is printed as a check (it should
be close to the empty poll, and alike on both ranks). The empty `World::poll` comes
from a fourth profile, of the benchmark's empty-poll phase only.

usage: callgrind_report.py --round-trips R --rank0 A0 B0 --rank1 A1 B1
                           --empty-poll PROFILE [--json F]
       callgrind_report.py --round-trips R --empty-polls-of PROFILE   (prints x)
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


def base(name):
    """A function's name without the caller context (--separate-callers)."""
    return name.split("'", 1)[0]


def find(funcs, suffix):
    """The one function (in any context) whose name ends with `suffix`."""
    hits = [n for n in funcs if base(n).endswith(suffix)]
    if len(hits) != 1:
        sys.exit(f"callgrind_report: expected one function named *{suffix}, found {hits}")
    return hits[0]


def callee(funcs, caller, suffix):
    """(Ir, calls) of the callee of `caller` whose name ends with `suffix`."""
    hits = [v for n, v in funcs[caller][1].items() if base(n).endswith(suffix)]
    if len(hits) != 1:
        sys.exit(f"callgrind_report: {caller} has {len(hits)} callees named *{suffix}")
    return hits[0]


def calls_in(funcs, suffix, context):
    """Calls of functions named *suffix whose caller chain includes `context`."""
    return sum(
        calls
        for _, callees in funcs.values()
        for name, (_, calls) in callees.items()
        if base(name).endswith(suffix) and context in name
    )


def empty_poll(path):
    """Ir of one empty World::poll, from a profile of the empty-poll phase."""
    funcs = parse(path)
    empty = find(funcs, "nf_bench::pingpong::empty_poll_ns")
    poll_ir, poll_calls = callee(funcs, empty, "World>::poll")
    return poll_ir / poll_calls


def run_point(path, round_trips):
    """(y, x) of one profile of the ping-pong loop."""
    funcs = parse(path)
    loop = "nf_bench::pingpong::PingPong::measure"
    measure = inclusive(funcs, find(funcs, loop))
    idle = calls_in(funcs, "nf_core::wait::Backoff::idle_once", loop)
    if idle == 0:
        idle = max(0, calls_in(funcs, "nf_core::world::Backoff::after", loop) - round_trips)
    return measure / round_trips, idle / round_trips


def rank_cost(run_a, run_b, round_trips):
    ya, xa = run_point(run_a, round_trips)
    yb, xb = run_point(run_b, round_trips)
    if abs(xb - xa) < 1:
        sys.exit(
            f"callgrind_report: runs {run_a} and {run_b} differ by {abs(xb - xa):.2f} empty "
            "polls per round trip; too little to tell an empty poll's cost (run again)"
        )
    e = (yb - ya) / (xb - xa)
    if xa > abs(xb - xa):
        print(
            f"callgrind_report: warning: {run_a} had {xa:.1f} empty polls per round trip, "
            f"{run_b} only {abs(xb - xa):.1f} more or fewer; A is uncertain (run again)",
            file=sys.stderr,
        )
    return {
        "ir_per_round_trip": ya - e * xa,
        "empty_wait_iteration_ir": e,
        "empty_polls_per_round_trip": [xa, xb],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--round-trips", type=int, required=True)
    ap.add_argument("--rank0", nargs=2, metavar=("RUN_A", "RUN_B"))
    ap.add_argument("--rank1", nargs=2, metavar=("RUN_A", "RUN_B"))
    ap.add_argument("--empty-poll", metavar="PROFILE")
    ap.add_argument("--empty-polls-of", metavar="PROFILE", help="print x of one profile and exit")
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.empty_polls_of:
        print(f"{run_point(a.empty_polls_of, a.round_trips)[1]:.3f}")
        return
    if not (a.rank0 and a.rank1 and a.empty_poll):
        ap.error("--rank0, --rank1 and --empty-poll are required")
    rows = [rank_cost(*runs, a.round_trips) for runs in (a.rank0, a.rank1)]
    poll = empty_poll(a.empty_poll)
    print(f"callgrind, 8 B ping-pong, {a.round_trips} round trips per run")
    print(f"{'rank':>4} {'Ir/round trip':>14} {'empty wait it.':>15} {'empty polls/rt (a, b)':>22}")
    for r, row in enumerate(rows):
        xa, xb = row["empty_polls_per_round_trip"]
        print(
            f"{r:>4} {row['ir_per_round_trip']:>14.0f} {row['empty_wait_iteration_ir']:>15.1f}"
            f" {xa:>11.2f} {xb:>10.2f}"
        )
    total = sum(row["ir_per_round_trip"] for row in rows)
    print(f"both ranks: {total:.0f} Ir per round trip; one empty World::poll: {poll:.1f} Ir")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(
                {"round_trips": a.round_trips, "ranks": rows, "total_ir_per_round_trip": total, "empty_poll_ir": poll},
                f,
                indent=2,
            )


if __name__ == "__main__":
    main()
