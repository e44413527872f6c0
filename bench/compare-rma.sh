#!/usr/bin/env bash
# One-sided put / get / accumulate: ninefold's rma layer (`nf bench rma`) against
# ARMCI-MPI (bench/mpi/rma.c linked with Debian's libarmci-openmpi), same run.
#
# usage: bench/compare-rma.sh [--path shm|netns] [--ours nf|libarmci] [--alternations K]
#                             [--ops LIST] [--layouts LIST] [--sizes LIST] [--iters N]
#                             [--warmup W] [--out DIR]
#
#   --path P          shm (default): both on one host, ninefold by direct load / store,
#                     ARMCI-MPI over Open MPI's defaults (its windows are in shared
#                     memory then, whatever the btl);
#                     netns: two network namespaces joined by a bridge (nf-netns, from
#                     nf-testkit; removed when this script ends, however it ends;
#                     needs root), one rank in each: ninefold with put
#                     and get over the ofi transport's native RMA (NF_RMA_OFI=auto;
#                     export NF_RMA_OFI=off for its service thread), ARMCI-MPI over
#                     Open MPI's tcp btl
#   --ours S          nf (default): ninefold's side is `nf bench rma`; libarmci: it is
#                     the same bench/mpi/rma.c linked with ninefold's libarmci
#                     (crates/armci) instead of ARMCI-MPI, started the same way
#   --alternations K  pairs of runs per (op, layout), default 3; odd pairs run ARMCI-MPI
#                     first, even pairs ninefold first
#   --ops LIST        default put,put-fence,get,acc
#   --layouts LIST    default contig,strided
#   --sizes LIST      comma-separated bytes (multiples of 8), default 8 B ... 4 MiB
#   --iters N         timed operations per size, default 2000 (fewer above 64 KiB, as
#                     nf_bench::pingpong::iters_for says; both sides use the same rule)
#   --warmup W        untimed operations per size, default 200
#   --out DIR         default bench/out/compare-rma-<path>-<UTC timestamp>/
#
# While rank 0 measures, ninefold's rank 1 sleeps without calling the library (its
# service thread, or its ofi progress thread, answers); ARMCI-MPI's rank 1 waits in ARMCI_Barrier, which lets MPI
# make progress for it. Per (op, layout) the table shows the best of K runs on each
# side and the ratios ours / ARMCI-MPI (bench/compare_report.py); summary.txt has
# every table. Each run's JSON and text land in the out directory.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
path=shm
ours=nf
alternations=3
ops=put,put-fence,get,acc
layouts=contig,strided
sizes=""
iters=2000
warmup=200
out=""
parse_opts "path ours alternations ops layouts sizes iters warmup out" "$@"

[[ $path =~ ^(shm|netns)$ ]] || die "--path must be shm or netns, not '$path'"
[[ $ours =~ ^(nf|libarmci)$ ]] || die "--ours must be nf or libarmci, not '$ours'"
check_int --alternations "$alternations"
check_int --iters "$iters"
check_count --warmup "$warmup"
[[ -z $sizes ]] || check_sizes "$sizes"
check_words --ops "$ops" put put-fence get acc
check_words --layouts "$layouts" contig strided

for tool in mpicc mpirun; do
    need "$tool" "run scripts/setup.sh (openmpi-bin libopenmpi-dev)"
done
need python3 "install python3 (needed for the ratio tables)"
need cargo "install Rust (see scripts/setup.sh)"
# ARMCI-MPI is linked against Open MPI: use its wrappers even where MPICH is the default.
mpicc=$(command -v mpicc.openmpi || command -v mpicc)
mpirun=$(command -v mpirun.openmpi || command -v mpirun)
[[ -e /usr/include/armci.h ]] || die "ARMCI-MPI is missing: apt-get install libarmci-mpi-dev (scripts/setup.sh)"
if [[ $path = netns ]]; then
    [[ $(id -u) -eq 0 ]] || die "--path netns needs root (network namespaces)"
    need ip "run scripts/setup.sh (iproute2)"
fi

ompi_as_root
out_dir "compare-rma-$path"
git_arg

