#!/bin/sh
# Open MPI's remote-start agent for network-namespace "hosts" on this machine.
#
#   mpirun --mca plm_rsh_agent tests/netns/mpirun-agent.sh --host NS0:2,NS1:2 …
#
# mpirun (run it inside one of the namespaces, e.g. `ip netns exec NS0 mpirun …`, so its
# out-of-band address is reachable from the others; pass `--mca oob_tcp_if_include` and
# `--mca btl_tcp_if_include` with the fixture's subnet) calls the agent as
# `AGENT HOST COMMAND…` for every host it starts a daemon on, the local one included,
# since namespaces share the machine's host name. The daemon then runs inside HOST, with
# NF_HOST=HOST so that ninefold ranks of different namespaces count as different hosts
# (they would otherwise share memory: same host name, same kernel). Root is needed.
set -eu
if [ $# -lt 2 ]; then
    echo "mpirun-agent: usage: mpirun-agent.sh NAMESPACE COMMAND…" >&2
    exit 2
fi
host=$1
shift
if [ ! -e "/var/run/netns/$host" ]; then
    echo "mpirun-agent: no network namespace named '$host' (ip netns list)" >&2
    exit 2
fi
# Each host's daemon gets a TMPDIR of its own: Open MPI names session directories
# after the host name, which all namespaces share, and two daemons creating and
# removing them side by side in /tmp sometimes collide ("unable to create the
# desired directory"). The folder goes when the daemon ends. It also holds the shared
# memory segments of the vader btl (ranks of one host): by default they go to
# /dev/shm, which all namespaces share, named after the host name and the local rank,
# so two hosts' local rank 0 would map the same segment (a segfault in MPI_Init).
tmp=${TMPDIR:-/tmp}/nf-mpirun-$host-$$
mkdir -p "$tmp"
# mpirun hands the daemon's command line over as words meant for a remote shell.
rc=0
ip netns exec "$host" env NF_HOST="$host" TMPDIR="$tmp" \
    OMPI_MCA_btl_vader_backing_directory="$tmp" sh -c "$*" || rc=$?
rm -rf "$tmp"
exit "$rc"
