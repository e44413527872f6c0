#!/usr/bin/env bash
# OpenSHMEM: ninefold's libshmem against Open MPI's OSHMEM, same run, same program
# (crates/shmem/bench/shmem_bench.c, written against the standard shmem.h: built once
# with ninefold's header and libshmem, once with Open MPI's oshcc).
#
# usage: bench/compare-shmem.sh [--pes LIST] [--alternations K] [--ops LIST]
#                               [--sizes LIST] [--iters N] [--warmup W] [--out DIR]
#                               [--nf PATH --lib DIR] [--hosts 1|2]
#
#   --pes LIST        PE counts, one host, default 2,4 (put, get and the atomics go
#                     from PE 0 to PE 1 at every count; the collectives span every PE)
#   --alternations K  pairs of runs per PE count, default 3; odd pairs run OSHMEM
#                     first, even pairs ninefold first
#   --ops LIST        default put,get,fetch-add,put-signal,put-bw,barrier,broadcast,
#                     reduce (OSHMEM 4.1 is OpenSHMEM 1.4: no put-signal, and its
#                     collectives are the 1.4 active-set calls; the program says so)
#   --sizes LIST      comma-separated bytes, default the program's (8 B ... 4 MiB)
#   --iters N         timed operations per size up to 64 KiB, default 1000
#   --warmup W        untimed operations per size, default 100
#   --out DIR         default bench/out/compare-shmem-<UTC timestamp>/
#   --nf PATH, --lib DIR
#                     measure this nf (the launcher) and the libshmem.so in DIR (an
#                     install, another build) instead of building both (release)
#   --hosts H         1 (default): every PE on this host; 2: two network-namespace
#                     hosts made for the run (nf-netns, removed when the script ends;
#                     root), half the PEs on each (PE 0 and PE 1 on different hosts
#                     at 2 PEs); nf-netns is taken from --nf's folder
#
# ninefold runs under `nf run -n P` (PEs on this host reach each other's heaps by
# load / store); OSHMEM under oshrun (spml ucx, Debian's default) with --bind-to none,
# as nf run binds nothing. Across two namespace hosts: ninefold under `nf run --hosts`
# (PEs of different hosts reach each other by the rma routes), OSHMEM under oshrun
# started inside host 0 with spml ucx over UCX_TLS=tcp (plus sm for PEs sharing a
# host) and pml ob1 / btl tcp, its daemons started through
# tests/netns/mpirun-agent.sh (`ip netns exec HOST ...`). Open MPI's OSHMEM is known to die with SIGSEGV in
# shmem_finalize after a run: the program prints `# done` before shmem_finalize, so a
# run whose output reached `# done` is complete and its figures are used; the crash
# is recorded (crashes.txt, and the table's heading), never hidden. A run that did
# not reach `# done` is an error.
#
# Per (PE count, operation) the table shows the best of K runs on each side and the
# ratios ours / OSHMEM (bench/compare_report.py: time below 1 is better for us,
# bandwidth above 1), with the load average before each run (loadavg.txt);
# summary.txts has every table, compare-*.csv/json each one's figures.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
pes=2,4
alternations=3
ops=put,get,fetch-add,put-signal,put-bw,barrier,broadcast,reduce
sizes=""
iters=1000
warmup=100
out=""
nf=""
lib=""
hosts=1
parse_opts "pes alternations ops sizes iters warmup out nf lib hosts" "$@"
[[ -n $nf && -n $lib || -z $nf && -z $lib ]] || die "--nf and --lib go together"

[[ $pes =~ ^[2-9][0-9]*(,[2-9][0-9]*)*$ ]] || die "--pes takes PE counts of at least 2 (2,4), not '$pes'"
check_int --alternations "$alternations"
check_int --iters "$iters"
check_count --warmup "$warmup"
[[ -z $sizes ]] || check_sizes "$sizes"
check_words --ops "$ops" put get fetch-add put-signal put-bw barrier broadcast reduce
[[ $hosts =~ ^[12]$ ]] || die "--hosts must be 1 or 2, not '$hosts'"
((hosts == 1)) || [[ $(id -u) -eq 0 ]] || die "--hosts 2 needs root (network namespaces)"

if ! command -v oshcc >/dev/null || ! command -v oshrun >/dev/null; then
    apt_install openmpi-bin libopenmpi-dev || true
fi
need oshcc "apt-get install libopenmpi-dev openmpi-bin (Open MPI's OSHMEM)"
need oshrun "apt-get install openmpi-bin"
need cc "install a C compiler (build-essential)"
need python3 "install python3 (needed for the ratio tables)"
need cargo "install Rust (see scripts/setup.sh)"

ompi_as_root
out_dir compare-shmem
if [[ -z $nf ]]; then
    echo "compare-shmem: building nf and libshmem (release) ..." >&2
    build_release nf-cli nf-shmem nf-testkit
    nf=$release/nf lib=$release
fi
lib=$(cd "$lib" && pwd)
need_built "$nf" "$lib/libshmem.so"
if ((hosts == 2)); then
    need_built "$(dirname "$nf")/nf-netns"
    netns_hosts "$(dirname "$nf")/nf-netns" 2
