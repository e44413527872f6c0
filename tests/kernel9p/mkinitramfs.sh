#!/usr/bin/env bash
# Builds the harness's tiny initramfs (gzip'd newc cpio): a static busybox, the kernel
# modules for virtio-serial and 9P over trans=fd (with their dependencies from
# modules.dep, decompressed if the kernel ships .ko.xz/.ko.zst/.ko.gz, and listed in load
# order in /etc/modules.order), /init (init.sh) and /guest-test.sh.
#
# Usage: tests/kernel9p/mkinitramfs.sh OUT [--guest-test FILE]
#   KERNEL9P_KVER=VER picks the kernel version (default: newest installed).
# Needs: busybox-static, cpio, gzip (tests/kernel9p/setup.sh installs them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

usage() {
    echo "usage: $0 OUT [--guest-test FILE]" >&2
    exit 2
}

[[ $# -ge 1 ]] || usage
out=$1
shift
guest_test=$here/guest-test.sh
while [[ $# -gt 0 ]]; do
    case "$1" in
    --guest-test)
        [[ $# -ge 2 ]] || usage
        guest_test=$2
        shift 2
        ;;
    *) usage ;;
    esac
done
[[ -r "$guest_test" ]] || k9p_die "guest test script $guest_test not readable"

for tool in cpio gzip; do
    command -v "$tool" >/dev/null 2>&1 || k9p_die "$tool not found (run tests/kernel9p/setup.sh)"
done
[[ -x /bin/busybox ]] || k9p_die "/bin/busybox not found (package busybox-static; run tests/kernel9p/setup.sh)"
if ldd /bin/busybox >/dev/null 2>&1; then
    k9p_die "/bin/busybox is dynamically linked; install busybox-static"
fi

k9p_find_kernel

root=$(mktemp -d "${TMPDIR:-/tmp}/kernel9p-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,dev,etc,lib/modules,mnt,proc,sys,tmp}
# The archive's "." sets the mode of the guest's /: mktemp made it 0700, which would
# keep the unprivileged test user out of /bin.
chmod 0755 "$root"
cp /bin/busybox "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
install -m 0755 "$here/init.sh" "$root/init"
install -m 0755 "$guest_test" "$root/guest-test.sh"

mods=$(k9p_module_order) # dies here if a module is missing
: >"$root/etc/modules.order"
while IFS= read -r rel; do
    [[ -n "$rel" ]] || continue
    src=$K9P_MODDIR/$rel
    [[ -r "$src" ]] || k9p_die "module file $src missing"
    base=$(basename "$rel")
    case "$base" in
    *.ko)
        cp "$src" "$root/lib/modules/$base"
        ;;
    *.ko.xz)
        command -v xz >/dev/null 2>&1 || k9p_die "xz not found, needed for $base (package xz-utils)"
        base=${base%.xz}
        xz -dc "$src" >"$root/lib/modules/$base"
        ;;
    *.ko.zst)
        command -v zstd >/dev/null 2>&1 || k9p_die "zstd not found, needed for $base (package zstd)"
        base=${base%.zst}
        zstd -q -dc "$src" >"$root/lib/modules/$base"
        ;;
    *.ko.gz)
        base=${base%.gz}
        gzip -dc "$src" >"$root/lib/modules/$base"
        ;;
    *) k9p_die "unexpected module file name $rel" ;;
    esac
    echo "$base" >>"$root/etc/modules.order"
done <<<"$mods"

(cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null --quiet -o -H newc -R 0:0) | gzip -6 >"$out.tmp"
mv "$out.tmp" "$out"
k9p_log "initramfs $out (kernel $K9P_KVER, modules: $(tr '\n' ' ' <"$root/etc/modules.order"))"
