#!/usr/bin/env bash
# Installs ninefold for programs and for the machine:
#   PREFIX/lib/libarmci.so.0            the library (soname libarmci.so.0)
#   PREFIX/lib/libarmci.so              -> libarmci.so.0, for -larmci
#   PREFIX/include/armci.h, armcix.h, message.h and the headers they include
#   PREFIX/lib/pkgconfig/armci.pc       for `pkg-config --cflags --libs armci`
#   PREFIX/lib/libshmem.so              OpenSHMEM 1.5 (nf-shmem; soname libshmem.so)
#   PREFIX/include/ninefold-shmem/shmem.h, pshmem.h (the profiling names)
#   PREFIX/lib/pkgconfig/ninefold-shmem.pc  for `pkg-config --cflags --libs ninefold-shmem`
#   PREFIX/bin/nfshcc                   cc with those flags (not Open MPI's oshcc)
# with --nf PATH or --service also
#   PREFIX/bin/nf                       the command line and the node server
# and with --service the node server as a system service:
#   /etc/systemd/system/nf-serve.service, nf-serve.socket   (packaging/systemd)
#   /etc/ninefold/serve.toml            its options (kept if it exists)
#
# usage: scripts/install.sh [--lib PATH] [--shmem-lib PATH] [--no-lib] [--nf PATH]
#                           [--service] [--root DIR] [PREFIX]
#   PREFIX defaults to /usr/local. Without --lib and --shmem-lib it builds both
#   release libraries (cargo build --release) and installs them; --lib installs an
#   already built libarmci, --shmem-lib an already built libshmem (only those
#   given), --no-lib none. --service without --nf builds the release nf the same way.
#   --root DIR stages everything under DIR (as a package build does) and touches
#   nothing of this machine; without it, --service reloads systemd (when it runs) and
#   says how to start the service.
set -euo pipefail
cd "$(dirname "$0")/.."

lib="" shmem_lib="" nf="" no_lib=0 service=0 root=""
while (($#)); do
    case "$1" in
    --lib) lib="${2:?--lib needs the path of a libarmci.so}"; shift 2 ;;
    --shmem-lib) shmem_lib="${2:?--shmem-lib needs the path of a libshmem.so}"; shift 2 ;;
    --no-lib) no_lib=1; shift ;;
    --nf) nf="${2:?--nf needs the path of an nf binary}"; shift 2 ;;
    --service) service=1; shift ;;
    --root) root="${2:?--root needs a directory}"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "install.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
    esac
done
prefix="${1:-/usr/local}"
dest="$root$prefix"

armci=1 shmem=1
if [[ $no_lib -eq 1 ]]; then
    armci=0 shmem=0
elif [[ -z "$lib" && -z "$shmem_lib" ]]; then
    cargo build --release -p nf-armci -p nf-shmem
    lib=target/release/libarmci.so shmem_lib=target/release/libshmem.so
else
    [[ -n "$lib" ]] || armci=0
    [[ -n "$shmem_lib" ]] || shmem=0
fi
if [[ $service -eq 1 && -z "$nf" ]]; then
    cargo build --release -p nf-cli --bin nf
    nf=target/release/nf
fi
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)

if [[ $armci -eq 1 ]]; then
    [[ -f "$lib" ]] || { echo "install.sh: no library at $lib" >&2; exit 1; }
    install -d "$dest/lib/pkgconfig" "$dest/include"
    install -m 0755 "$lib" "$dest/lib/libarmci.so.0"
    ln -sfn libarmci.so.0 "$dest/lib/libarmci.so"
    install -m 0644 crates/armci/include/*.h "$dest/include/"
    cat >"$dest/lib/pkgconfig/armci.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: armci
Description: ninefold libarmci: ARMCI (ARMCI-MPI compatible) over ninefold's rma layer; compile with mpicc
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -larmci
PC
    echo "installed libarmci $version under $dest"
fi

if [[ $shmem -eq 1 ]]; then
    [[ -f "$shmem_lib" ]] || { echo "install.sh: no library at $shmem_lib" >&2; exit 1; }
    inc="$prefix/include/ninefold-shmem"
    install -d "$dest/lib/pkgconfig" "$root$inc" "$dest/bin"
    install -m 0755 "$shmem_lib" "$dest/lib/libshmem.so"
    install -m 0644 crates/shmem/include/shmem.h crates/shmem/include/pshmem.h "$root$inc/"
    cat >"$dest/lib/pkgconfig/ninefold-shmem.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include/ninefold-shmem

Name: ninefold-shmem
Description: ninefold libshmem: OpenSHMEM 1.5 over ninefold's rma layer; run with nf run, mpirun or srun
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lshmem
PC
    # The wrapper carries the flags itself (no pkg-config needed at build time); the
    # link flags are left out when the compiler does not link.
    cat >"$dest/bin/nfshcc" <<SH
#!/bin/sh
# nfshcc: the C compiler (\$NFSHCC_CC, else \$CC, else cc) with ninefold libshmem's
# flags; installed by ninefold's scripts/install.sh.
link="-L$prefix/lib -Wl,-rpath,$prefix/lib -lshmem"
for a in "\$@"; do
    case "\$a" in -c | -S | -E | -M | -MM) link="" ;; esac
done
exec \${NFSHCC_CC:-\${CC:-cc}} -I$inc "\$@" \$link
SH
    chmod 0755 "$dest/bin/nfshcc"
    echo "installed libshmem $version under $dest (compile with $prefix/bin/nfshcc)"
fi

if [[ -n "$nf" ]]; then
    [[ -f "$nf" ]] || { echo "install.sh: no nf binary at $nf" >&2; exit 1; }
    install -d "$dest/bin"
    install -m 0755 "$nf" "$dest/bin/nf"
    echo "installed nf $version as $dest/bin/nf"
fi

if [[ $service -eq 1 ]]; then
    units="$root/etc/systemd/system"
    install -d "$units" "$root/etc/ninefold"
    for u in nf-serve.service nf-serve.socket; do
        sed "s|/usr/local/bin/nf|$prefix/bin/nf|g" "packaging/systemd/$u" >"$units/$u"
        chmod 0644 "$units/$u"
    done
    if [[ -e "$root/etc/ninefold/serve.toml" ]]; then
        echo "kept $root/etc/ninefold/serve.toml (the shipped one is packaging/etc/serve.toml)"
    else
        install -m 0644 packaging/etc/serve.toml "$root/etc/ninefold/serve.toml"
    fi
    "$dest/bin/nf" serve --check-config --config "$root/etc/ninefold/serve.toml" >/dev/null
    echo "installed nf-serve.service and nf-serve.socket under $units, options in $root/etc/ninefold/serve.toml"
    if [[ -z "$root" ]]; then
        if [[ -d /run/systemd/system ]]; then
            systemctl daemon-reload
            echo "start it with: systemctl enable --now nf-serve.socket"
        else
            echo "systemd is not running here: start the server with $prefix/bin/nf serve --config /etc/ninefold/serve.toml"
        fi
    fi
fi
