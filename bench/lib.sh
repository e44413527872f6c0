# Pieces shared by the comparison scripts in bench/ (source it; bash only).
#
#   die MESSAGE              print "<script>: MESSAGE" to stderr and exit 1
#   usage                    print the script's header comment (up to `set -euo`)
#   need TOOL HINT           die with HINT unless TOOL is on PATH
#   check_int NAME VALUE     die unless VALUE is a positive integer
#   check_sizes VALUE        die unless VALUE is a list like 8,64,4096
#   netns_hosts NF_NETNS K   K namespace hosts for the script's lifetime (see below)

die() {
    echo "$(basename "$0" .sh): $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"
}

check_int() {
    [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"
}

check_sizes() {
    [[ $1 =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "size lists look like 8,64,4096, not '$1'"
}

# netns_hosts NF_NETNS K     bring up K namespace hosts with nf-netns (from nf-testkit)
#                            for as long as the script runs: sets H[i] (host names),
#                            A[i] (their addresses) and subnet; nf-netns keeps them
#                            while its stdin is open, so they go when the script exits,
#                            however it exits (the EXIT trap closes it)
netns_hosts() {
    coproc NETNS { exec "$1" --hosts "$2"; }
    netns_pid=$NETNS_PID
    trap netns_hosts_release EXIT
    trap 'exit 130' INT TERM
    declare -ga H A
    subnet=""
    local kind a b c
    while read -r -u "${NETNS[0]}" kind a b c; do
        case $kind in
            host) H[a]=$b A[a]=$c ;;
            subnet) subnet=$a ;;
            ready) break ;;
        esac
    done
    [[ -n ${H[$2 - 1]:-} && -n $subnet ]] || die "nf-netns did not bring the hosts up (see its message above)"
}

netns_hosts_release() {
    exec {NETNS[1]}>&- 2>/dev/null || true
    wait "$netns_pid" 2>/dev/null || true
}
