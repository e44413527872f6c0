#!/usr/bin/env bash
# Across two hosts: ninefold's network transports against the limits and Open MPI,
# measured in the same run, alternating, with ratios and the targets for small and
# for large messages (bench/compare_net_report.py lists them).
#
# usage: bench/compare-net.sh [--alternations K] [--sizes LIST] [--iters N]
#                             [--warmup W] [--shm-sizes LIST] [--fi-sizes LIST]
#                             [--iperf-seconds S] [--no-ofi] [--lanes LIST]
#                             [--lanes-only] [--out DIR]
#
#   --alternations K   rounds, default 3; each round runs every measurement once, in
#                      the opposite order of the round before
#   --sizes LIST       ping-pong sizes, default 8 B ... 4 MiB (powers of two)
#   --iters N          timed round trips per size, default 10000 (the rule of
#                      bench/c/ppreport.h: fewer above 64 KiB)
#   --warmup W         untimed round trips per size, default 1000
#   --shm-sizes LIST   sizes of the shm-with-network check, default 8,64,4096
#   --fi-sizes LIST    sizes for fi_pingpong (one run each), default 8
#   --iperf-seconds S  length of each iperf3 run, default 5
#   --no-ofi           skip nf-ofi and fi_pingpong (nf-default still runs)
#   --lanes LIST       also measure nf-lanesN for each N in LIST (e.g. 2,4): nf-tcp
#                      with NF_TCP_LANES=N (large messages striped across N tcp
#                      connections per pair, from NF_TCP_STRIPE, default 1 MiB)
#   --lanes-only       measure nf-tcp and the nf-lanesN sides only (no other tools
#                      needed), and report nf-lanesN / nf-tcp
#   --out DIR          default bench/out/compare-net-<UTC timestamp>/
#
# The large-message run (its targets need 8 B, every size from 256 KiB up
# and 4 MiB on the ping-pongs, and 4 MiB on fi_pingpong):
#
#   bench/compare-net.sh --sizes 8,65536,262144,1048576,4194304,16777216 \
#                        --fi-sizes 8,4194304
#
# The two hosts are network namespaces on this machine joined by a bridge (nf-netns,
# from nf-testkit; removed when this script ends, however it ends). Host 0 runs the
# launcher / client side, host 1 the echo / server side. Each round measures:
#   nf-default  nf bench pingpong, 1 rank per host, NF_TRANSPORTS unset: the route
#               ninefold picks by default between two hosts (the report names it)
#   nf-tcp      the same, NF_TRANSPORTS=shm,tcp
#   nf-ofi      the same over ofi (libfabric tcp provider), NF_TRANSPORTS=shm,ofi
#   nf-lanesN   (--lanes) nf-tcp with NF_TCP_LANES=N
#   raw-tcp     bench/net/tcp_pingpong.c: blocking sockets, TCP_NODELAY (the tcp limit)
#   raw-busy    the same with --busy: reads spin on non-blocking recv, as a busy-polling
#               runtime's do (the latency limit; the large-message targets' 8 B one)
#   openmpi-tcp bench/mpi/pingpong.c under mpirun, pml ob1, btl tcp,self; one rank in
#               each namespace, started through tests/netns/mpirun-agent.sh
#               (--mca plm_rsh_agent: mpirun runs in host 0 and starts an orted in
#               each namespace with `ip netns exec`)
#   iperf3      one stream, host 0 -> host 1 (the bandwidth limit)
#   iperf3-p4   iperf3 -P 4: four parallel streams, host 0 -> host 1 (the figure is
#               what host 1 received over all four)
#   fi_pingpong -p tcp -e rdm (the ofi limit; it reports the mean half round trip)
#   shm-mixed   nf bench pingpong between ranks 0 and 1 of a 2-host x 2-rank job
#               (shm between them; tcp and ofi to the other host)
#   shm-only    nf bench pingpong in a plain 2-rank job on host 0
# Ranks that only wait on host 1 of the mixed job use NF_WAIT=yield
# (bench/net/netns-host.sh), since here both "hosts" share the same two cores.
#
# Striping across lanes, alternating with plain tcp:
#
#   bench/compare-net.sh --lanes-only --lanes 2,4 --sizes 1048576,4194304,16777216
#
# Everything lands in the out directory (and loadavg.txt: /proc/loadavg before each
# run, since a loaded machine moves bandwidth more than most changes do): each run's output, compare-*.{txt,csv,json}
# per pair, targets.{txt,json}, and compare.png (ping-pong curves of every side).
# A run that fails (Open MPI's daemon crashing, a server that does not start) is
# listed in failed.txt, naming its side, round and log, and the others go on: the
# report uses every round that succeeded and says which were left out; the script
# then exits 1.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
alternations=3
sizes=$(python3 -c 'print(",".join(str(1 << p) for p in range(3, 23)))' 2>/dev/null || echo 8)
iters=10000
warmup=1000
shm_sizes=8,64,4096
fi_sizes=8
iperf_seconds=5
no_ofi=0
lanes=""
lanes_only=0
out=""
parse_opts "alternations sizes iters warmup shm-sizes fi-sizes iperf-seconds no-ofi! lanes lanes-only! out" "$@"

