#!/bin/sh
# nf run's remote-start template for namespace hosts in bench/compare-net.sh:
#
#   nf run --hosts H0:2,H1:2 --remote 'bench/net/netns-host.sh {host}' …
#
# Runs the rank inside network namespace HOST (ip netns exec). Every namespace shares
# this machine's cores, whereas real hosts bring their own: so that ranks which only
# wait (on a host other than $NF_BENCH_MAIN_HOST) do not take the cores the measured
# ranks need, they wait with NF_WAIT=yield (spin briefly, then yield, then nap) unless
# the launcher passes NF_WAIT itself. Root is needed (ip netns exec).
set -eu
if [ $# -lt 2 ]; then
    echo "netns-host: usage: netns-host.sh NAMESPACE COMMAND…" >&2
    exit 2
fi
host=$1
shift
if [ ! -e "/var/run/netns/$host" ]; then
    echo "netns-host: no network namespace named '$host' (ip netns list)" >&2
    exit 2
fi
if [ -n "${NF_BENCH_MAIN_HOST:-}" ] && [ "$host" != "$NF_BENCH_MAIN_HOST" ]; then
    export NF_WAIT=yield
fi
exec ip netns exec "$host" "$@"
