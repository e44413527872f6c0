#!/usr/bin/env bash
# Does a network transport in the same process slow the shm path? (Target: shm 8 B
# latency within 5% of a shm-only run.) Alternates, in the same run:
#   shm-only  2 ranks on one host, ping-pong 0 <-> 1 over shm;
#   +ofi      3 ranks: 0 and 1 claim host A, rank 2 host B (NF_HOST), so ranks 0 and 1
#             also hold an ofi endpoint (libfabric tcp provider, loopback) and poll it;
#             the same ping-pong 0 <-> 1 over shm; rank 2 naps (NF_WAIT=yield);
#   +tcp      the same with tcp as the network transport.
#
# usage: bench/shm-with-network.sh [--alternations K] [--iters N] [--sizes LIST] [--out DIR]
#   defaults: K=5, N=20000, sizes 8; out bench/out/shm-with-network-<UTC timestamp>/
#
# Prints, per size and setup, the median of the K runs' median half round trips, and
# the median of the K ratios to the shm-only run of the same alternation (a shared
# machine's speed drifts between alternations; within one it is about the same).
# Every run's JSON stays in the out directory. Builds nf (release); needs python3.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
alternations=5
iters=20000
sizes=8
out=""
parse_opts "alternations iters sizes out" "$@"
check_int --alternations "$alternations"
check_int --iters "$iters"
check_sizes "$sizes"
need python3 "install python3 (needed for the summary)"
need cargo "install Rust (see scripts/setup.sh)"

out_dir shm-with-network
build_release nf-cli
nf=$release/nf
need_built "$nf"

# One ping-pong job: SETUP (shm-only, ofi, tcp), K (the alternation).
run() {
    local setup=$1 k=$2 json=$out/$1-$2.json
    local pp=("$nf" bench pingpong --sizes "$sizes" --iters "$iters" --json "$json")
    if [[ $setup == shm-only ]]; then
        NF_TRANSPORTS=shm "$nf" run -n 2 -- "${pp[@]}" >"$out/$setup-$k.txt" 2>&1
    else
        # shellcheck disable=SC2016 # expanded by the rank's shell
        NF_TRANSPORTS=shm,$setup NF_TCP_BIND=127.0.0.1 "$nf" run -n 3 -- sh -c '
            if [ "$NF_RANK" = 2 ]; then export NF_HOST=b NF_WAIT=yield; else export NF_HOST=a; fi
            exec "$@"' sh "${pp[@]}" >"$out/$setup-$k.txt" 2>&1
    fi
}

for ((k = 1; k <= alternations; k++)); do
    # Rotate the order so that no setup always runs first.
    case $((k % 3)) in
        1) order=(shm-only ofi tcp) ;;
        2) order=(ofi tcp shm-only) ;;
        0) order=(tcp shm-only ofi) ;;
    esac
    for setup in "${order[@]}"; do
        run "$setup" "$k" || die "the $setup run $k failed; see $out/$setup-$k.txt"
    done
done

python3 - "$out" "$alternations" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, k = sys.argv[1], int(sys.argv[2])
setups = ["shm-only", "ofi", "tcp"]
runs = {s: [json.load(open(f"{out}/{s}-{i}.json")) for i in range(1, k + 1)] for s in setups}
sizes = [r["size"] for r in runs["shm-only"][0]["results"]]
print(f"median of {k} runs' median half round trip (us); median of the per-alternation")
print("ratios to shm-only")
print(f"{'size':>8} {'shm-only':>10} {'+ofi':>10} {'ratio':>7} {'+tcp':>10} {'ratio':>7}")
for i, size in enumerate(sizes):
    lat = {s: [r["results"][i]["median_us"] for r in runs[s]] for s in setups}
    med = {s: statistics.median(v) for s, v in lat.items()}
    ratio = {
        s: statistics.median(a / b for a, b in zip(lat[s], lat["shm-only"]))
        for s in ("ofi", "tcp")
    }
    print(f"{size:>8} {med['shm-only']:>10.4f} {med['ofi']:>10.4f} {ratio['ofi']:>7.3f}"
          f" {med['tcp']:>10.4f} {ratio['tcp']:>7.3f}")
polls = {s: statistics.median(r["poll_empty_ns"] for r in runs[s]) for s in setups}
print("empty poll (ns, median): " + ", ".join(f"{s} {v:.1f}" for s, v in polls.items()))
PY
