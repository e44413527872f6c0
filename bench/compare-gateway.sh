#!/usr/bin/env bash
# The gateway's cost: nf gateway in front of a node against the node reached directly,
# and against scp through an OpenSSH jump host, in the same run, alternating.
#
# usage: bench/compare-gateway.sh [--parts LIST] [--repeats R] [--quick]
#                                 [--msizes LIST] [--files N] [--big-mib M]
#                                 [--clients LIST] [--seconds S] [--timeout S]
#                                 [--out DIR]
#
#   --parts LIST    any of 9p,copy,load,hops (default all four)
#   --repeats R     samples per side of every copy, default 3; nf bench 9p and the load
#                   test run 2R rounds (the order of the sides flips every round)
#   --quick         a short run: --repeats 1, --msizes 65536, --files 100,
#                   --big-mib 32, --seconds 2, --clients 1,4,16,64 (given options win)
#   --msizes LIST   nf bench 9p msizes, default 8192,65536,1048576
#   --files N       small files in the copied directory, default 1000
#   --big-mib M     size of the one big copied file, default 256
#   --clients LIST  load test client counts, default 1,4,16,64
#   --seconds S     load test duration per side, count and round, default 5
#   --timeout S     limit of every step (a copy, a bench run), default 900 s
#   --out DIR       default bench/out/compare-gateway-<UTC timestamp>/
#
# Three namespace hosts (nf-netns, as the other scripts): the node (nf serve over TLS,
# --trust-gateway gw, exporting out/node/export as /fs) in host 0, the gateway (nf
# gateway over TLS, the node as member "node": /n/node/fs) in host 1, every client in
# host 2. Certificates come from nf cert (a CA, the node's, the gateway's "gw", and a
# user's, nf-bench: the node never lets a gateway attach for root, so the clients are
# the system account nf-bench, made if missing, which owns the destinations).
#   9p    nf bench 9p --ours-addr (the gateway) --theirs-addr (the node), alternating in
#         rounds per msize: walk / open / read 1 B / clunk cycles per second, streaming
#         read and write MB/s; ratios gateway / direct (the median of same-round
#         ratios). Targets: small >= 0.8x, read and write >= 0.9x at every msize.
#   copy  a directory of --files small files (4 KiB ... 64 KiB, sizes and bytes from a
#         fixed seed) and one --big-mib file, copied from host 2 into the node's export,
#         each timed alone, by:
#           nf-gateway  nf cp -r to tls:GATEWAY:/n/node/fs/... (a build without cp -r:
#                       nf mkdir, then one nf cp per file, as a user would script it)
#           nf-direct   the same to tls:NODE:/fs/...
#           scp-jump    scp -r -J root@GATEWAY root@NODE:... (OpenSSH ProxyJump: an sshd
#                       in host 1 and one in host 0, on their addresses only)
#           scp-direct  scp -r root@NODE:... (reference)
#         then checked against the source (diff -r, cmp). Targets: nf-gateway <= 1.1x
#         nf-direct, and nf-gateway <= 0.5x scp-jump (medians, each item).
#   load  nf bench 9p --clients: N clients at once (each its own TLS connection) read a
#         64 KiB file whole (walk, open, read, clunk) for --seconds; requests/s and p99
#         latency per N, gateway against direct.
#   hops  where one request's cost goes: one client reads the 64 KiB file whole over
#         and over for --seconds, directly and through the gateway, with perf stat
#         counting every process on the path (client, gateway, node): CPU time,
#         context switches (wake-ups), system calls, and the bytes on its host's
#         interfaces (each process has a host of its own); per request, per process, and the gateway
#         path / direct path ratios (bench/gateway_hops.py; hops/hops.json). Needs perf
#         (linux-perf, installed if missing). NF_HOPS_PROFILE=1 also samples the servers
#         (perf record) and writes hops/SIDE-PROCESS-profile.txt, their hottest symbols.
# NF_GATEWAY_ARGS (words) are added to nf gateway's command line, e.g.
# "--member-connections 1" to compare with the gateway's connections to the node.
# The load average is recorded before and after (and around each part, with the CPU
# seconds the node and the gateway spent in it). Everything started (servers, sshd,
# the namespaces) is stopped when the script ends, however it ends. Needs root;
# installs openssh-server / openssh-client and python3-matplotlib if missing, saying so
# first (NF_BENCH_NO_INSTALL=1: nothing installed; bench/lib.sh apt_install).
#
# nf comes from NF_BIN_DIR (a directory with nf and nf-netns) when set, else from a
# cargo build --release of this checkout.
#
# Outputs in the out directory: summary.txt and gateway.json (bench/gateway_report.py:
# every number, the ratios, the targets met / missed, notes, load), gateway.csv (the
# ratios and targets), copy.csv (every copy sample), 9p/ (nf bench 9p: compare.txt,
# .json, .csv, -read.png, -write.png), load/ (load.txt, .json, .csv), and the plots
# 9p-ratios.png, copy.png, load.png; logs/ and the daemons' logs.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
parts=9p,copy,load,hops
repeats="" msizes="" files="" big_mib="" clients="" seconds="" quick=0
timeout=900
out=""
parse_opts "parts repeats quick! msizes files big-mib clients seconds timeout out" "$@"