check_int --alternations "$alternations"
check_int --iters "$iters"
check_count --warmup "$warmup"
check_int --iperf-seconds "$iperf_seconds"
for l in "$sizes" "$shm_sizes" "$fi_sizes"; do
    check_sizes "$l"
done
for n in ${lanes//,/ }; do
    [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 16)) || die "--lanes: $n is not a lane count 1 ..= 16"
done
((lanes_only == 0)) || [[ -n $lanes ]] || die "--lanes-only needs --lanes LIST"
((lanes_only == 0)) || no_ofi=1
[[ $(id -u) -eq 0 ]] || die "network namespaces need root; run as root"

need cc "apt-get install gcc (scripts/setup.sh)"
if ((lanes_only == 0)); then
need mpicc "run scripts/setup.sh (openmpi-bin libopenmpi-dev)"
need mpirun "run scripts/setup.sh (openmpi-bin)"
need iperf3 "run scripts/setup.sh (iperf3)"
fi
need ip "run scripts/setup.sh (iproute2)"
need ss "run scripts/setup.sh (iproute2)"
need python3 "install python3 (needed for the ratio tables)"
need cargo "install Rust (see scripts/setup.sh)"
((no_ofi)) || need fi_pingpong "run scripts/setup.sh (libfabric-bin), or pass --no-ofi"

ompi_as_root
out_dir compare-net
git_arg

echo "compare-net: building nf, nf-netns (release) and the C ping-pongs ..." >&2
build_release nf-cli nf-testkit
nf=$release/nf
need_built "$nf" "$release/nf-netns"
raw_bin=$out/tcp_pingpong
mpi_bin=$out/pingpong-mpi
if ((lanes_only == 0)); then
    build_c cc "$raw_bin" net/tcp_pingpong.c
    build_c mpicc "$mpi_bin" mpi/pingpong.c
fi

# The hosts, removed on any exit of this script.
netns_hosts "$release/nf-netns" 2
echo "compare-net: hosts ${H[0]} (${A[0]}) and ${H[1]} (${A[1]}) on $subnet" >&2

# Long commands run in the background and are waited for: bash defers a trap while a
# foreground command runs, and this way a signal ends the script at once (the EXIT
# trap then removes the hosts, which kills whatever still runs inside them).
run() {
    "$@" &
    wait $!
}

# A measurement that failed: said now, listed in failed.txt (the report names it), its
# partial report removed so no round is half counted; the script goes on.
failed() { # SIDE K WHY LOG [PARTIAL]
    echo "compare-net: $1 failed in round $2 ($3); see $4; going on without it" >&2
    echo "$1 round $2: $3; see $4" >>"$out/failed.txt"
    [[ -z ${5:-} ]] || rm -f "$5"
    return 0
}

common=(--iters "$iters" --warmup "$warmup")
pp=("${common[@]}" --sizes "$sizes")
in0=(ip netns exec "${H[0]}")
in1=(ip netns exec "${H[1]}")
bound=(timeout --kill-after=10 600)
nf_hosts=(--remote "$repo/bench/net/netns-host.sh {host}" --pmi-bind "${A[0]}" --timeout 550)

