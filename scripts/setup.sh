#!/usr/bin/env bash
# Installs what a fresh machine lacks for ninefold, in two tiers. Idempotent.
#
#   scripts/setup.sh demo    what building `nf`, the demo and the README's tour need: a C
#                            compiler and pkg-config (the build compiles small C shims),
#                            libfabric's and PMIx's headers (the ofi transport and the PMIx
#                            bootstrap; without them the build still succeeds with those two
#                            disabled), Open MPI's `mpirun` and MPICH's hydra (the tour starts
#                            the same program under them; hydra stays second to Open MPI for
#                            `mpirun`), a font for the plots, and a Rust toolchain check.
#   scripts/setup.sh [tests] the demo's tier plus everything the test suite and the
#                            benchmarks need: Open MPI's headers (the comparison benchmark,
#                            libarmci's C side), ARMCI-MPI and Global
#                            Arrays with the ScaLAPACK, LAPACK and BLAS they link against
#                            (libarmci's acceptance tests), valgrind (instruction counts),
#                            systemd (the unit checker and socket activation of the service
#                            tests), iperf3, strace (the tree spawn test counts the client's
#                            connections and bytes), what the kernel 9P
#                            client test needs (QEMU, a Debian kernel, busybox-static, diod:
#                            tests/kernel9p/setup.sh), and Go with the pinned module of the
#                            third-party 9P client test (tests/p9client).
set -euo pipefail

tier=${1:-tests}
case $tier in
demo | tests) ;;
*)
    echo "setup: unknown tier '$tier'; give 'demo' (build and run the demo) or 'tests' (everything)" >&2
    exit 2
    ;;
esac

pkgs=(gcc libc6-dev pkg-config libfabric-dev libpmix-dev procps openmpi-bin mpich fonts-dejavu-core)
if [[ $tier == tests ]]; then
    pkgs+=(libopenmpi-dev valgrind iproute2 iputils-ping libfabric-bin
        libarmci-mpi-dev libglobalarrays-dev libscalapack-openmpi-dev liblapack-dev libblas-dev iperf3 systemd strace)
fi
need_pkgs=()
for pkg in "${pkgs[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_pkgs+=("$pkg")
done
if ((${#need_pkgs[@]})); then
    echo "setup: installing ${need_pkgs[*]}" >&2
    if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if [[ $tier == tests ]]; then
    # The Linux kernel 9P client test (crates/cli/tests/conform_kernel.rs) and the diod
    # comparison of `nf bench 9p`.
    if ! k9p_log=$("$(dirname "$0")/../tests/kernel9p/setup.sh" 2>&1); then
        echo "$k9p_log" >&2
        echo "setup: tests/kernel9p/setup.sh failed (see above)" >&2
        exit 1
    fi

    # The third-party 9P client test (crates/cli/tests/conform_go.rs): Go (the machine's,
    # else Debian's golang-go) and the module pinned in tests/p9client/go.sum.
    if ! command -v go >/dev/null 2>&1; then
        echo "setup: installing golang-go" >&2
        if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends golang-go >/dev/null
    fi
    (cd "$(dirname "$0")/../tests/p9client" && go mod download) ||
        { echo "setup: downloading the Go module of tests/p9client failed" >&2; exit 1; }
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust (rustup) first" >&2
    exit 1
fi
for comp in clippy rustfmt; do
    cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$comp"
done
