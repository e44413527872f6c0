#!/usr/bin/env bash
# Remote → remote copies (nf cp node-a:/f node-b:/f, nf cp -r), directly between two
# nodes and through a gateway in front of both, an old build against a new one, in
# the same run, alternating.
#
# usage: bench/compare-remote-copy.sh --old DIR [--new DIR] [--repeats R]
#                                     [--big-mib M] [--files N] [--out DIR]
#
#   --old DIR       a directory with the old build's nf (required)
#   --new DIR       a directory with the new build's nf and nf-netns, default a cargo
#                   build --release of this checkout
#   --repeats R     rounds, default 3; each round runs every (build, path) pair once,
#                   the builds' order flipping every round
#   --big-mib M     size of the one big file, default 128
#   --files N       small files in the copied tree (4 KiB ... 64 KiB), default 1000
#   --out DIR       default bench/out/compare-remote-copy-<UTC timestamp>/
#
# Four namespace hosts (nf-netns): node a (nf serve over TLS, --trust-gateway gw,
# exporting out/a as /fs) in host 0, node b the same in host 1, the gateway (members a
# and b) in host 2, the client in host 3 with the certificate of the system account
# nf-bench (made if missing), which owns the exports. Each sample copies a's /fs/big (or /fs/tree) to a fresh name on b:
#   direct   tls:A:/fs/... → tls:B:/fs/...
#   gateway  tls:GW:/n/a/fs/... → tls:GW:/n/b/fs/...
# A build whose nf cp -r does not copy between two servers copies the tree down to
# the client's disk and up again (nf cp -r twice), as a user of it would; the time
# is both. Every copy is checked (cmp, diff -r) and timed alone; the load average is
# recorded before and after. Outputs: samples.csv (build, path, what, round,
# seconds) and summary.txt (medians and new / old ratios).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
old="" new="" repeats=3 big_mib=128 files=1000 out=""
parse_opts "old new repeats big-mib files out" "$@"
[[ -n $old ]] || die "--old DIR is required (a directory with the old build's nf)"
check_int --repeats "$repeats"
check_int --big-mib "$big_mib"
check_int --files "$files"
[[ $(id -u) -eq 0 ]] || die "network namespaces need root; run as root"
out_dir compare-remote-copy
if [[ -n $new ]]; then
    release=$(cd "$new" && pwd)
else
    build_release nf-cli nf-testkit
fi
need_built "$release/nf" "$release/nf-netns" "$old/nf"
declare -A bin=([old]=$(cd "$old" && pwd)/nf [new]=$release/nf)

mkdir -p "$out/logs" "$out/certs" "$out/a" "$out/b" "$out/client"
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
echo "load_start $(loadavg)" >"$out/summary.txt"

declare -a daemon_pids=()
cleanup() {
    local p
    set +e
    for p in "${daemon_pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${daemon_pids[@]}"; do
        timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null
    done
    netns_hosts_release
}
netns_hosts "$release/nf-netns" 4
trap cleanup EXIT

nf=${bin[new]}
certs=$out/certs
user=nf-bench
id -u "$user" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$user"
"$nf" cert ca --dir "$certs" >/dev/null
"$nf" cert node "${A[0]}" --dir "$certs" >/dev/null
"$nf" cert node "${A[1]}" --dir "$certs" >/dev/null
"$nf" cert gateway gw --host "${A[2]}" --dir "$certs" >/dev/null
"$nf" cert user "$user" --dir "$certs" >/dev/null
tls=(--cert "$certs/$user.pem" --key "$certs/$user.key" --ca "$certs/ca.pem")
port=5640
chmod 755 "$out"
for i in 0 1; do
    side=$([[ $i == 0 ]] && echo a || echo b)
    chown "$user:" "$out/$side"
    daemon "${H[$i]}" "$out/logs/serve-$side.txt" "$nf" serve -f --no-unix --tcp "${A[$i]}:$port" \
        --tls-cert "$certs/${A[$i]}.pem" --tls-key "$certs/${A[$i]}.key" \
        --tls-client-ca "$certs/ca.pem" --export "$out/$side" \
        --mem-registry "$out/mem-$side" --trust-gateway gw
    wait_listen "${H[$i]}" "$port" || die "nf serve ($side) did not listen; see $out/logs"
done
cat >"$out/gateway.toml" <<EOF
[[member]]
name = "a"
addr = "tls:${A[0]}:$port"

[[member]]
name = "b"
addr = "tls:${A[1]}:$port"
EOF
daemon "${H[2]}" "$out/logs/gateway.txt" "$nf" gateway -f --config "$out/gateway.toml" \
    --tcp "${A[2]}:$port" --tls-cert "$certs/gw.pem" --tls-key "$certs/gw.key" \
    --tls-client-ca "$certs/ca.pem"
