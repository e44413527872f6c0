#!/bin/sh
# Removes network namespaces left behind by test runs that were killed outright, so that
# nf-testkit's Netns never got to drop them. Its names are nf<PID>-<N>-br and
# nf<PID>-<N>-h<I>, where PID is the test process.
#
#   tests/netns/cleanup.sh          remove those whose test process is gone
#   tests/netns/cleanup.sh --all    remove all of them (no test may be running)
#
# Processes still inside such a namespace (ranks of the crashed test) are killed first,
# by pid. Removing a namespace removes its interfaces; a veth pair dies with either end.
# Needs root and iproute2.
set -eu

all=0
case "${1:-}" in
    --all) all=1 ;;
    "") ;;
    *) echo "usage: $0 [--all]" >&2; exit 2 ;;
esac
command -v ip >/dev/null 2>&1 || { echo "cleanup.sh: ip not found; install iproute2" >&2; exit 1; }

removed=0
kept=0
for ns in $(ip netns list | awk '{print $1}'); do
    echo "$ns" | grep -Eq '^nf[0-9]+-[0-9]+-(br|h[0-9]+)$' || continue
    pid=${ns#nf}
    pid=${pid%%-*}
    if [ "$all" = 0 ] && kill -0 "$pid" 2>/dev/null; then
        kept=$((kept + 1))
        continue
    fi
    for p in $(ip netns pids "$ns" 2>/dev/null); do
        kill -9 "$p" 2>/dev/null || true
    done
    if ip netns del "$ns"; then
        removed=$((removed + 1))
    fi
done
echo "cleanup.sh: removed $removed namespace(s); kept $kept of running tests"
