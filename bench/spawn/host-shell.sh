#!/bin/sh
# One namespace "host" of bench/compare-spawn.sh, held open for the script's lifetime:
#
#   unshare -m -u --propagation private nsenter --net=/var/run/netns/NETNS \
#       host-shell.sh NAME DISK MNT
#
# Runs inside the network namespace NETNS, in a mount and a UTS namespace of its own:
# sets the host name to NAME (slurmd finds its NodeName by it; Open MPI and nf run tell
# hosts apart by it) and bind-mounts DISK (a per-host directory in the out dir) on MNT,
# so that MNT is this host's private disk: a copy to MNT on every host writes one file
# per host, as on real machines. Then it sleeps (exec: the pid the script recorded) until
# the script kills it; the daemons of the host join its namespaces with
# `nsenter -t PID -n -m -u`.
set -eu
hostname "$1"
mount --bind "$2" "$3"
exec sleep infinity