fi
src=$repo/crates/shmem/bench/shmem_bench.c
ours_bin=$out/shmem_bench-libshmem
theirs_bin=$out/shmem_bench-oshmem
cc -std=gnu11 -O2 -Wall -I"$repo/crates/shmem/include" -o "$ours_bin" "$src" \
    -L"$lib" -Wl,-rpath,"$lib" -lshmem
oshcc -std=gnu11 -O2 -Wall -o "$theirs_bin" "$src"

args=(--iters "$iters" --warmup "$warmup" --ops "$ops")
[[ -z $sizes ]] || args+=(--sizes "$sizes")
crashes=$out/crashes.txt
: >"$crashes"

run_ninefold() { # pes k
    local f=$out/ninefold-$1-$2
    if ((hosts == 1)); then
        "$nf" run -n "$1" --timeout 1800 "$ours_bin" "${args[@]}" >"$f.txt"
    else
        ip netns exec "${H[0]}" "$nf" run --hosts "${H[0]}:$(($1 - $1 / 2)),${H[1]}:$(($1 / 2))" \
            --remote "ip netns exec {host}" --pmi-bind "${A[0]}:0" --timeout 1800 \
            "$ours_bin" "${args[@]}" >"$f.txt"
    fi
}

# oshrun for PES PEs with OSHMEM's session directory in DIR: sets oshrun.
oshrun_cmd() { # pes dir
    if ((hosts == 1)); then
        oshrun=(oshrun -np "$1")
        return
    fi
    local n0=$(($1 - $1 / 2)) n1=$(($1 / 2)) tls=tcp,self
    ((n0 == 1 && n1 <= 1)) || tls=tcp,sm,self
    # mpirun_across gives the daemons' start in the namespaces and MPI's own wire-up
    # (pml ob1, btl tcp); OSHMEM's one-sided traffic is spml ucx's.
    mpirun_across "$2" oshrun "$n0" "$n1"
    oshrun=("${mpirun_across[@]}" --mca spml ucx -x UCX_TLS="$tls")
}

run_oshmem() { # pes k
    local f=$out/oshmem-$1-$2 rc=0
    oshrun_cmd "$1" "$out/ompi-$1-$2"
    "${oshrun[@]}" --oversubscribe --bind-to none "$theirs_bin" "${args[@]}" \
        >"$f.txt" 2>"$f.err" || rc=$?
    if ((rc != 0)); then
        local signal
        signal=$(grep -m1 -o 'Caught signal [0-9]* ([A-Za-z ]*' "$f.err" || echo "no signal named")
        echo "oshmem $1 PEs run $2: oshrun exit $rc ($signal), $(grep -c . "$f.txt") lines of output; $(grep -q '^# done' "$f.txt" && echo "complete (# done reached)" || echo INCOMPLETE)" \
            | tee -a "$crashes" >&2
    fi
}

IFS=, read -r -a pe_list <<<"$pes"
IFS=, read -r -a op_list <<<"$ops"
summary=$out/summary.txt
: >"$summary"
for p in "${pe_list[@]}"; do
    for ((k = 1; k <= alternations; k++)); do
        turn_order "$k" oshmem ninefold
        for side in "${order[@]}"; do
            load=$(cut -d' ' -f1-3 /proc/loadavg)
            echo "$side $p PEs run $k: load $load" >>"$out/loadavg.txt"
            echo "== $side, $p PEs, run $k/$alternations (load $load)" >&2
            "run_$side" "$p" "$k"
            grep -q '^# done' "$out/$side-$p-$k.txt" ||
                die "$side $p PEs run $k ended before '# done' (see $out/$side-$p-$k.*)"
            for op in "${op_list[@]}"; do
                grep -q "^R $op " "$out/$side-$p-$k.txt" || continue
                "$nf" bench shmem --parse "$out/$side-$p-$k.txt" --ops "$op" --quiet \
                    --transport "$side" --json "$out/$side-$p-$op-run$k.json" >/dev/null
            done
        done
    done
    for op in "${op_list[@]}"; do
        # -run: put's files must not pick up put-signal's and put-bw's.
        ours=("$out"/ninefold-"$p"-"$op"-run*.json)
        theirs=("$out"/oshmem-"$p"-"$op"-run*.json)
        if [[ ! -e ${ours[0]} || ! -e ${theirs[0]} ]]; then
            echo "shmem-$op, $p PEs: not measured on both sides (see the runs' '# skip' lines)" | tee -a "$summary"
            echo | tee -a "$summary"
            continue
        fi
        echo "$p PEs, load before the runs: $(grep " $p PEs " "$out/loadavg.txt" | cut -d: -f2 | paste -sd';')" | tee -a "$summary"
        python3 "$repo/bench/compare_report.py" \
            --ours "${ours[@]}" --theirs "${theirs[@]}" \
            --ours-label libshmem --theirs-label OSHMEM \
            --csv "$out/compare-$p-$op.csv" --json "$out/compare-$p-$op.json" | tee -a "$summary"
        echo | tee -a "$summary"
    done
done
if [[ -s $crashes ]]; then
    { echo "OSHMEM runs that ended abnormally (figures used when '# done' was reached):"; cat "$crashes"; } | tee -a "$summary"
fi
echo "compare-shmem: tables in $summary, everything in $out" >&2