wait_listen "${H[2]}" "$port" || die "nf gateway did not listen; see $out/logs/gateway.txt"
declare -A from_at=([direct]="tls:${A[0]}:$port:/fs" [gateway]="tls:${A[2]}:$port:/n/a/fs")
declare -A to_at=([direct]="tls:${A[1]}:$port:/fs" [gateway]="tls:${A[2]}:$port:/n/b/fs")
client=(on "${H[3]}" timeout --kill-after=10 900) # as root, attaching as the certificate's user
for ((t = 0; ; t++)); do
    "${client[@]}" timeout 10 "$nf" ls "${tls[@]}" "${to_at[gateway]}/" >/dev/null 2>&1 && break
    ((t < 100)) || die "the members did not come up behind the gateway; see $out/logs"
    sleep 0.1
done

# The source: one big file and a tree of small ones (sizes and bytes from a fixed seed).
python3 - "$out/a" "$big_mib" "$files" <<'EOF'
import os, random, sys
top, mib, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(29)
with open(os.path.join(top, "big"), "wb") as f:
    block = rng.randbytes(1 << 20)
    for i in range(mib):
        f.write(block[i:] + block[:i])
for i in range(n):
    d = os.path.join(top, "tree", f"d{i % 10}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i}"), "wb") as f:
        f.write(rng.randbytes(rng.randint(4096, 65536)))
EOF
chown -R "$user:" "$out/a" "$out/client"

# One timed copy: BUILD PATH WHAT ROUND → a line of samples.csv.
sample() {
    local build=$1 path=$2 what=$3 round=$4 name t0 t1 nfb=${bin[$1]}
    name="$what-$build-$path-$round"
    t0=$EPOCHREALTIME
    if [[ $what == big ]]; then
        "${client[@]}" "$nfb" cp -q "${tls[@]}" "${from_at[$path]}/big" "${to_at[$path]}/$name"
    elif "$nfb" cp --help | grep -q "between servers"; then
        "${client[@]}" "$nfb" cp -r "${tls[@]}" "${from_at[$path]}/tree" "${to_at[$path]}/$name"
    else
        "${client[@]}" "$nfb" cp -r "${tls[@]}" "${from_at[$path]}/tree" "$out/client/$name"
        "${client[@]}" "$nfb" cp -r "${tls[@]}" "$out/client/$name" "${to_at[$path]}/"
    fi
    t1=$EPOCHREALTIME
    if [[ $what == big ]]; then
        cmp "$out/a/big" "$out/b/$name" || die "$name differs from the source"
    else
        diff -r "$out/a/tree" "$out/b/$name" >/dev/null || die "$name differs from the source"
    fi
    rm -rf "${out:?}/b/$name" "${out:?}/client/$name"
    printf '%s,%s,%s,%s,%s\n' "$build" "$path" "$what" "$round" \
        "$(python3 -c "print(f'{$t1 - $t0:.4f}')")" >>"$out/samples.csv"
}
echo "build,path,what,round,seconds" >"$out/samples.csv"
for ((r = 1; r <= repeats; r++)); do
    order=(old new)
    ((r % 2)) || order=(new old)
    for what in big tree; do
        for path in direct gateway; do
            for build in "${order[@]}"; do
                sample "$build" "$path" "$what" "$r"
            done
        done
    done
    echo "round $r done (load $(loadavg))" >&2
done
echo "load_end $(loadavg)" >>"$out/summary.txt"
python3 - "$out/samples.csv" "$big_mib" "$files" >>"$out/summary.txt" <<'EOF'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = {}
for what in ("big", "tree"):
    for path in ("direct", "gateway"):
        for build in ("old", "new"):
            s = [float(r["seconds"]) for r in rows
                 if (r["what"], r["path"], r["build"]) == (what, path, build)]
            med[what, path, build] = statistics.median(s)
label = {"big": f"nf cp {sys.argv[2]} MiB", "tree": f"nf cp -r {sys.argv[3]} files"}
for what in ("big", "tree"):
    for path in ("direct", "gateway"):
        o, n = med[what, path, "old"], med[what, path, "new"]
        print(f"{label[what]:<22} {path:<8} old {o:.3f} s  new {n:.3f} s  new/old {n / o:.2f}x")
    print(f"{label[what]:<22} gateway/direct: old {med[what, 'gateway', 'old'] / med[what, 'direct', 'old']:.2f}x"
          f"  new {med[what, 'gateway', 'new'] / med[what, 'direct', 'new']:.2f}x")
EOF
cat "$out/summary.txt"