echo "compare-rma: building the ARMCI benchmark and nf (release) ..." >&2
armci_bin=$out/rma-armci-mpi
build_c "$mpicc" "$armci_bin" mpi/rma.c -larmci-openmpi
packages=(nf-cli)
[[ $ours = nf ]] || packages=(nf-armci)
[[ $path = shm ]] || packages+=(nf-testkit)
build_release "${packages[@]}"
if [[ $ours = nf ]]; then
    nf=$release/nf
    need_built "$nf"
else
    need_built "$release/libarmci.so"
    ours_bin=$out/rma-libarmci
    build_c "$mpicc" "$ours_bin" mpi/rma.c -I"$repo/crates/armci/include" \
        "$release/libarmci.so" -Wl,-rpath,"$release"
fi

if [[ $path = netns ]]; then
    need_built "$release/nf-netns"
    # The hosts, removed on any exit of this script.
    netns_hosts "$release/nf-netns" 2
fi

common=(--iters "$iters" --warmup "$warmup")
[[ -z $sizes ]] || common+=(--sizes "$sizes")

run_rma_c() { # binary file-prefix label k op layout: bench/mpi/rma.c under mpirun
    local f=$out/$2-$5-$6-$4
    echo "== run $4/$alternations: $3 $5 $6 ($path)" >&2
    local args=("$1" --op "$5" --layout "$6" "${common[@]}" "${git_arg[@]}"
        --transport "$3-$path" --json "$f.json")
    case $path in
        shm) "$mpirun" --allow-run-as-root -np 2 --bind-to core "${args[@]}" ;;
        netns)
            mpirun_across "$f.ompi" "$mpirun"
            "${mpirun_across[@]}" --oversubscribe --mca osc pt2pt "${args[@]}"
            ;;
    esac | tee "$f.txt"
}

run_armci() { # k op layout
    run_rma_c "$armci_bin" armci armci-mpi "$@"
}

run_ninefold() { # k op layout
    if [[ $ours = libarmci ]]; then
        run_rma_c "$ours_bin" ninefold libarmci "$@"
        return
    fi
    local f=$out/ninefold-$2-$3-$1
    echo "== run $1/$alternations: ninefold $2 $3 ($path)" >&2
    local args=("$nf" bench rma --ops "$2" --layouts "$3" "${common[@]}"
        --label "ninefold-$path" --json "$f.json")
    case $path in
        shm) "$nf" run -n 2 --bind-to core -- "${args[@]}" ;;
        netns) ip netns exec "${H[0]}" "$nf" run --hosts "${H[0]}:1,${H[1]}:1" \
            --remote "ip netns exec {host}" --pmi-bind "${A[0]}:0" -- "${args[@]}" ;;
    esac | tee "$f.txt"
}

ours_label=ninefold
[[ $ours = nf ]] || ours_label=libarmci
summary=$out/summary.txt
: >"$summary"
IFS=, read -r -a op_list <<<"$ops"
IFS=, read -r -a layout_list <<<"$layouts"
for op in "${op_list[@]}"; do
    for layout in "${layout_list[@]}"; do
        ours_runs=()
        theirs_runs=()
        for ((k = 1; k <= alternations; k++)); do
            turn_order "$k" armci ninefold
            for side in "${order[@]}"; do
                "run_$side" "$k" "$op" "$layout"
            done
            for f in "$out/ninefold-$op-$layout-$k.json" "$out/armci-$op-$layout-$k.json"; do
                [[ -s $f ]] || die "run $k wrote no report $f"
            done
            ours_runs+=("$out/ninefold-$op-$layout-$k.json")
            theirs_runs+=("$out/armci-$op-$layout-$k.json")
        done
        python3 "$repo/bench/compare_report.py" \
            --ours "${ours_runs[@]}" --theirs "${theirs_runs[@]}" \
            --ours-label "$ours_label" --theirs-label ARMCI-MPI \
            --csv "$out/compare-$op-$layout.csv" --json "$out/compare-$op-$layout.json" \
            --best-ours "$out/best-ninefold-$op-$layout.json" \
            --best-theirs "$out/best-armci-$op-$layout.json" | tee -a "$summary"
        echo | tee -a "$summary"
    done
done
echo "compare-rma: tables in $summary, everything in $out" >&2
