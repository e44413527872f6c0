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
# The two hosts are network namespaces joined by a bridge (nf-netns, from nf-testkit;
# removed when this script ends, however it ends), one rank on each; the rank on host 1
# only waits or serves, with NF_WAIT=yield (bench/net/netns-host.sh), since both
# "hosts" share this machine's cores. Needs root. Tables (best of K per side,
# bench/compare_report.py) go to DIR/summary.txt; every run's JSON and text stay in DIR.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
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
parse_opts "part alternations rma-sizes ops layouts pp-sizes small big iters warmup out" "$@"

[[ $part =~ ^(rma|packet|all)$ ]] || die "--part must be rma, packet or all, not '$part'"
check_int --alternations "$alternations"
check_int --iters "$iters"
check_int --small "$small"
check_int --big "$big"
check_count --warmup "$warmup"
check_sizes "$rma_sizes"
check_sizes "$pp_sizes"
check_words --ops "$ops" put put-fence get acc
check_words --layouts "$layouts" contig strided
need python3 "install python3 (needed for the ratio tables)"
need cargo "install Rust (see scripts/setup.sh)"
need ip "run scripts/setup.sh (iproute2)"
[[ $(id -u) -eq 0 ]] || die "network namespaces need root; run as root"

out_dir compare-ofi

echo "compare-ofi: building nf and nf-netns (release) ..." >&2
build_release nf-cli nf-testkit
nf=$release/nf
need_built "$nf" "$release/nf-netns"

# The hosts, removed on any exit of this script.
netns_hosts "$release/nf-netns" 2

across() { # env... -- nf-args...: one rank on each namespace host
    local env=()
    while [[ $1 != -- ]]; do
        env+=("$1")
        shift
    done
    shift
    env "${env[@]}" NF_BENCH_MAIN_HOST="${H[0]}" ip netns exec "${H[0]}" \
        timeout --kill-after=10 600 "$nf" run --hosts "${H[0]}:1,${H[1]}:1" \
        --remote "$repo/bench/net/netns-host.sh {host}" --pmi-bind "${A[0]}" -- "$nf" "$@"
}

summary=$out/summary.txt
: >"$summary"

# compare NAME LABEL_A LABEL_B RUN_A RUN_B: K alternating rounds, then the table.
compare() {
    local name=$1 label_a=$2 label_b=$3 k side
    local -A runner=([a]=$4 [b]=$5)
    local a=() b=()
    for ((k = 1; k <= alternations; k++)); do
        turn_order "$k" a b
        for side in "${order[@]}"; do
            "${runner[$side]}" "$out/$name-$side-$k"
        done
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
