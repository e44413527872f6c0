#!/usr/bin/env bash
# Job start of nf run --hosts through /xcpu: one session per rank, each from the
# launcher (the way before issue 29), against one session per host down the /xcpu
# tree (nf run --fanout K), measured in the same run, alternating.
#
# usage: bench/compare-run-hosts.sh [--hosts LIST] [--ranks R] [--repeats N]
#                                   [--fanout K] [--out DIR]
#
#   --hosts LIST   host counts, default 4,8,16 (namespace hosts: as many as the largest
#                  are brought up once; each measurement uses the first N)
#   --ranks R      ranks per host, default 2
#   --repeats N    samples per (side, hosts), default 5; the sides alternate
#   --fanout K     the tree's fan-out, default 4 (nf run's default)
#   --out DIR      default bench/out/compare-run-hosts-<UTC timestamp>/
#
# A sample is the wall-clock time of `nf run --hosts A0:R,A1:R,… -- /bin/true` from
# host 0 (start to the exit of the last rank). Every host runs a real nf serve over
# TLS (certificates from nf cert; jobs run as the system account nf-bench, made if
# missing, since a node hands a session on for a user, never for root).
#
# The sides: `per-rank` is OLD_NF's nf run when OLD_NF is set (e.g. a build of the
# main branch from before the tree), else this build's nf run --fanout 0, which runs
# the same per-rank code; `tree` is this build's nf run --fanout K.
#
# nf and nf-netns come from NF_BIN_DIR (default: this checkout's target/debug).
# Outputs in the out directory: samples.csv (side, hosts, repeat, seconds) and
# summary.txt (medians, tree / per-rank ratios, and the load average at start and
# end), also printed. Needs root.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$repo/bench/lib.sh"

hosts=4,8,16
ranks=2
repeats=5
fanout=4
out=""
parse_opts "hosts ranks repeats fanout out" "$@"
check_sizes "$hosts"
check_int --ranks "$ranks"
check_int --repeats "$repeats"
check_int --fanout "$fanout"
out_dir compare-run-hosts
((EUID == 0)) || die "needs root (namespace hosts)"

bin=${NF_BIN_DIR:-$repo/target/debug}
nf=$bin/nf
need_built "$nf" "$bin/nf-netns"
old_nf=${OLD_NF:-}
[[ -z $old_nf || -x $old_nf ]] || die "OLD_NF=$old_nf is not an executable"

IFS=, read -ra counts <<<"$hosts"
max_hosts=0
for n in "${counts[@]}"; do ((n > max_hosts)) && max_hosts=$n; done
port=564
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

netns_hosts "$bin/nf-netns" "$max_hosts"
serve_pids=()
stop_servers() {
    for p in "${serve_pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${serve_pids[@]}"; do wait "$p" 2>/dev/null || true; done
    netns_hosts_release
}
trap stop_servers EXIT

certs=$out/certs
mkdir -p "$certs" "$out/logs"
chmod 755 "$out" "$certs"
"$nf" cert ca --dir "$certs" >/dev/null
id -u nf-bench >/dev/null 2>&1 ||
    useradd --system --no-create-home --shell /usr/sbin/nologin nf-bench
"$nf" cert user nf-bench --dir "$certs" >/dev/null
for ((i = 0; i < max_hosts; i++)); do
    "$nf" cert node "${A[i]}" --dir "$certs" >/dev/null
    mkdir -p "$out/n$i"
    ip netns exec "${H[i]}" "$nf" serve -f --tcp "${A[i]}:$port" \
        --tls-cert "$certs/${A[i]}.pem" --tls-key "$certs/${A[i]}.key" \
        --tls-client-ca "$certs/ca.pem" --unix "$out/n$i/nf.sock" \
        --xcpu-dir "$out/n$i/xcpu" >"$out/logs/nf-serve-$i.txt" 2>&1 &
    serve_pids+=($!)
done
for ((i = 0; i < max_hosts; i++)); do
    tries=0
    until ip netns exec "${H[0]}" bash -c "exec 3<>/dev/tcp/${A[i]}/$port" 2>/dev/null; do
        ((++tries < 200)) || die "nf serve did not listen in host $i; see $out/logs/nf-serve-$i.txt"
        sleep 0.05
    done
done

tls=(--cert "$certs/nf-bench.pem" --key "$certs/nf-bench.key" --ca "$certs/ca.pem")
# side N: the command of side for the first N hosts
side_cmd() {
    local list=() i
    for ((i = 0; i < $2; i++)); do list+=("${A[i]}:$ranks"); done
    local joined
    joined=$(
        IFS=,
        echo "${list[*]}"
    )
    local common=(run --hosts "$joined" --pmi-bind "${A[0]}" "${tls[@]}" --timeout 120)
    case $1 in
        per-rank) if [[ -n $old_nf ]]; then cmd=("$old_nf" "${common[@]}"); else cmd=("$nf" "${common[@]}" --fanout 0); fi ;;
        tree) cmd=("$nf" "${common[@]}" --fanout "$fanout") ;;
    esac
    cmd+=(-- /bin/true)
}

echo "side,hosts,repeat,seconds" >"$out/samples.csv"
for n in "${counts[@]}"; do
    for ((r = 1; r <= repeats; r++)); do
        turn_order "$r" per-rank tree
        for side in "${order[@]}"; do
            side_cmd "$side" "$n"
            t0=$(date +%s.%N)
            if ! ip netns exec "${H[0]}" "${cmd[@]}" >"$out/logs/$side-$n-$r.txt" 2>&1; then
                die "$side on $n hosts failed; see $out/logs/$side-$n-$r.txt"
            fi
            t1=$(date +%s.%N)
            echo "$side,$n,$r,$(echo "$t1 - $t0" | bc -l)" >>"$out/samples.csv"
        done
    done
done
load_end=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$out/samples.csv" "$load_start" "$load_end" "${old_nf:-this build --fanout 0}" "$fanout" "$ranks" >"$out/summary.txt" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
print(f"nf run --hosts job start, /bin/true, {sys.argv[6]} ranks per host; per-rank: {sys.argv[4]}; tree: --fanout {sys.argv[5]}")
print(f"{'hosts':>5} {'per-rank s':>11} {'tree s':>8} {'tree/per-rank':>14}")
for n in sorted({int(r['hosts']) for r in rows}):
    med = {s: statistics.median(float(r['seconds']) for r in rows if r['side'] == s and int(r['hosts']) == n) for s in ('per-rank', 'tree')}
    print(f"{n:>5} {med['per-rank']:>11.3f} {med['tree']:>8.3f} {med['tree'] / med['per-rank']:>14.2f}")
print(f"load average at start: {sys.argv[2]}; at end: {sys.argv[3]}")
EOF
cat "$out/summary.txt"
