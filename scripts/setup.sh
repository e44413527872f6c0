#!/usr/bin/env bash
# Installs what a fresh machine lacks for ninefold: Debian packages (Open MPI for the
# comparison benchmark, the mpirun/PMIx tests and libarmci; valgrind for instruction
# counts (bench/callgrind-pingpong.sh); systemd for its unit checker and socket
# activation tool (the service tests); libpmix-dev for the PMIx
# shim; MPICH's hydra for the PMI-2 tests — it stays second to Open MPI for
# `mpirun`/`mpicc`; ARMCI-MPI and Global Arrays with the ScaLAPACK, LAPACK and BLAS it
# links against, for libarmci's acceptance tests; a font for plots), what the kernel 9P
# client test needs (QEMU, a Debian kernel, busybox-static, diod:
# tests/kernel9p/setup.sh), Go and the pinned module of the third-party 9P client test
# (tests/p9client), strace (the tree spawn test counts the client's connections and bytes
# with it), and a Rust toolchain check. Idempotent.
set -euo pipefail

need_pkgs=()
for pkg in openmpi-bin libopenmpi-dev valgrind fonts-dejavu-core iproute2 iputils-ping procps libfabric-dev libfabric-bin \
    libpmix-dev pkg-config mpich libarmci-mpi-dev libglobalarrays-dev libscalapack-openmpi-dev liblapack-dev libblas-dev \
    iperf3 systemd strace; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_pkgs+=("$pkg")
done
if ((${#need_pkgs[@]})); then
    echo "setup: installing ${need_pkgs[*]}" >&2
    if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

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

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust (rustup) first" >&2
    exit 1
fi
for comp in clippy rustfmt; do
    cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$comp"
done
