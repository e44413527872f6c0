#!/usr/bin/env bash
# Installs what the kernel 9P harness needs, idempotently, and checks the result:
#   qemu-system-x86 (TCG software emulation; no KVM needed), linux-image-amd64 (a Debian
#   kernel with 9p/9pnet_fd/virtio modules: only used inside QEMU, never booted here),
#   busybox-static (the guest's userland), cpio + gzip (initramfs), diod (the reference
#   9P2000.L server the harness is proven against), xz-utils + zstd (to unpack compressed
#   .ko files, if the kernel ships them), perl-base (the harness's lease holder; Essential).
#
# linux-image-* depends on an initramfs generator (initramfs-tools) whose kernel
# postinst hook would build /boot/initrd.img-VER for booting *this* machine. We don't need
# that (the harness builds its own tiny initramfs), so the install runs with INITRD=No:
# /etc/kernel/postinst.d/initramfs-tools exits 0 at once when INITRD=No, and no
# bootloader is installed (grub is only a Suggests), so no bootloader hook runs either.
# The package then only drops files into /boot and /lib/modules (plus the /vmlinuz
# symlinks of linux-base). The exit status of apt-get is checked.
#
# Usage: tests/kernel9p/setup.sh        (root, or a user with sudo)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

pkgs=(qemu-system-x86 linux-image-amd64 busybox-static diod cpio gzip xz-utils zstd perl-base)

installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for p in "${pkgs[@]}"; do
    installed "$p" || missing+=("$p")
done

if ((${#missing[@]})); then
    command -v apt-get >/dev/null 2>&1 || k9p_die "apt-get not found; install by hand: ${missing[*]}"
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || k9p_die "need root (or sudo) to install: ${missing[*]}"
        SUDO=(sudo)
    else
        SUDO=()
    fi
    # Refresh the package lists only when some missing package has no candidate.
    need_update=0
    for p in "${missing[@]}"; do
        cand=$(apt-cache policy "$p" 2>/dev/null | awk '/Candidate:/ {print $2}')
        if [[ -z "$cand" || "$cand" == "(none)" ]]; then
            need_update=1
        fi
    done
    if ((need_update)); then
        k9p_log "apt-get update"
        "${SUDO[@]}" apt-get update -qq || k9p_die "apt-get update failed"
    fi
    k9p_log "installing ${missing[*]}"
    if ! "${SUDO[@]}" env INITRD=No DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
        k9p_die "apt-get install ${missing[*]} failed (see above)"
    fi
    for p in "${missing[@]}"; do
        installed "$p" || k9p_die "package $p is not fully installed after apt-get (dpkg --audit may tell why)"
    done
fi

command -v qemu-system-x86_64 >/dev/null 2>&1 || k9p_die "qemu-system-x86_64 not found (package qemu-system-x86)"
command -v diod >/dev/null 2>&1 || k9p_die "diod not found (package diod)"
[[ -x /bin/busybox ]] || k9p_die "/bin/busybox not found (package busybox-static)"
if ldd /bin/busybox >/dev/null 2>&1; then
    k9p_die "/bin/busybox is dynamically linked; install busybox-static (it replaces busybox)"
fi

k9p_find_kernel
mods=$(k9p_module_order)
k9p_log "kernel $K9P_KVER: $K9P_VMLINUZ"
k9p_log "modules ($K9P_MODDIR):"
while IFS= read -r m; do
    k9p_log "  $m"
done <<<"$mods"
k9p_log "setup ok"