if ((quick)); then
    : "${repeats:=1}" "${msizes:=65536}" "${files:=100}" "${big_mib:=32}" "${seconds:=2}"
fi
: "${repeats:=3}" "${msizes:=8192,65536,1048576}" "${files:=1000}" "${big_mib:=256}"
: "${clients:=1,4,16,64}" "${seconds:=5}"
check_words --parts "$parts" 9p copy load hops
check_int --repeats "$repeats"
check_sizes "$msizes"
check_int --files "$files"
check_int --big-mib "$big_mib"
check_sizes "$clients"
check_int --seconds "$seconds"
check_int --timeout "$timeout"
[[ $(id -u) -eq 0 ]] || die "network namespaces and sshd need root; run as root"
has_part() { [[ ,$parts, == *,$1,* ]]; }

pkgs=()
want() { command -v "$1" >/dev/null 2>&1 || pkgs+=("$2"); }
want ip iproute2
want nsenter util-linux
want ss iproute2
has_part hops && want perf linux-perf
if has_part copy; then
    want ssh-keygen openssh-client
    want scp openssh-client
    want /usr/sbin/sshd openssh-server
fi
plot_py=""
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import matplotlib' 2>/dev/null; then
        plot_py=$p
        break
    fi
done
[[ -n $plot_py ]] || pkgs+=(python3-matplotlib)
if ((${#pkgs[@]})); then
    apt_install "${pkgs[@]}" || true
    [[ -n $plot_py ]] || ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null || plot_py=/usr/bin/python3
fi
report_py=${plot_py:-python3}

out_dir compare-gateway
if [[ -n ${NF_BIN_DIR:-} ]]; then
    release=$(cd "$NF_BIN_DIR" && pwd)
else
    echo "compare-gateway: building nf, nf-netns (release) ..." >&2
    build_release nf-cli nf-testkit
fi
nf=$release/nf
need_built "$nf" "$release/nf-netns"
"$nf" bench 9p --help | grep -q -- --ours-addr ||
    die "$nf bench 9p has no --ours-addr (build this checkout, or point NF_BIN_DIR at such a build)"

mkdir -p "$out/logs" "$out/certs" "$out/node/export" "$out/9p" "$out/load" "$out/src"
notes=$out/notes.txt # one "key<TAB>value" line per fact; gateway_report.py reads it
: >"$notes"
note() { printf '%s\t%s\n' "$1" "$2" >>"$notes"; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# CPU seconds (user + system) PID has used so far.
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
# part_start PART / part_end PART: the load average around a part, and the CPU time
# the node and the gateway spent in it.
part_start() {
    note "load_$1_start" "$(loadavg)"
    cpu0_node=$(cpu_s "$node_pid") cpu0_gw=$(cpu_s "$gw_pid")
}
part_end() {
    local node gw
    node=$(awk -v a="$(cpu_s "$node_pid")" -v b="$cpu0_node" 'BEGIN { printf "%.2f", a - b }')
    gw=$(awk -v a="$(cpu_s "$gw_pid")" -v b="$cpu0_gw" 'BEGIN { printf "%.2f", a - b }')
    note "load_$1_end" "$(loadavg)"
    note "cpu_$1" "node $node s, gateway $gw s"
}
note load_start "$(loadavg)" # and load_PART_start / _end around each part (part_start)
note cores "$(nproc)"
note git "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo none)"
note nf "$nf"
note parts "$parts"
note repeats "$repeats"

# ---------------------------------------------------------------------------------
# Hosts, and the cleanup of everything started.
declare -a daemon_pids=()
made_run_sshd=0
cleanup() {
    local p
    set +e
    for p in "${daemon_pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in "${daemon_pids[@]}"; do
        timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null
    done
    ((made_run_sshd)) && rmdir /run/sshd 2>/dev/null
    netns_hosts_release
}
netns_hosts "$release/nf-netns" 3
trap cleanup EXIT
node_h=${H[0]} gw_h=${H[1]} client_h=${H[2]}
node_a=${A[0]} gw_a=${A[1]}
in_client=(nsenter --net="/var/run/netns/$client_h") # "${in_client[@]}" CMD: CMD in host 2
echo "compare-gateway: node $node_a ($node_h), gateway $gw_a ($gw_h), clients in ${H[2]} (${A[2]}), $subnet" >&2
note hosts "node ${A[0]}, gateway ${A[1]}, client ${A[2]} (network namespaces, $subnet)"

bound=(timeout --kill-after=10 "$timeout")
# Long commands run in the background and are waited for, so a signal ends the script
# at once (bash defers a trap while a foreground command runs).
run() {
    "$@" &
    wait $!
}
now() { echo "$EPOCHREALTIME"; }
since() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.4f}")' "$1" "$2"; }

# ---------------------------------------------------------------------------------
# Certificates, the node and the gateway.
certs=$out/certs
user="nf-bench"
id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
"$nf" cert ca --dir "$certs" >/dev/null
"$nf" cert node "$node_a" --dir "$certs" >/dev/null
"$nf" cert gateway gw --host "$gw_a" --dir "$certs" >/dev/null
"$nf" cert user "$user" --dir "$certs" >/dev/null
tls=(--cert "$certs/$user.pem" --key "$certs/$user.key" --ca "$certs/ca.pem")
port=5640
export_dir=$out/node/export
chown "$user:" "$export_dir"
chmod 755 "$out" "$out/node"

daemon "$node_h" "$out/logs/nf-serve.txt" "$nf" serve -f --no-unix --tcp "$node_a:$port" \
    --tls-cert "$certs/$node_a.pem" --tls-key "$certs/$node_a.key" \
    --tls-client-ca "$certs/ca.pem" --export "$export_dir" \
    --mem-registry "$out/node/mem" --trust-gateway gw
node_pid=${daemon_pids[-1]}
wait_listen "$node_h" "$port" || die "nf serve did not listen; see $out/logs/nf-serve.txt"
cat >"$out/gateway.toml" <<EOF
[[member]]
name = "node"
addr = "tls:$node_a:$port"
EOF
# shellcheck disable=SC2086 # NF_GATEWAY_ARGS is a list of words
daemon "$gw_h" "$out/logs/nf-gateway.txt" "$nf" gateway -f --config "$out/gateway.toml" \
    --tcp "$gw_a:$port" --tls-cert "$certs/gw.pem" --tls-key "$certs/gw.key" \
    --tls-client-ca "$certs/ca.pem" ${NF_GATEWAY_ARGS:-}
gw_pid=${daemon_pids[-1]}
wait_listen "$gw_h" "$port" || die "nf gateway did not listen; see $out/logs/nf-gateway.txt"
gw_fs=tls:$gw_a:$port:/n/node/fs
node_fs=tls:$node_a:$port:/fs
# The member is up once the gateway has connected and probed it.
for ((t = 0; ; t++)); do
    on "$client_h" timeout 10 "$nf" ls "${tls[@]}" "$gw_fs/" >/dev/null 2>"$out/logs/gateway-probe.txt" && break
    ((t < 100)) || die "the node did not come up behind the gateway; see $out/logs/gateway-probe.txt, $out/logs/nf-gateway.txt"
    sleep 0.1
done
on "$client_h" timeout 10 "$nf" ls "${tls[@]}" "$node_fs/" >/dev/null ||
    die "the node does not answer directly; see $out/logs/nf-serve.txt"
note setup "nf serve (TLS, --trust-gateway gw) in host 0; nf gateway (TLS, member node) in host 1; clients as $user (nf cert user) in host 2"

# ---------------------------------------------------------------------------------
# 9p: nf bench 9p, gateway against direct.
rounds=$((2 * repeats))
bench_sides=(--dir "$export_dir" --names "gateway,direct" "${tls[@]}"
    --ours-addr "tls:$gw_a:$port" --ours-aname /n/node/fs
    --theirs-addr "tls:$node_a:$port" --theirs-aname /fs)
if has_part 9p; then
    part_start 9p
    echo "compare-gateway: 9p, msizes $msizes, $rounds rounds ..." >&2
    small_iters=1000 stream_mib=16
    ((quick)) && small_iters=300 stream_mib=4
    run "${bound[@]}" "${in_client[@]}" "$nf" bench 9p "${bench_sides[@]}" \
        --msizes "$msizes" --alternations "$rounds" --small-iters "$small_iters" \
        --stream-mib "$stream_mib" --json "$out/9p/compare.json" --csv "$out/9p/compare.csv" \
        --plot "$out/9p/compare" >"$out/9p/compare.txt" 2>"$out/logs/bench-9p.txt" ||
        note failed_9p "nf bench 9p failed; see logs/bench-9p.txt: $(tail -1 "$out/logs/bench-9p.txt")"
    cat "$out/9p/compare.txt" >&2
    part_end 9p
    note bench_9p "msizes $msizes, $rounds rounds, $small_iters small cycles, $stream_mib MiB streams per round"
fi

# ---------------------------------------------------------------------------------
# copy: nf cp through the gateway, directly, and scp -J.
csv=$out/copy.csv
echo "side,item,repeat,seconds,ok" >"$csv"
if has_part copy; then
    part_start copy
    src=$out/src
    echo "compare-gateway: making $files small files and a $big_mib MiB file ..." >&2
    python3 - "$src" "$files" "$big_mib" <<'EOF'
import os, random, sys
src, files, big_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(20261126)
os.makedirs(os.path.join(src, "small"), exist_ok=True)
total = 0
for i in range(files):
    size = rng.randint(4 << 10, 64 << 10)
    with open(os.path.join(src, "small", f"f{i:04d}.bin"), "wb") as f:
        f.write(rng.randbytes(size))
    total += size
with open(os.path.join(src, "big.bin"), "wb") as f:
    for _ in range(big_mib):
        f.write(rng.randbytes(1 << 20))
print(f"small: {files} files, {total} B; big.bin: {big_mib << 20} B")
EOF
    note copy_data "$(du -sb "$src/small" | cut -f1) B in $files files (4-64 KiB, random.Random(20261126)); big.bin $((big_mib << 20)) B"

    # sshd on the node and the gateway, with this run's keys.
    ssh_dir=$out/ssh
    mkdir -p "$ssh_dir"
    ssh-keygen -q -t ed25519 -N "" -C nfgw-host -f "$ssh_dir/host_key"
    ssh-keygen -q -t ed25519 -N "" -C nfgw-user -f "$ssh_dir/id"
    cp "$ssh_dir/id.pub" "$ssh_dir/authorized_keys"
    cat >"$ssh_dir/sshd_config" <<EOF
HostKey $ssh_dir/host_key
AuthorizedKeysFile $ssh_dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
AllowTcpForwarding yes
Subsystem sftp internal-sftp
LogLevel ERROR
EOF
    ssh_client_config "$ssh_dir"
    if [[ ! -d /run/sshd ]]; then
        mkdir -p /run/sshd # sshd's privilege-separation directory
        made_run_sshd=1
    fi
    for h in 0 1; do
        daemon "${H[h]}" "$ssh_dir/sshd-$h.log" /usr/sbin/sshd -D -e -f "$ssh_dir/sshd_config" \
            -o "ListenAddress=${A[h]}:22" -o "PidFile=$ssh_dir/sshd-$h.pid"
    done
    for h in 0 1; do
        wait_listen "${H[h]}" 22 || die "sshd did not start in host $h; see $ssh_dir/sshd-$h.log"
    done
    ssh_cfg=(-F "$ssh_dir/config")
    on "$client_h" timeout 60 ssh "${ssh_cfg[@]}" -J "root@$gw_a" "root@$node_a" true ||
        die "ssh -J from the client through the gateway host to the node failed"
    note ssh "$(ssh -V 2>&1 | head -1); scp in its default (SFTP) mode"

    dst=$export_dir/dst
    fresh_dst() {
        rm -rf "$dst"
        mkdir -p "$dst"
        chown "$user:" "$dst"
    }
    # A copy runs in its own bash in the client host (bounded as a whole): the
    # functions and variables it uses go along.
    # DIR into REMOTE/NAME: nf cp -r, else one nf per file (as scripted by hand).
    nf_tree() { # DIR REMOTE
        local name f
        name=$(basename "$1")
        if "$nf" cp --help | grep -q -- --recursive; then
            "$nf" cp -r "${tls[@]}" "$1" "$2/" || return 1
            return 0
        fi
        "$nf" mkdir "${tls[@]}" "$2/$name" || return 1
        for f in "$1"/*; do
            "$nf" cp "${tls[@]}" "$f" "$2/$name/" || return 1
        done
    }
    copy_item() { # SIDE ITEM: copy ITEM (small | big) the SIDE's way
        local what=$src/small to
        [[ $2 == big ]] && what=$src/big.bin
        case $1 in
            nf-gateway | nf-direct)
                to=$gw_fs/dst
                [[ $1 == nf-direct ]] && to=$node_fs/dst
                if [[ $2 == small ]]; then
                    nf_tree "$what" "$to"
                else
                    "$nf" cp "${tls[@]}" "$what" "$to/"
                fi
                ;;
            scp-jump) scp "${ssh_cfg[@]}" -q -r -J "root@$gw_a" "$what" "root@$node_a:$dst/" ;;
            scp-direct) scp "${ssh_cfg[@]}" -q -r "$what" "root@$node_a:$dst/" ;;
        esac
    }
    copy_env=$(declare -p tls ssh_cfg src dst nf gw_a node_a gw_fs node_fs && declare -f nf_tree copy_item)
    sides=(nf-gateway nf-direct scp-jump scp-direct)
    echo "compare-gateway: copies, $repeats samples per side: ${sides[*]} ..." >&2
    k=0
    for ((r = 1; r <= repeats; r++)); do
        for item in small big; do
            k=$((k + 1))
            turn_order "$k" "${sides[@]}"
            for side in "${order[@]}"; do
                fresh_dst
                sync
                log=$out/logs/copy-$side-$item-$r.txt
                rc=0
                t0=$(now)
                run "${bound[@]}" "${in_client[@]}" bash -c "$copy_env"$'\n'"copy_item $side $item" >"$log" 2>&1 || rc=$?
                t1=$(now)
                if ((rc == 0)); then
                    if [[ $item == small ]]; then
                        diff -r "$src/small" "$dst/small" >>"$log" 2>&1 || rc=$?
                    else
                        cmp "$src/big.bin" "$dst/big.bin" >>"$log" 2>&1 || rc=$?
                    fi
                    ((rc == 0)) || echo "the copy differs from the source" >>"$log"
                fi
                secs=$(since "$t0" "$t1")
                echo "$side,$item,$r,$secs,$((rc == 0))" >>"$csv"
                printf 'compare-gateway: %-10s %-5s #%d  %8s s%s\n' "$side" "$item" "$r" "$secs" \
                    "$( ((rc == 0)) || echo "  FAILED (see $log)")" >&2
            done
        done
    done
    rm -rf "$dst" "$src" # the data is made again from the seed; results stay
    part_end copy
fi

# ---------------------------------------------------------------------------------
# load: many clients through the gateway against as many directly.
if has_part load; then
    part_start load
    echo "compare-gateway: load, clients $clients, $seconds s, $rounds rounds ..." >&2
    run "${bound[@]}" "${in_client[@]}" "$nf" bench 9p "${bench_sides[@]}" \
        --clients "$clients" --seconds "$seconds" --alternations "$rounds" \
        --json "$out/load/load.json" --csv "$out/load/load.csv" \
        >"$out/load/load.txt" 2>"$out/logs/bench-load.txt" ||
        note failed_load "nf bench 9p --clients failed; see logs/bench-load.txt: $(tail -1 "$out/logs/bench-load.txt")"
    cat "$out/load/load.txt" >&2
    part_end load
fi

# ---------------------------------------------------------------------------------
# hops: one request's cost per process on each path.
# wire_of HOST: bytes received + sent on HOST's interfaces but loopback (every byte a
# process of that host put on or took off the wire: its hops' bytes).
wire_of() {
    ip -n "$1" -s -j link show | python3 -c 'import json, sys
print(sum(l["stats64"]["rx"]["bytes"] + l["stats64"]["tx"]["bytes"]
          for l in json.load(sys.stdin) if l["ifname"] != "lo"))'
}
if has_part hops; then
    part_start hops
    mkdir -p "$out/hops"
    events=task-clock,context-switches,raw_syscalls:sys_enter
    for side in direct gateway; do
        echo "compare-gateway: hops, $side, $seconds s ..." >&2
        if [[ $side == direct ]]; then
            servers=("node:$node_pid") addr=tls:$node_a:$port aname=/fs
        else
            servers=("gateway:$gw_pid" "node:$node_pid") addr=tls:$gw_a:$port aname=/n/node/fs
        fi
        declare -A host_of=([client]=$client_h [gateway]=$gw_h [node]=$node_h)
        for p in client "${servers[@]%%:*}"; do
            wire_of "${host_of[$p]}" >"$out/hops/$side-$p.wire"
        done
        perf_pids=()
        for s in "${servers[@]}"; do
            perf stat -x, -e "$events" -p "${s#*:}" -o "$out/hops/$side-${s%%:*}.perf" &
            perf_pids+=($!)
        done
        if [[ -n ${NF_HOPS_PROFILE:-} ]]; then
            # System-wide, then split by process: `-p` misses threads made after it
            # attached (a server's connection threads).
            perf record -q -a --call-graph dwarf,16384 -F 499 -o "$out/hops/$side.data" &
            perf_pids+=($!)
        fi
        run "${bound[@]}" "${in_client[@]}" perf stat -x, -e "$events" \
            -o "$out/hops/$side-client.perf" -- "$nf" bench 9p --no-diod --dir "$export_dir" \
            --names "$side,none" "${tls[@]}" --ours-addr "$addr" --ours-aname "$aname" \
            --clients 1 --seconds "$seconds" --alternations 1 \
            --json "$out/hops/$side.json" >"$out/hops/$side.txt" 2>"$out/logs/bench-hops-$side.txt" ||
            note failed_hops "nf bench 9p --clients 1 ($side) failed; see logs/bench-hops-$side.txt"
        kill -INT "${perf_pids[@]}" 2>/dev/null || true
        wait "${perf_pids[@]}" 2>/dev/null || true
        for p in client "${servers[@]%%:*}"; do
            wire_of "${host_of[$p]}" >>"$out/hops/$side-$p.wire"
        done
        for s in "${servers[@]}"; do
            [[ -f $out/hops/$side.data ]] || continue
            perf report -q -i "$out/hops/$side.data" --pid "${s#*:}" --stdio --no-children \
                -g none --sort comm,dso,symbol 2>/dev/null |
                head -40 >"$out/hops/$side-${s%%:*}-profile.txt" || true
        done
    done
    python3 "$repo/bench/gateway_hops.py" --dir "$out" | tee "$out/hops/hops.txt" >&2 ||
        note failed_hops "bench/gateway_hops.py failed"
    part_end hops
fi

note load_end "$(loadavg)"
rm -rf "${export_dir:?}"/* # what nf bench 9p put there for the servers
"$report_py" "$repo/bench/gateway_report.py" --dir "$out" | tee "$out/summary.txt"
echo "compare-gateway: results in $out" >&2