run_nf() { # NAME TRANSPORTS HOSTS SIZES K [LANES]  (TRANSPORTS "": NF_TRANSPORTS unset)
    echo "== round $5: $1" >&2
    echo "$1-$5 $(cat /proc/loadavg)" >>"$out/loadavg.txt"
    local transports=(env NF_TRANSPORTS="$2")
    [[ -n $2 ]] || transports=(env -u NF_TRANSPORTS)
    [[ -z ${6:-} ]] || transports+=(NF_TCP_LANES="$6")
    NF_BENCH_MAIN_HOST=${H[0]} run "${transports[@]}" "${bound[@]}" "${in0[@]}" "$nf" run --hosts "$3" \
        "${nf_hosts[@]}" -- "$nf" bench pingpong "${common[@]}" --sizes "$4" \
        --json "$out/$1-$5.json" >"$out/$1-$5.txt" 2>&1 ||
        failed "$1" "$5" "nf exited $?" "$out/$1-$5.txt" "$out/$1-$5.json"
}

run_raw() { # NAME K [--busy]
    local name=$1 k=$2
    shift 2
    echo "== round $k: $name" >&2
    "${bound[@]}" "${in1[@]}" "$raw_bin" --listen "${A[1]}:47001" "$@" >"$out/$name-server-$k.txt" 2>&1 &
    local server=$!
    if ! wait_listen 47001; then
        kill "$server" 2>/dev/null || true
        failed "$name" "$k" "its echo side did not start" "$out/$name-server-$k.txt"
        return
    fi
    run "${bound[@]}" "${in0[@]}" "$raw_bin" --connect "${A[1]}:47001" "$@" "${pp[@]}" "${git_arg[@]}" \
        --transport "$name" --json "$out/$name-$k.json" >"$out/$name-$k.txt" 2>&1 || {
        failed "$name" "$k" "the client exited $?" "$out/$name-$k.txt" "$out/$name-$k.json"
        kill "$server" 2>/dev/null || true # it would wait for a client until its bound
    }
    wait "$server" || [[ ! -e $out/$name-$k.json ]] ||
        failed "$name" "$k" "its echo side exited $?" "$out/$name-server-$k.txt" "$out/$name-$k.json"
}

run_mpi() {
    echo "== round $1: openmpi-tcp" >&2
    mpirun_across "$out/ompi-$1"
    run "${bound[@]}" "${mpirun_across[@]}" --bind-to none \
        "$mpi_bin" "${pp[@]}" "${git_arg[@]}" --transport openmpi-ob1-tcp \
        --json "$out/openmpi-tcp-$1.json" >"$out/openmpi-tcp-$1.txt" 2>&1 ||
        failed openmpi-tcp "$1" "mpirun exited $? (a crashed orted says so in the log)" \
            "$out/openmpi-tcp-$1.txt" "$out/openmpi-tcp-$1.json"
}

# Waits (at most 10 s) until something listens on tcp PORT inside host 1.
wait_listen() {
    local tries=0
    until "${in1[@]}" ss -Hltn "sport = :$1" | grep -q .; do
        ((++tries < 100)) || return 1
        sleep 0.1
    done
}

run_iperf() { # NAME PORT STREAMS K
    echo "== round $4: $1" >&2
    "${bound[@]}" "${in1[@]}" iperf3 --server --one-off --bind "${A[1]}" --port "$2" \
        >"$out/$1-server-$4.txt" 2>&1 &
    local server=$!
    if ! wait_listen "$2"; then
        kill "$server" 2>/dev/null || true
        failed "$1" "$4" "its server did not start" "$out/$1-server-$4.txt"
        return
    fi
    run "${bound[@]}" "${in0[@]}" iperf3 --client "${A[1]}" --port "$2" --parallel "$3" \
        --time "$iperf_seconds" --json >"$out/$1-$4.json" 2>&1 ||
        kill "$server" 2>/dev/null || true
    # iperf3 --json may exit 0 after a failure; its report says so. The failed report
    # is kept under another name, for its error.
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit("error" in r)' \
        "$out/$1-$4.json" 2>/dev/null || {
        mv "$out/$1-$4.json" "$out/$1-$4.failed.json"
        failed "$1" "$4" "iperf3 reported an error" "$out/$1-$4.failed.json"
    }
    wait "$server" || true
}

