#!/usr/bin/env bash
# Installs libarmci for programs to link against:
#   PREFIX/lib/libarmci.so.0            the library (soname libarmci.so.0)
#   PREFIX/lib/libarmci.so              -> libarmci.so.0, for -larmci
#   PREFIX/include/armci.h, armcix.h, message.h and the headers they include
#   PREFIX/lib/pkgconfig/armci.pc       for `pkg-config --cflags --libs armci`
#
# usage: scripts/install.sh [--lib PATH] [PREFIX]
#   PREFIX defaults to /usr/local. Without --lib it builds the release library
#   (cargo build --release -p nf-armci) and installs target/release/libarmci.so;
#   --lib installs an already built libarmci.so instead.
set -euo pipefail
cd "$(dirname "$0")/.."

lib=""
if [[ "${1:-}" == "--lib" ]]; then
    lib="${2:?--lib needs the path of a libarmci.so}"
    shift 2
fi
prefix="${1:-/usr/local}"
if [[ -z "$lib" ]]; then
    cargo build --release -p nf-armci
    lib=target/release/libarmci.so
fi
[[ -f "$lib" ]] || { echo "install.sh: no library at $lib" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)

install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 0755 "$lib" "$prefix/lib/libarmci.so.0"
ln -sfn libarmci.so.0 "$prefix/lib/libarmci.so"
install -m 0644 crates/armci/include/*.h "$prefix/include/"
cat >"$prefix/lib/pkgconfig/armci.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: armci
Description: ninefold libarmci: ARMCI (ARMCI-MPI compatible) over ninefold's rma layer; compile with mpicc
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -larmci
PC
echo "installed libarmci $version under $prefix"
