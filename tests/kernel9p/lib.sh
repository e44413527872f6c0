# shellcheck shell=bash
# Shared helpers for the kernel 9P harness (sourced by setup.sh, mkinitramfs.sh, run.sh).

# Kernel modules the guest needs, by name. Their dependencies (virtio, virtio_ring,
# 9pnet, netfs, fscache, ...) are resolved from modules.dep. In Debian's 6.1 kernel the
# fd transport is its own module (9pnet_fd); on kernels where it is built into 9pnet
# the name is simply not found and is skipped (see k9p_module_order).
K9P_MODULES=(virtio_pci virtio_console 9pnet_fd 9p)

k9p_die() {
    echo "kernel9p: error: $*" >&2
    exit 2
}

k9p_log() {
    echo "kernel9p: $*" >&2
}

# k9p_find_kernel: sets K9P_KVER, K9P_VMLINUZ, K9P_MODDIR.
# Picks $KERNEL9P_KVER if set, else the newest version that has both
# /boot/vmlinuz-VER and /lib/modules/VER/modules.dep.
k9p_find_kernel() {
    local v best=""
    if [[ -n "${KERNEL9P_KVER:-}" ]]; then
        best=$KERNEL9P_KVER
    else
        while IFS= read -r v; do
            if [[ -r "/boot/vmlinuz-$v" && -r "/lib/modules/$v/modules.dep" ]]; then
                best=$v
            fi
        done < <(find /lib/modules -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort -V)
    fi
    [[ -n "$best" ]] || k9p_die "no kernel found: need /boot/vmlinuz-VER and /lib/modules/VER/modules.dep (run tests/kernel9p/setup.sh, which installs linux-image-amd64)"
    [[ -r "/boot/vmlinuz-$best" ]] || k9p_die "/boot/vmlinuz-$best missing or unreadable (KERNEL9P_KVER=$best)"
    [[ -r "/lib/modules/$best/modules.dep" ]] || k9p_die "/lib/modules/$best/modules.dep missing (KERNEL9P_KVER=$best; run depmod $best?)"
    # shellcheck disable=SC2034 # used by the scripts that source this file
    K9P_KVER=$best
    # shellcheck disable=SC2034
    K9P_VMLINUZ=/boot/vmlinuz-$best
    K9P_MODDIR=/lib/modules/$best
}

# _k9p_dep_path NAME: the modules.dep-relative path of module NAME ('-' and '_' are
# equivalent in module names), or nothing.
_k9p_dep_path() {
    local want=${1//-/_}
    awk -F: -v want="$want" '{
        n = $1; sub(/.*\//, "", n); sub(/\.ko(\.(xz|zst|gz))?$/, "", n); gsub(/-/, "_", n)
        if (n == want) { print $1; exit }
    }' "$K9P_MODDIR/modules.dep"
}

# _k9p_deps PATH: direct and indirect dependencies of the module at PATH, as listed.
_k9p_deps() {
    awk -F: -v p="$1" '$1 == p { sub(/^ +/, "", $2); print $2; exit }' "$K9P_MODDIR/modules.dep" | tr ' ' '\n' | sed '/^$/d'
}

_k9p_is_builtin() {
    local want=${1//-/_}
    [[ -r "$K9P_MODDIR/modules.builtin" ]] || return 1
    sed -e 's#.*/##' -e 's/\.ko$//' -e 's/-/_/g' "$K9P_MODDIR/modules.builtin" | grep -qx -- "$want"
}

# k9p_module_order: prints the modules.dep paths of K9P_MODULES and their dependencies,
# each once, dependencies before the modules that need them (depth-first).
k9p_module_order() {
    local -A seen=()
    local -a order=()
    local name path
    _k9p_visit() {
        local p=$1 d
        [[ -n "${seen[$p]:-}" ]] && return 0
        seen[$p]=1
        while IFS= read -r d; do
            _k9p_visit "$d"
        done < <(_k9p_deps "$p")
        order+=("$p")
    }
    for name in "${K9P_MODULES[@]}"; do
        path=$(_k9p_dep_path "$name")
        if [[ -z "$path" ]]; then
            if _k9p_is_builtin "$name"; then
                k9p_log "module $name is built into $K9P_KVER"
                continue
            fi
            if [[ "$name" == 9pnet_fd ]]; then
                # Older kernels have the fd transport inside 9pnet itself.
                k9p_log "no separate 9pnet_fd module in $K9P_KVER (fd transport assumed inside 9pnet)"
                continue
            fi
            k9p_die "kernel module $name not found in $K9P_MODDIR/modules.dep (this kernel lacks 9P/virtio support?)"
        fi
        _k9p_visit "$path"
    done
    printf '%s\n' "${order[@]}"
}
