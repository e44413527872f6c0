#!/usr/bin/env bash
# The ofi transport between two network-namespace hosts, two comparisons in one run,
# alternating the sides (odd rounds A first, even rounds B first):
#
#   rma:    `nf bench rma` with put / get over the ofi transport's native RMA
#           (NF_RMA_OFI=on) against the same through the target's service thread
#           (NF_RMA_OFI=off); ratios native / service.
#   packet: `nf bench pingpong` over ofi (NF_TRANSPORTS=ofi) with the core's ofi
#           packets of NF_OFI_PACKET=--big bytes (above the tcp provider's eager
#           size: rendezvous) against the default (--small, eager); ratios big / small.
#
# usage: bench/compare-ofi.sh [--part rma|packet|all] [--alternations K]
#                             [--rma-sizes LIST] [--ops LIST] [--layouts LIST]
#                             [--pp-sizes LIST] [--small N] [--big N]
#                             [--iters N] [--warmup W] [--out DIR]
#
#   --part P          what to compare, default all
#   --alternations K  rounds per comparison, default 3
#   --rma-sizes LIST  default 8,1048576
#   --ops LIST        default get,put,put-fence
#   --layouts LIST    default contig
#   --pp-sizes LIST   default 8,65536,1048576,4194304
#   --small N         NF_OFI_PACKET of side B, default 15872 (the core's default)
#   --big N           NF_OFI_PACKET of side A, default 65536
#   --iters N         timed operations per size (fewer above 64 KiB), default 1000
#   --warmup W        untimed operations per size, default 100
#   --out DIR         default bench/out/compare-ofi-<UTC timestamp>/
#
# Needs root (namespaces). Tables (best of K per side, bench/compare_report.py) go to
# DIR/summary.txt; every run's JSON and text stay in DIR.
set -euo pipefail

die() {
    echo "compare-ofi: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
part=all
alternations=3
rma_sizes=8,1048576
ops=get,put,put-fence
layouts=contig
pp_sizes=8,65536,1048576,4194304
small=15872
big=65536
iters=1000
warmup=100
out=""

while (($#)); do
    case $1 in
        -h | --help)
            usage
            exit 0
            ;;
        --part | --alternations | --rma-sizes | --ops | --layouts | --pp-sizes | --small | --big | --iters | --warmup | --out)
            (($# >= 2)) || die "$1 needs a value"
            case $1 in
                --part) part=$2 ;;
                --alternations) alternations=$2 ;;
                --rma-sizes) rma_sizes=$2 ;;
                --ops) ops=$2 ;;
                --layouts) layouts=$2 ;;
                --pp-sizes) pp_sizes=$2 ;;
                --small) small=$2 ;;
                --big) big=$2 ;;
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

[[ $part =~ ^(rma|packet|all)$ ]] || die "--part must be rma, packet or all, not '$part'"
for v in alternations iters small big; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--$v must be a positive integer, not '${!v}'"
done
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup must be a non-negative integer, not '$warmup'"
for v in rma_sizes pp_sizes; do
    [[ ${!v} =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--${v/_/-} must be like 8,4096, not '${!v}'"
done
[[ $ops =~ ^(put|put-fence|get|acc)(,(put|put-fence|get|acc))*$ ]] || die "--ops: put, put-fence, get, acc, not '$ops'"
[[ $layouts =~ ^(contig|strided)(,(contig|strided))*$ ]] || die "--layouts: contig, strided, not '$layouts'"
for tool in python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/setup.sh"
done
(($(id -u) == 0)) || die "needs root (ip netns)"

out=${out:-$repo/bench/out/compare-ofi-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "compare-ofi: building nf (release) ..." >&2
(cd "$repo" && cargo build --release -p nf-cli)
nf=${CARGO_TARGET_DIR:-$repo/target}/release/nf
[[ $nf = /* ]] || nf=$repo/$nf
[[ -x $nf ]] || die "no nf binary at $nf after cargo build"

# shellcheck source=bench/lib/netns-pair.sh
source "$repo/bench/lib/netns-pair.sh"
netns_pair nfofi

across() { # env... -- nf-args...: one rank on each namespace host
    local env=()
    while [[ $1 != -- ]]; do
        env+=("$1")
        shift
    done
    shift
    env "${env[@]}" ip netns exec "$ns0" "$nf" run --hosts "$ns0:1,$ns1:1" \
        --remote "ip netns exec {host}" --pmi-bind "$addr0:0" -- "$nf" "$@"
}

summary=$out/summary.txt
: >"$summary"

# compare NAME LABEL_A LABEL_B RUN_A RUN_B: K alternating rounds, then the table.
compare() {
    local name=$1 label_a=$2 label_b=$3 run_a=$4 run_b=$5 k
    local a=() b=()
    for ((k = 1; k <= alternations; k++)); do
        if ((k % 2)); then
            "$run_a" "$out/$name-a-$k"
            "$run_b" "$out/$name-b-$k"
        else
            "$run_b" "$out/$name-b-$k"
            "$run_a" "$out/$name-a-$k"
        fi
        for f in "$out/$name-a-$k.json" "$out/$name-b-$k.json"; do
            [[ -s $f ]] || die "round $k wrote no report $f"
        done
        a+=("$out/$name-a-$k.json")
        b+=("$out/$name-b-$k.json")
    done
    echo "== $name: $label_a / $label_b" | tee -a "$summary"
    python3 "$repo/bench/compare_report.py" --ours "${a[@]}" --theirs "${b[@]}" \
        --ours-label "$label_a" --theirs-label "$label_b" \
        --csv "$out/compare-$name.csv" --json "$out/compare-$name.json" | tee -a "$summary"
    echo | tee -a "$summary"
}

common=(--iters "$iters" --warmup "$warmup")
IFS=, read -r -a op_list <<<"$ops"
IFS=, read -r -a layout_list <<<"$layouts"

if [[ $part = rma || $part = all ]]; then
    for op in "${op_list[@]}"; do
        for layout in "${layout_list[@]}"; do
            rma_run() { # mode file
                echo "== rma $op $layout NF_RMA_OFI=$1" >&2
                across NF_RMA_OFI="$1" -- bench rma --ops "$op" --layouts "$layout" \
                    --sizes "$rma_sizes" "${common[@]}" --label "ninefold-ofi-$1" \
                    --json "$2.json" | tee "$2.txt"
            }
            native() { rma_run on "$1"; }
            service() { rma_run off "$1"; }
            compare "rma-$op-$layout" "native RMA" "service" native service
        done
    done
fi

if [[ $part = packet || $part = all ]]; then
    pp_run() { # packet file
        echo "== pingpong over ofi, NF_OFI_PACKET=$1" >&2
        across NF_TRANSPORTS=ofi NF_OFI_PACKET="$1" -- bench pingpong --sizes "$pp_sizes" \
            "${common[@]}" --json "$2.json" | tee "$2.txt"
    }
    big_packets() { pp_run "$big" "$1"; }
    small_packets() { pp_run "$small" "$1"; }
    compare "pingpong-ofi-packet" "$big B packets" "$small B packets" big_packets small_packets
fi
echo "compare-ofi: tables in $summary, everything in $out" >&2