run_fi() {
    local s n
    for s in ${fi_sizes//,/ }; do
        echo "== round $1: fi_pingpong $s B" >&2
        # fi_pingpong's -I is its iteration count; it adds its own warm-up. The count
        # follows the ping-pongs' rule (bench/c/ppreport.h: above 64 KiB, about
        # iters x 64 KiB moved, at least 20 trips), so a 4 MiB run is as long as theirs.
        n=$iters
        ((s <= 65536)) || n=$((iters * 65536 / s))
        ((n >= 20)) || n=20
        ((n <= iters)) || n=$iters
        "${bound[@]}" "${in1[@]}" fi_pingpong -p tcp -e rdm -B 47003 -I "$n" -S "$s" \
            >"$out/fi-server-$s-$1.txt" 2>&1 &
        local server=$!
        if ! wait_listen 47003; then
            kill "$server" 2>/dev/null || true
            failed "fi_pingpong $s B" "$1" "its server did not start" "$out/fi-server-$s-$1.txt"
            continue
        fi
        # A failed run's output is kept under another name, so the report skips it.
        run "${bound[@]}" "${in0[@]}" fi_pingpong -p tcp -e rdm -P 47003 -I "$n" -S "$s" \
            "${A[1]}" >"$out/fi-$s-$1.txt" 2>&1 || {
            mv "$out/fi-$s-$1.txt" "$out/fi-$s-$1.failed.txt"
            failed "fi_pingpong $s B" "$1" "the client failed" "$out/fi-$s-$1.failed.txt"
            kill "$server" 2>/dev/null || true
        }
        wait "$server" || [[ ! -e $out/fi-$s-$1.txt ]] ||
            failed "fi_pingpong $s B" "$1" "its server failed" "$out/fi-server-$s-$1.txt"
    done
}

steps=(nf-default nf-tcp raw-tcp raw-busy openmpi-tcp iperf3 iperf3-p4 shm-mixed shm-only)
((no_ofi)) || steps+=(nf-ofi "fi")
((lanes_only == 0)) || steps=(nf-tcp)
for n in ${lanes//,/ }; do
    steps+=("nf-lanes$n")
done
run_step() { # STEP K
    case $1 in
        nf-lanes*) run_nf "$1" shm,tcp "${H[0]}:1,${H[1]}:1" "$sizes" "$2" "${1#nf-lanes}" ;;
        nf-default) run_nf nf-default "" "${H[0]}:1,${H[1]}:1" "$sizes" "$2" ;;
        nf-tcp) run_nf nf-tcp shm,tcp "${H[0]}:1,${H[1]}:1" "$sizes" "$2" ;;
        nf-ofi) run_nf nf-ofi shm,ofi "${H[0]}:1,${H[1]}:1" "$sizes" "$2" ;;
        shm-mixed) run_nf shm-mixed shm,ofi,tcp "${H[0]}:2,${H[1]}:2" "$shm_sizes" "$2" ;;
        shm-only) run_nf shm-only shm "${H[0]}:2" "$shm_sizes" "$2" ;;
        raw-tcp) run_raw raw-tcp "$2" ;;
        raw-busy) run_raw raw-busy "$2" --busy ;;
        openmpi-tcp) run_mpi "$2" ;;
        iperf3) run_iperf iperf3 47002 1 "$2" ;;
        iperf3-p4) run_iperf iperf3-p4 47004 4 "$2" ;;
        fi) run_fi "$2" ;;
    esac
}

for ((k = 1; k <= alternations; k++)); do
    turn_order "$k" "${steps[@]}"
    for step in "${order[@]}"; do
        run_step "$step" "$k"
    done
done

echo >&2
report=(--dir "$out" --rounds "$alternations" --fi-sizes "$fi_sizes" --lanes "$lanes")
((no_ofi == 0)) || report+=(--no-ofi)
((lanes_only == 0)) || report+=(--lanes-only)
python3 "$repo/bench/compare_net_report.py" "${report[@]}" | tee "$out/targets.txt"

plots=()
for side in nf-default nf-tcp nf-ofi raw-tcp openmpi-tcp ${lanes:+$(printf 'nf-lanes%s ' ${lanes//,/ })}; do
    [[ -s $out/best-$side.json ]] && plots+=("$out/best-$side.json")
done
if ((${#plots[@]})) && "$nf" bench plot --help >/dev/null 2>&1; then
    "$nf" bench plot --out "$out/compare.png" "${plots[@]}" >/dev/null
    echo "compare-net: plot in $out/compare.png" >&2
fi
echo "compare-net: results in $out" >&2
if [[ -s $out/failed.txt ]]; then
    echo "compare-net: $(wc -l <"$out/failed.txt") run(s) failed and were left out:" >&2
    sed 's/^/  /' "$out/failed.txt" >&2
    exit 1
fi
