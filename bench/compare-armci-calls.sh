#!/usr/bin/env bash
# The ARMCI calls Global Arrays leans on besides data movement (collective allocation
# and free, barriers, armci_msg_* reductions and broadcasts), timed by
# bench/mpi/armci_calls.c linked once with ninefold's libarmci and once with Debian's
# ARMCI-MPI, alternating, at each rank count; then the ratios ours / ARMCI-MPI of the
# medians, per call, with the load average of each run.
#
# usage: bench/compare-armci-calls.sh [--ranks LIST] [--alternations K] [--iters N]
#                                     [--warmup W] [--out DIR]
#
#   --ranks LIST      rank counts, default 2,4; more ranks than cores run with
#                     mpirun --oversubscribe (say so when you quote the figures)
#   --alternations K  pairs of runs per rank count, default 3; odd pairs run ARMCI-MPI
#                     first, even pairs libarmci first; the ratio uses the median of
#                     each side's per-run medians
#   --iters N         rounds per call, default 200 (after --warmup W, default 20)
#   --out DIR         default bench/out/compare-armci-calls-<UTC timestamp>/
#
# Everything lands in the out directory: calls-<side>-<ranks>-<k>.json (one run's
# medians), loadavg-<ranks>-<k>.txt, ratios.csv and ratios.txt.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
ranks=2,4
alternations=3
iters=200
warmup=20
out=""
parse_opts "ranks alternations iters warmup out" "$@"
check_int --alternations "$alternations"
check_int --iters "$iters"
check_count --warmup "$warmup"
[[ $ranks =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--ranks must be a list like 2,4, not '$ranks'"
[[ -e /usr/include/armci.h ]] || die "ARMCI-MPI is missing: apt-get install libarmci-mpi-dev (scripts/setup.sh)"
for tool in mpicc mpirun python3; do
    need "$tool" "run scripts/setup.sh (openmpi-bin libopenmpi-dev python3)"
done

ompi_as_root
out_dir compare-armci-calls
echo "compare-armci-calls: building both ways ..." >&2
build_release nf-armci
need_built "$release/libarmci.so"
mpicc -O2 -Wall -o "$out/calls-armci-mpi" "$repo/bench/mpi/armci_calls.c" -larmci-openmpi
mpicc -O2 -Wall -o "$out/calls-libarmci" "$repo/bench/mpi/armci_calls.c" \
    -I"$repo/crates/armci/include" "$release/libarmci.so" -Wl,-rpath,"$release"

IFS=, read -r -a rank_list <<<"$ranks"
for p in "${rank_list[@]}"; do
    over=()
    ((p <= $(nproc))) || over=(--oversubscribe)
    for ((k = 1; k <= alternations; k++)); do
        turn_order "$k" armci-mpi libarmci
        cp /proc/loadavg "$out/loadavg-$p-$k.txt"
        for side in "${order[@]}"; do
            echo "== $side, $p ranks, run $k/$alternations (load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
            mpirun --allow-run-as-root -np "$p" "${over[@]}" "$out/calls-$side" \
                --iters "$iters" --warmup "$warmup" --json "$out/calls-$side-$p-$k.json" >&2
        done
    done
done

python3 - "$out" <<'PY' | tee "$out/ratios.txt"
import glob, json, os, statistics, sys
out = sys.argv[1]
runs = {}
for f in glob.glob(os.path.join(out, "calls-*-*-*.json")):
    side, p, _k = os.path.basename(f)[len("calls-"):-len(".json")].rsplit("-", 2)
    for call, v in json.load(open(f))["calls"].items():
        runs.setdefault((int(p), call, side), []).append(v["median_us"])
rows = []
for (p, call, side) in sorted(runs):
    if side != "libarmci" or (p, call, "armci-mpi") not in runs:
        continue
    ours = statistics.median(runs[(p, call, "libarmci")])
    theirs = statistics.median(runs[(p, call, "armci-mpi")])
    rows.append((p, call, ours, theirs, ours / theirs if theirs > 0 else float("nan")))
with open(os.path.join(out, "ratios.csv"), "w") as f:
    f.write("ranks,call,libarmci_us,armci_mpi_us,ratio\n")
    for r in rows:
        f.write("%d,%s,%.3f,%.3f,%.3f\n" % r)
print("%5s %-20s %12s %12s %7s" % ("ranks", "call", "libarmci µs", "ARMCI-MPI µs", "ratio"))
for r in rows:
    print("%5d %-20s %12.2f %12.2f %7.2f" % r)
PY
echo "compare-armci-calls: results in $out (ratio < 1: libarmci is faster)" >&2
