#!/usr/bin/env bash
# Installs what a fresh machine lacks for ninefold: Debian packages (Open MPI for the
# comparison benchmark, valgrind for instruction counts, a font for plots) and a Rust
# toolchain check. Idempotent.
set -euo pipefail

need_pkgs=()
for pkg in openmpi-bin libopenmpi-dev valgrind fonts-dejavu-core iproute2 iputils-ping procps libfabric-dev libfabric-bin; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need_pkgs+=("$pkg")
done
if ((${#need_pkgs[@]})); then
    echo "setup: installing ${need_pkgs[*]}" >&2
    if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: cargo not found; install Rust (rustup) first" >&2
    exit 1
fi
for comp in clippy rustfmt; do
    cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$comp"
done
