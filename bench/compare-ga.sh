#!/usr/bin/env bash
# Global Arrays programs on ninefold's libarmci against ARMCI-MPI, same run: each
# program built twice against Debian's GA (ga-config's link line, once with
# ARMCI-MPI, once with libarmci in its place), both with the ARMCI call profiler
# (bench/mpi/armci_prof.c) linked first; run alternating at each rank count, on one
# host and on two namespace hosts; then per program the wall times, the ratio
# libarmci / ARMCI-MPI and both ARMCI call profiles (bench/ga_report.py).
#
# usage: bench/compare-ga.sh [--ranks LIST] [--paths LIST] [--alternations K]
#                            [--cap S] [--programs LIST] [--program FILE.c]...
#                            [--out DIR]
#
#   --ranks LIST      rank counts, default 4,16; more ranks than cores run with
#                     mpirun --oversubscribe --bind-to none, and the report says so
#   --paths LIST      shm,netns (default): one host, and two namespace hosts (nf-netns;
#                     half the ranks on each; Open MPI's tcp btl with osc pt2pt for
#                     ARMCI-MPI; needs root)
#   --alternations K  pairs of runs per program, default 2; odd pairs run ARMCI-MPI
#                     first, even pairs libarmci first
#   --cap S           wall-time cap of one run in seconds, default 120: a run that does
#                     not finish is killed and reported as "cap S s", never left out
#   --programs LIST   the built-in programs, default all of: ga (bench/mpi/ga.c, small
#                     sizes), pack, temps, sync, start (bench/mpi/ga_kernels.c; start
#                     does nothing between GA_Initialize and GA_Terminate: the floor
#                     under every other program's wall time), and
#                     ga_arrays, ga_algebra, ga_sync, ga_groups, ga_patch_ops
#                     (crates/armci/tests/ga/; written for 2-4 ranks: at 16,
#                     ga_arrays' irregular map is refused by GA on both libraries and
#                     ga_patch_ops' "sel" aborts ARMCI-MPI); "none" for only
#                     --program ones
#   --program FILE.c  a GA program of yours (repeatable): built both ways like the
#                     others (Debian's ga.h; its own directory on the include path),
#                     run without arguments
#   --out DIR         default bench/out/compare-ga-<UTC timestamp>/
#
# Everything lands in the out directory: bin/ (the binaries), runs.csv (one line per
# run: path, ranks, program, side, k, wall_s, status, load), prof/<run>/prof-R.json
# (each rank's profile), log/<run>.txt (the run's output), and bench/ga_report.py's
# report.txt, report.csv (wall times and ratios, and each side's ARMCI_Init to
# ARMCI_Finalize span with its ratio: the part of the wall time the library can
# change), profile.csv and report.json.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
ranks=4,16
paths=shm,netns
alternations=2
cap=120
programs=all
out=""
user_programs=()
args=()
while (($#)); do
    if [[ $1 = --program ]]; then
        (($# >= 2)) || die "--program needs a file"
        [[ -f $2 ]] || die "--program $2: no such file"
        user_programs+=("$(cd "$(dirname "$2")" && pwd)/$(basename "$2")")
        shift 2
    else
        args+=("$1")
        shift
    fi
done
parse_opts "ranks paths alternations cap programs out" "${args[@]}"
[[ $ranks =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--ranks must be a list like 4,16, not '$ranks'"
check_words --paths "$paths" shm netns
check_int --alternations "$alternations"
check_int --cap "$cap"
builtin="ga pack temps sync start ga_arrays ga_algebra ga_sync ga_groups ga_patch_ops"
[[ $programs != all ]] || programs=${builtin// /,}
[[ $programs = none ]] || check_words --programs "$programs" $builtin
ga_config=/usr/lib/x86_64-linux-gnu/ga/openmpi/bin/ga-config
[[ -x $ga_config ]] || die "Global Arrays is missing: apt-get install libglobalarrays-dev (scripts/setup.sh)"
[[ -e /usr/include/armci.h ]] || die "ARMCI-MPI is missing: apt-get install libarmci-mpi-dev (scripts/setup.sh)"
for tool in mpicc mpirun python3 timeout; do
    need "$tool" "run scripts/setup.sh (openmpi-bin libopenmpi-dev python3 coreutils)"
done
[[ $paths != *netns* || $(id -u) -eq 0 ]] || die "--paths netns needs root (network namespaces)"

ompi_as_root
out_dir compare-ga
mkdir -p "$out/bin" "$out/prof" "$out/log"

# 1. Build: the profiler, then every program against each library.
echo "compare-ga: building libarmci and the programs both ways ..." >&2
packages=(nf-armci)
[[ $paths != *netns* ]] || packages+=(nf-testkit)
build_release "${packages[@]}"
need_built "$release/libarmci.so"
mpicc -O2 -Wall -Wextra -c -o "$out/bin/armci_prof.o" "$repo/bench/mpi/armci_prof.c"
# The calls without a PARMCI_ twin: the W lines of the profiler's table.
mapfile -t wraps < <(sed -nE 's/^W\([^,]*, *([A-Za-z_]+),.*/-Wl,--wrap=\1/p; s/^WV\(([A-Za-z_]+),.*/-Wl,--wrap=\1/p' \
    "$repo/bench/mpi/armci_prof_calls.h")
read -r -a ga_libs <<<"$("$ga_config" --libs | sed 's/-larmci-openmpi//g') $("$ga_config" --flibs)"
declare -A source=() prog_args=()
IFS=, read -r -a prog_list <<<"${programs/none/}"
for p in "${prog_list[@]}"; do
    case $p in
        ga) source[$p]=$repo/bench/mpi/ga.c prog_args[$p]="--n 384 --patches 6000 --tasks 20000" ;;
        pack | temps | sync | start) source[$p]=$repo/bench/mpi/ga_kernels.c prog_args[$p]="--kernel $p" ;;
        *) source[$p]=$repo/crates/armci/tests/ga/$p.c prog_args[$p]="" ;;
    esac
done
for f in "${user_programs[@]}"; do
    p=user-$(basename "$f" .c)
    source[$p]=$f prog_args[$p]=""
    prog_list+=("$p")
done
((${#prog_list[@]})) || die "no programs: give --programs or --program FILE.c"
for p in "${prog_list[@]}"; do
    src=${source[$p]}
    flags=(-std=gnu11 -O2 -Wall -Wno-unused-function -I"$(dirname "$src")"
        -I"$repo/crates/armci/tests/c" -o)
    libs=("$out/bin/armci_prof.o" "${wraps[@]}" "${ga_libs[@]}")
    mpicc "${flags[@]}" "$out/bin/$p-armci-mpi" "$src" "${libs[@]}" -larmci-openmpi
    mpicc "${flags[@]}" "$out/bin/$p-libarmci" "$src" "${libs[@]}" "$release/libarmci.so" \
        -Wl,-rpath,"$release" -Wl,--disable-new-dtags
done

if [[ $paths = *netns* ]]; then
    need_built "$release/nf-netns"
    netns_hosts "$release/nf-netns" 2
fi

# 2. The runs, alternating, each under the cap.
echo "path,ranks,program,side,k,wall_s,status,load1" >"$out/runs.csv"
cores=$(nproc)
run_one() { # path ranks program side k
    local path=$1 np=$2 p=$3 side=$4 k=$5 id=$1-$2-$3-$4-$5 cmd t0 t1 rc status
    mkdir -p "$out/prof/$id"
    case $path in
        shm)
            cmd=(mpirun --allow-run-as-root -np "$np")
            ((np <= cores)) && cmd+=(--bind-to core) || cmd+=(--oversubscribe --bind-to none)
            ;;
        netns)
            mpirun_across "$out/ompi-$id" mpirun $((np / 2)) $((np - np / 2))
            cmd=("${mpirun_across[@]}" --oversubscribe --bind-to none --mca osc pt2pt)
            ;;
    esac
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    echo "== $path, $np ranks, $p on $side, run $k/$alternations (load $load)" >&2
    t0=$(date +%s.%N)
    rc=0
    # shellcheck disable=SC2086 # prog_args holds words
    timeout --kill-after=10 "$cap" "${cmd[@]}" -x ARMCI_PROF_DIR="$out/prof/$id" \
        "$out/bin/$p-$side" ${prog_args[$p]} >"$out/log/$id.txt" 2>&1 || rc=$?
    t1=$(date +%s.%N)
    case $rc in
        0) status=ok ;;
        124 | 137) status=cap ;;
        *) status=fail:$rc ;;
    esac
    [[ $status = ok ]] || echo "   $status (see $out/log/$id.txt)" >&2
    echo "$path,$np,$p,$side,$k,$(awk "BEGIN { printf \"%.3f\", $t1 - $t0 }"),$status,$load" >>"$out/runs.csv"
}
IFS=, read -r -a path_list <<<"$paths"
IFS=, read -r -a rank_list <<<"$ranks"
for path in "${path_list[@]}"; do
    for np in "${rank_list[@]}"; do
        for p in "${prog_list[@]}"; do
            for ((k = 1; k <= alternations; k++)); do
                turn_order "$k" armci-mpi libarmci
                for side in "${order[@]}"; do
                    run_one "$path" "$np" "$p" "$side" "$k"
                done
            done
        done
    done
done

# 3. The report.
python3 "$repo/bench/ga_report.py" "$out" --cap "$cap" --cores "$cores" | tee "$out/report.txt"
echo "compare-ga: results in $out (ratio < 1: libarmci is faster)" >&2
