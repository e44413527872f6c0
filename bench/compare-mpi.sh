#!/usr/bin/env bash
# Ping-pong: ninefold (shm) against Open MPI (ob1 + vader) on this machine, same run.
#
# usage: bench/compare-mpi.sh [--alternations K] [--sizes LIST] [--iters N]
#                             [--warmup W] [--out DIR]
#
#   --alternations K  pairs of runs, default 3; odd pairs run Open MPI first, even
#                     pairs ninefold first, so neither side always runs on a cold or
#                     a warm machine
#   --sizes LIST      comma-separated bytes, default 8 B ... 8 MiB (powers of two)
#                     plus 2000000
#   --iters N         timed round trips per size, default 10000 (see the rule below)
#   --warmup W        untimed round trips per size, default 1000
#   --out DIR         default bench/out/compare-mpi-<UTC timestamp>/
#
# Both sides get the same --sizes/--iters/--warmup and apply the same rule
# (bench/mpi/pingpong.c, nf_bench::pingpong::iters_for):
#   iters(size)  = N                                     if size <= 64 KiB
#                = max(20, min(N, N * 64 KiB / size))    otherwise (integer division)
#   warmup(size) = min(W, iters(size))
#
# Per size, the table shows the best of K runs on each side (latency: smallest
# median half round trip; bandwidth: largest MB/s, MB = 10^6 B) and the ratios
# ours / Open MPI. Everything lands in the out directory: each run's JSON and text,
# compare.{txt,csv,json}, best-{ninefold,openmpi}.json and, when `nf bench plot`
# exists, compare.png.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
alternations=3
sizes=""
iters=10000
warmup=1000
out=""
parse_opts "alternations sizes iters warmup out" "$@"

check_int --alternations "$alternations"
check_int --iters "$iters"
check_count --warmup "$warmup"
[[ -z $sizes ]] || check_sizes "$sizes"

for tool in mpicc mpirun; do
    need "$tool" "run scripts/setup.sh or apt-get install openmpi-bin libopenmpi-dev"
done
need python3 "needed for the ratio table"
need cargo "install Rust (see scripts/setup.sh)"

ompi_as_root
out_dir compare-mpi
git_arg

echo "compare-mpi: building the MPI ping-pong and nf (release) ..." >&2
mpi_bin=$out/pingpong-mpi
build_c mpicc "$mpi_bin" mpi/pingpong.c
build_release nf-cli
nf=$release/nf
need_built "$nf"

common=(--iters "$iters" --warmup "$warmup")
[[ -z $sizes ]] || common+=(--sizes "$sizes")

run_openmpi() {
    echo "== run $1/$alternations: Open MPI (pml ob1, btl vader,self)" >&2
    mpirun --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl vader,self \
        "$mpi_bin" "${common[@]}" "${git_arg[@]}" --json "$out/openmpi-$1.json" |
        tee "$out/openmpi-$1.txt"
}

run_ninefold() {
    echo "== run $1/$alternations: ninefold (shm)" >&2
    "$nf" run -n 2 --bind-to core -- "$nf" bench pingpong "${common[@]}" --json "$out/ninefold-$1.json" |
        tee "$out/ninefold-$1.txt"
}

ours=()
theirs=()
for ((k = 1; k <= alternations; k++)); do
    turn_order "$k" openmpi ninefold
    for side in "${order[@]}"; do
        "run_$side" "$k"
    done
    for f in "$out/ninefold-$k.json" "$out/openmpi-$k.json"; do
        [[ -s $f ]] || die "run $k wrote no report $f"
    done
    ours+=("$out/ninefold-$k.json")
    theirs+=("$out/openmpi-$k.json")
done

echo >&2
python3 "$repo/bench/compare_report.py" \
    --ours "${ours[@]}" --theirs "${theirs[@]}" \
    --ours-label ninefold --theirs-label "Open MPI" \
    --csv "$out/compare.csv" --json "$out/compare.json" \
    --best-ours "$out/best-ninefold.json" --best-theirs "$out/best-openmpi.json" |
    tee "$out/compare.txt"

if "$nf" bench plot --help >/dev/null 2>&1; then
    "$nf" bench plot --out "$out/compare.png" "$out/best-ninefold.json" "$out/best-openmpi.json"
    echo "compare-mpi: plot in $out/compare.png" >&2
else
    echo "compare-mpi: no 'nf bench plot' in this build; skipping the plot" >&2
fi
echo "compare-mpi: results in $out" >&2
