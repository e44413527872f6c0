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
#                     netns: two network namespaces joined by a veth pair (made and
#                     removed here; needs root), one rank in each: ninefold with put
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

die() {
    echo "compare-rma: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
path=shm
ours_kind=nf
alternations=3
ops=put,put-fence,get,acc
layouts=contig,strided
sizes=""
iters=2000
warmup=200
out=""

while (($#)); do
    case $1 in
        -h | --help)
            usage
            exit 0
            ;;
        --path | --ours | --alternations | --ops | --layouts | --sizes | --iters | --warmup | --out)
            (($# >= 2)) || die "$1 needs a value"
            case $1 in
                --path) path=$2 ;;
                --ours) ours_kind=$2 ;;
                --alternations) alternations=$2 ;;
                --ops) ops=$2 ;;
                --layouts) layouts=$2 ;;
                --sizes) sizes=$2 ;;
                --iters) iters=$2 ;;
                --warmup) warmup=$2 ;;
                --out) out=$2 ;;
            esac
            shift 2
            ;;
        *)
            usage >&2
            die "unknown argument: $1"
            ;;
    esac
done

[[ $path =~ ^(shm|netns)$ ]] || die "--path must be shm or netns, not '$path'"
[[ $ours_kind =~ ^(nf|libarmci)$ ]] || die "--ours must be nf or libarmci, not '$ours_kind'"
[[ $alternations =~ ^[1-9][0-9]*$ ]] || die "--alternations must be a positive integer, not '$alternations'"
[[ $iters =~ ^[1-9][0-9]*$ ]] || die "--iters must be a positive integer, not '$iters'"
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup must be a non-negative integer, not '$warmup'"
[[ -z $sizes || $sizes =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--sizes must be like 8,64,4096, not '$sizes'"
[[ $ops =~ ^(put|put-fence|get|acc)(,(put|put-fence|get|acc))*$ ]] || die "--ops: put, put-fence, get, acc, not '$ops'"
[[ $layouts =~ ^(contig|strided)(,(contig|strided))*$ ]] || die "--layouts: contig, strided, not '$layouts'"

for tool in mpicc mpirun python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/setup.sh"
done
# ARMCI-MPI is linked against Open MPI: use its wrappers even where MPICH is the default.
mpicc=$(command -v mpicc.openmpi || command -v mpicc)
mpirun=$(command -v mpirun.openmpi || command -v mpirun)
[[ -e /usr/include/armci.h ]] || die "ARMCI-MPI is missing: apt-get install libarmci-mpi-dev (scripts/setup.sh)"
if [[ $path = netns ]]; then
    (($(id -u) == 0)) || die "--path netns needs root (ip netns)"
    command -v ip >/dev/null 2>&1 || die "ip not found: apt-get install iproute2"
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

out=${out:-$repo/bench/out/compare-rma-$path-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
git_rev=$(git -C "$repo" describe --always --dirty 2>/dev/null || true)

echo "compare-rma: building the ARMCI benchmark and nf (release) ..." >&2
armci_bin=$out/rma-armci-mpi
report=("-I$repo/bench/c" "$repo/bench/c/ppreport.c")
"$mpicc" -O2 -Wall "${report[@]}" -o "$armci_bin" "$repo/bench/mpi/rma.c" -larmci-openmpi -lm
release=${CARGO_TARGET_DIR:-$repo/target}/release
[[ $release = /* ]] || release=$repo/$release
if [[ $ours_kind = nf ]]; then
    (cd "$repo" && cargo build --release -p nf-cli)
    nf=$release/nf
    [[ -x $nf ]] || die "no nf binary at $nf after cargo build"
else
    (cd "$repo" && cargo build --release -p nf-armci)
    [[ -e $release/libarmci.so ]] || die "no libarmci.so in $release after cargo build"
    ours_bin=$out/rma-libarmci
    "$mpicc" -O2 -Wall -I "$repo/crates/armci/include" "${report[@]}" -o "$ours_bin" "$repo/bench/mpi/rma.c" \
        "$release/libarmci.so" -Wl,-rpath,"$release" -lm
fi

# Two namespaces joined by a veth pair, removed on exit whatever happens.
ns0=nfrma$$-h0
ns1=nfrma$$-h1
subnet=10.253.$(($$ % 250)).0/24
addr0=10.253.$(($$ % 250)).1
addr1=10.253.$(($$ % 250)).2
cleanup() {
    for ns in "$ns0" "$ns1"; do
        if [[ -e /var/run/netns/$ns ]]; then
            for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
            ip netns del "$ns" 2>/dev/null || true
        fi
    done
}
if [[ $path = netns ]]; then
    trap cleanup EXIT
    ip netns add "$ns0"
    ip netns add "$ns1"
    ip link add veth0 netns "$ns0" type veth peer name veth1 netns "$ns1"
    ip -n "$ns0" addr add "$addr0/24" dev veth0
    ip -n "$ns1" addr add "$addr1/24" dev veth1
    for ns in "$ns0" "$ns1"; do
        ip -n "$ns" link set lo up
    done
    ip -n "$ns0" link set veth0 up
    ip -n "$ns1" link set veth1 up
fi

common=(--iters "$iters" --warmup "$warmup")
[[ -z $sizes ]] || common+=(--sizes "$sizes")
armci_extra=()
[[ -z $git_rev ]] || armci_extra=(--git "$git_rev")

run_rma_c() { # binary file-prefix label k op layout: bench/mpi/rma.c under mpirun
    local f=$out/$2-$5-$6-$4
    echo "== run $4/$alternations: $3 $5 $6 ($path)" >&2
    local args=("$1" --op "$5" --layout "$6" "${common[@]}" "${armci_extra[@]}"
        --transport "$3-$path" --json "$f.json")
    case $path in
        shm) "$mpirun" --allow-run-as-root -np 2 --bind-to core "${args[@]}" ;;
        netns) ip netns exec "$ns0" "$mpirun" --allow-run-as-root --oversubscribe \
            --mca plm_rsh_agent "$repo/tests/netns/mpirun-agent.sh" \
            --mca orte_tmpdir_base "$(mktemp -d "$out/ompi.XXXXXX")" \
            --mca oob_tcp_if_include "$subnet" --mca btl_tcp_if_include "$subnet" \
            --mca btl tcp,self --mca osc pt2pt --mca pml ob1 \
            --host "$ns0:1,$ns1:1" -np 2 "${args[@]}" ;;
    esac | tee "$f.txt"
}

run_armci() { # k op layout
    run_rma_c "$armci_bin" armci armci-mpi "$@"
}

run_ninefold() { # k op layout
    if [[ $ours_kind = libarmci ]]; then
        run_rma_c "$ours_bin" ninefold libarmci "$@"
        return
    fi
    local f=$out/ninefold-$2-$3-$1
    echo "== run $1/$alternations: ninefold $2 $3 ($path)" >&2
    local args=("$nf" bench rma --ops "$2" --layouts "$3" "${common[@]}"
        --label "ninefold-$path" --json "$f.json")
    case $path in
        shm) "$nf" run -n 2 --bind-to core -- "${args[@]}" ;;
        netns) ip netns exec "$ns0" "$nf" run --hosts "$ns0:1,$ns1:1" \
            --remote "ip netns exec {host}" --pmi-bind "$addr0:0" -- "${args[@]}" ;;
    esac | tee "$f.txt"
}

ours_label=ninefold
[[ $ours_kind = nf ]] || ours_label=libarmci
summary=$out/summary.txt
: >"$summary"
IFS=, read -r -a op_list <<<"$ops"
IFS=, read -r -a layout_list <<<"$layouts"
for op in "${op_list[@]}"; do
    for layout in "${layout_list[@]}"; do
        ours=()
        theirs=()
        for ((k = 1; k <= alternations; k++)); do
            if ((k % 2)); then
                run_armci "$k" "$op" "$layout"
                run_ninefold "$k" "$op" "$layout"
            else
                run_ninefold "$k" "$op" "$layout"
                run_armci "$k" "$op" "$layout"
            fi
            for f in "$out/ninefold-$op-$layout-$k.json" "$out/armci-$op-$layout-$k.json"; do
                [[ -s $f ]] || die "run $k wrote no report $f"
            done
            ours+=("$out/ninefold-$op-$layout-$k.json")
            theirs+=("$out/armci-$op-$layout-$k.json")
        done
        python3 "$repo/bench/compare_report.py" \
            --ours "${ours[@]}" --theirs "${theirs[@]}" \
            --ours-label "$ours_label" --theirs-label ARMCI-MPI \
            --csv "$out/compare-$op-$layout.csv" --json "$out/compare-$op-$layout.json" \
            --best-ours "$out/best-ninefold-$op-$layout.json" \
            --best-theirs "$out/best-armci-$op-$layout.json" | tee -a "$summary"
        echo | tee -a "$summary"
    done
done
echo "compare-rma: tables in $summary, everything in $out" >&2
