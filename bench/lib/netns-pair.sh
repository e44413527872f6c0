# Two network namespaces joined by a veth pair, standing for two hosts in benchmark
# scripts (needs root and iproute2). Source this file, then call `netns_pair PREFIX`:
# it sets ns0, ns1 (the namespaces), addr0, addr1 (their addresses) and subnet, and
# removes both namespaces, killing what still runs in them, when the script exits,
# whatever happens. (Tests use the Rust fixture nf_testkit::Netns instead.)

netns_pair_cleanup() {
    for ns in "${ns0:-}" "${ns1:-}"; do
        [[ -n $ns && -e /var/run/netns/$ns ]] || continue
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
}

netns_pair() { # prefix
    (($(id -u) == 0)) || { echo "netns_pair: needs root (ip netns)" >&2; return 1; }
    command -v ip >/dev/null 2>&1 || { echo "netns_pair: ip not found: apt-get install iproute2" >&2; return 1; }
    ns0=$1$$-h0
    ns1=$1$$-h1
    subnet=10.253.$(($$ % 250)).0/24
    addr0=10.253.$(($$ % 250)).1
    addr1=10.253.$(($$ % 250)).2
    trap netns_pair_cleanup EXIT
    ip netns add "$ns0"
    ip netns add "$ns1"
    ip link add veth0 netns "$ns0" type veth peer name veth1 netns "$ns1"
    ip -n "$ns0" addr add "$addr0/24" dev veth0
    ip -n "$ns1" addr add "$addr1/24" dev veth1
    for ns in "$ns0" "$ns1"; do
        ip -n "$ns" link set lo up
    done
    ip -n "$ns0" link set veth0 up
    ip -n "$ns1" link set veth1 up
}
