#!/usr/bin/env bash
# Instructions per 8 B round trip of `nf bench pingpong`, counted by callgrind on
# both ranks: a noise-free measure of the small-message path for a loaded machine.
#
# usage: bench/callgrind-pingpong.sh [--iters N] [--out DIR]
#
#   --iters N   timed round trips, default 20000 (plus 100 warm-up)
#   --out DIR   default bench/out/callgrind-<UTC timestamp>/
#
# Prints, per rank, the instructions of one round trip (bench/callgrind_report.py
# says what is counted), one empty `World::poll`, and the sum over both ranks.
set -euo pipefail

die() {
    echo "callgrind-pingpong: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
iters=20000
warmup=100
out=""
while (($#)); do
    case $1 in
        --iters | --out)
            (($# >= 2)) || die "$1 needs a value"
            [[ $1 == --iters ]] && iters=$2 || out=$2
            shift 2
            ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
            exit 0
            ;;
        *) die "unknown argument: $1" ;;
    esac
done
[[ $iters =~ ^[1-9][0-9]*$ ]] || die "--iters must be a positive integer, not '$iters'"
for tool in valgrind python3 cargo; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run scripts/setup.sh"
done

out=${out:-$repo/bench/out/callgrind-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
(cd "$repo" && cargo build --release -p nf-cli)
nf=${CARGO_TARGET_DIR:-$repo/target}/release/nf
[[ $nf = /* ]] || nf=$repo/$nf

# One rank under valgrind, its peer native (callgrind_report.py says why); only the
# ping-pong loop and the empty-poll phase are counted.
for r in 0 1; do
    NF_PROFILED_RANK=$r "$nf" run -n 2 --timeout 600 -- bash -c '
        if [[ $NF_RANK == "$NF_PROFILED_RANK" ]]; then
            exec valgrind --tool=callgrind --callgrind-out-file="$0" \
                --toggle-collect="nf_bench::pingpong::PingPong::measure" \
                --toggle-collect="nf_bench::pingpong::empty_poll_ns" "$@"
        fi
        exec "$@"' "$out/callgrind.$r" "$nf" bench pingpong --sizes 8 --iters "$iters" --warmup "$warmup" \
        >"$out/pingpong.$r.txt" 2>"$out/valgrind.$r.log" ||
        die "the ping-pong with rank $r under valgrind failed; see $out/valgrind.$r.log"
done
python3 "$repo/bench/callgrind_report.py" --round-trips $((iters + warmup)) \
    --json "$out/callgrind.json" "$out/callgrind.0" "$out/callgrind.1" | tee "$out/callgrind.txt"
echo "callgrind-pingpong: profiles in $out" >&2
