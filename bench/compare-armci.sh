#!/usr/bin/env bash
# libarmci against ARMCI-MPI in the same run: one C one-sided benchmark
# (bench/mpi/rma.c) linked once with ninefold's libarmci and once with Debian's
# ARMCI-MPI, on one host and across two network namespaces (bench/compare-rma.sh
# --ours libarmci does those runs), and one Global Arrays program (bench/mpi/ga.c)
# linked both ways; then the targets as ratios ours / ARMCI-MPI (bench/armci_targets.py).
#
# usage: bench/compare-armci.sh [--alternations K] [--paths LIST] [--ops LIST]
#                               [--netns-ops LIST] [--layouts LIST] [--sizes LIST]
#                               [--iters N] [--warmup W] [--ga-ranks P]
#                               [--ga-args ARGS] [--out DIR]
#
#   --alternations K  pairs of runs per comparison, default 3; odd pairs run ARMCI-MPI
#                     first, even pairs libarmci first
#   --paths LIST      shm,netns (default): one host (2 ranks), and two namespaces joined
#                     by a bridge (nf-netns; 1 rank each; ARMCI-MPI over Open MPI's tcp
#                     btl with osc pt2pt; needs root)
#   --ops, --layouts, --sizes, --iters, --warmup
#                     passed to bench/compare-rma.sh (defaults: put,put-fence,get,acc;
#                     contig,strided; 8 B ... 4 MiB; 2000; 200)
#   --netns-ops LIST  the ops of the netns path, default get: ARMCI-MPI's puts with a
#                     fence take up to a quarter second each there (osc pt2pt waits
#                     for the target), which stretches a full run to hours
#   --ga-ranks P      ranks of the GA runs on this host, default 2
#   --ga-args ARGS    extra arguments of bench/mpi/ga.c, e.g. "--n 256 --tasks 10000"
#   --out DIR         default bench/out/compare-armci-<UTC timestamp>/
#
# The targets (bench/armci_targets.py): same-host get 8 B latency <= 0.7x, same-host
# get 1 MiB bandwidth >= 1.0x, cross-host get 8 B latency <= 0.8x, GA run time <= 1.0x.
# Everything lands in the out directory: rma-<path>/ (compare-rma.sh's tables and
# reports), ga-*.json, targets.{txt,csv,json}.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
alternations=3
paths=shm,netns
netns_ops="get"
ga_ranks=2
ga_args=""
out=""
# Passed on to compare-rma.sh when given (it checks them).
# shellcheck disable=SC2034 # read through ${!opt} below
ops="" layouts="" sizes="" iters="" warmup=""
parse_opts "alternations paths ops netns-ops layouts sizes iters warmup ga-ranks ga-args out" "$@"
rma_args=()
for opt in ops layouts sizes iters warmup; do
    [[ -z ${!opt} ]] || rma_args+=("--$opt" "${!opt}")
done

check_int --alternations "$alternations"
check_words --paths "$paths" shm netns
check_words --netns-ops "$netns_ops" put put-fence get acc
check_int --ga-ranks "$ga_ranks"
ga_config=/usr/lib/x86_64-linux-gnu/ga/openmpi/bin/ga-config
[[ -x $ga_config ]] || die "Global Arrays is missing: apt-get install libglobalarrays-dev (scripts/setup.sh)"
for tool in mpicc mpirun; do
    need "$tool" "run scripts/setup.sh (openmpi-bin libopenmpi-dev)"
done
need python3 "install python3 (needed for the target table)"
need cargo "install Rust (see scripts/setup.sh)"

ompi_as_root
out_dir compare-armci
git_arg

# 1. bench/mpi/rma.c with each ARMCI, per path.
IFS=, read -r -a path_list <<<"$paths"
for p in "${path_list[@]}"; do
    extra=()
    [[ $p = shm ]] || extra=(--ops "$netns_ops")
    "$repo/bench/compare-rma.sh" --ours libarmci --path "$p" --alternations "$alternations" \
        "${rma_args[@]}" "${extra[@]}" --out "$out/rma-$p"
done

# 2. The GA program with each ARMCI: ga-config's link line, ARMCI-MPI swapped for ours.
echo "compare-armci: building the GA program both ways ..." >&2
build_release nf-armci
need_built "$release/libarmci.so"
read -r -a ga_libs <<<"$("$ga_config" --libs | sed 's/-larmci-openmpi//g') $("$ga_config" --flibs)"
mpicc -O2 -Wall -o "$out/ga-armci-mpi" "$repo/bench/mpi/ga.c" "${ga_libs[@]}" -larmci-openmpi
mpicc -O2 -Wall -o "$out/ga-libarmci" "$repo/bench/mpi/ga.c" "${ga_libs[@]}" \
    "$release/libarmci.so" -Wl,-rpath,"$release"

read -r -a ga_extra <<<"$ga_args"
ga_extra+=("${git_arg[@]}")
bind=(--bind-to core)
((ga_ranks <= $(nproc))) || bind=(--oversubscribe --bind-to none)
run_ga() { # label k
    echo "== GA run $2/$alternations: $1 ($ga_ranks ranks)" >&2
    mpirun --allow-run-as-root -np "$ga_ranks" "${bind[@]}" "$out/ga-$1" "${ga_extra[@]}" \
        --transport "$1" --json "$out/ga-$1-$2.json" | tee "$out/ga-$1-$2.txt"
}
ga_ours=()
ga_theirs=()
for ((k = 1; k <= alternations; k++)); do
    turn_order "$k" armci-mpi libarmci
    for side in "${order[@]}"; do
        run_ga "$side" "$k"
    done
    ga_ours+=("$out/ga-libarmci-$k.json")
    ga_theirs+=("$out/ga-armci-mpi-$k.json")
done

# 3. The targets.
target_args=(--ga-ours "${ga_ours[@]}" --ga-theirs "${ga_theirs[@]}")
[[ ! -d $out/rma-shm ]] || target_args+=(--rma-shm "$out/rma-shm")
[[ ! -d $out/rma-netns ]] || target_args+=(--rma-netns "$out/rma-netns")
echo >&2
python3 "$repo/bench/armci_targets.py" "${target_args[@]}" \
    --csv "$out/targets.csv" --json "$out/targets.json" | tee "$out/targets.txt"
echo "compare-armci: results in $out" >&2
