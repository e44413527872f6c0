#!/usr/bin/env bash
# A --server for run.sh that puts an `nf gateway` in front of one node:
#   gateway-server.sh NF SOCK DIR
# starts `NF serve -f --export DIR` on a unix socket in a private temp dir, waits until
# that socket exists, writes a gateway config with the one member `node1` there, and
# runs `NF gateway -f` listening on SOCK. The export is then at /n/node1/fs, the node's
# log at /n/node1/log, and the gateway's own /xcpu/clone places sessions on node1:
#   run.sh --server 'tests/kernel9p/gateway-server.sh NF {sock} {dir}' \
#       --subdir n/node1/fs --block n/node1/log --xcpu xcpu [--user UID:GID]
# Both daemons run as children of this script, in its process group (run.sh's SIGTERM
# to the group reaches both). When either exits, or this script gets SIGTERM / SIGINT,
# the other is stopped and the temp dir (config, node socket) is removed; the script
# exits with the status of the daemon that ended first.
set -euo pipefail
[[ $# -eq 3 ]] || {
    echo "usage: $0 NF SOCK DIR" >&2
    exit 2
}
nf=$1 sock=$2 dir=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nf-gateway-server.XXXXXX")
node_pid=""
gw_pid=""

# shellcheck disable=SC2317 # called through the traps
cleanup() {
    local rc=$? pid
    trap - EXIT INT TERM
    for pid in $gw_pid $node_pid; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in $gw_pid $node_pid; do
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$tmp"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$nf" serve -f --unix "$tmp/node.sock" --export "$dir" &
node_pid=$!
# The gateway connects to its members as soon as it starts (and retries every
# second): start it only once the node listens.
for _ in $(seq 200); do
    [[ -S "$tmp/node.sock" ]] && break
    kill -0 "$node_pid" 2>/dev/null || {
        echo "gateway-server: nf serve exited before creating $tmp/node.sock" >&2
        exit 1
    }
    sleep 0.1
done
[[ -S "$tmp/node.sock" ]] || {
    echo "gateway-server: nf serve did not create $tmp/node.sock within 20 s" >&2
    exit 1
}

cat >"$tmp/gw.toml" <<EOF
[[member]]
name = "node1"
addr = "unix:$tmp/node.sock"
EOF
"$nf" gateway -f --config "$tmp/gw.toml" --unix "$sock" &
gw_pid=$!

# Whichever ends first ends this script (and, through cleanup, the other).
set +e
wait -n "$node_pid" "$gw_pid"
rc=$?
set -e
echo "gateway-server: a daemon exited (status $rc)" >&2
exit "$rc"
