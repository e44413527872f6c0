#!/usr/bin/env bash
# Linux kernel 9P client conformance test: boots a Debian kernel under QEMU (TCG software
# emulation, no KVM), mounts a 9P2000.L server through a virtio-serial port with
# trans=fd (relayed through two pipes inside the guest, because the kernel's fd
# transport cannot read or write a virtio port itself: see init.sh), runs ls / cat / stat / echo / cp / dd / mkdir / mv / ln -s / rm / truncate /
# chmod / mkfifo on the tree and a blocked read interrupted by SIGINT (Tflush), with
# --user also permission checks as an unprivileged user (below), and exits 0 only if
# every check passed.
#
# Server contract (server-agnostic; only --server, and where needed --aname / --subdir /
# --block, change between servers):
#   * CMD is run with `bash -c` in its own process group after two placeholders are
#     substituted (shell-quoted):
#       {dir}   an export directory prepared by the harness, holding
#                 hello.txt        "hello from kernel9p\n"
#                 data.bin         300000 random bytes
#                 sub/nested.txt   "nested file\n"
#                 fifo             a FIFO
#                 blocking         an empty regular file on which the harness holds a
#                                  write lease (hold-lease.pl): the server's open(2) of
#                                  it blocks in the kernel for up to
#                                  /proc/sys/fs/lease-break-time seconds (45 by default;
#                                  an O_NONBLOCK open fails at once instead)
#       {sock}  a unix socket path (in a private temp dir) the server must listen on.
#   * The server serves 9P2000.L on {sock}: QEMU connects once, as the backend of the
#     guest's virtio-serial port, before the guest boots. The kernel mounts with its
#     defaults for 9P2000.L (access=client: Tattach uname "nobody", n_uname unset), msize
#     --msize, attach name --aname (which may contain {dir}); {dir} must appear
#     read-write at the attach root, or at --subdir inside it. No authentication.
#   * It is killed (SIGTERM, then SIGKILL, whole process group) at the end.
#   * Flush check: the guest reads --block (default: {dir}/blocking, whose open blocks
#     on the lease), sends SIGINT once the reader sleeps in a 9P request, and the reader
#     must be gone within --flush-wait seconds (default 10): the server must answer
#     Tflush while the flushed request is still blocked. A server with its own blocking
#     file (a log or pipe whose read blocks) names it with --block, relative to /mnt.
#   * After the guest powers off the harness checks {dir} from the host: the guest's
#     writes are there and its rm's took effect (--no-host-check for exports whose
#     writes are private).
#   * Permission checks (--user UID:GID; needs root, and a host account with that uid):
#     {dir} also holds, owned by root, ro_dir/ (0755) with ro_dir/file (0644), secret
#     (0600), sticky/ (1777) with sticky/rootfile (0666) and sticky/suid (04777). The
#     guest runs pjdfstest-style checks (open, create, chmod, chown, unlink, rename,
#     link) as UID:GID, each expecting the errno a local user gets on a local
#     filesystem (a hard link to secret: EPERM when the host has fs.protected_hardlinks
#     on). The kernel attaches for that uid (n_uname = UID; 9P2000.L's default
#     access=client attaches per uid, as access=user does), so the server must act as
#     that user on {dir}. The host then checks: sticky/ufile, created by the user, is
#     UID:GID with the user's chmod 600; the user's append cleared the setuid bit of
#     sticky/suid; sticky/rootfile holds the user's write and is still root's; root's
#     entries are unchanged and nothing was linked or created where the user may not.
#
# Usage:
#   tests/kernel9p/run.sh --server 'CMD' [--timeout S] [--msize N] [--aname NAME]
#       [--subdir REL] [--block REL] [--flush-wait S] [--check-timeout S]
#       [--mount-opts OPTS] [--user UID:GID] [--xcpu REL] [--no-host-check] [--keep]
#   --xcpu REL: the server exports XCPU-style job files at /mnt/REL (nf serve: xcpu);
#   the guest then starts a job there with echo and cat alone (check xcpu_job; the job
#   must see its session number in NF_XCPU_SESSION: the one clone gave, or N when the
#   server's procs line for it is "ID HOST N", a session placed on HOST as number N).
# Example (the reference server, Debian's diod; it takes the export path as the attach
# name, and answers Tflush of a running request only when that request has finished,
# i.e. when the lease is broken after lease-break-time, hence --flush-wait 60):
#   tests/kernel9p/run.sh --aname '{dir}' --flush-wait 60 --server 'diod --foreground
#       --no-auth --allsquash --squashuser root --config-file /dev/null
#       --logdest stderr --export {dir} --listen {sock}'
#
# Exit status: 0 all checks passed; 1 some check failed or the guest did not finish;
# 2 usage or missing prerequisites (run tests/kernel9p/setup.sh); 124 hard timeout
# (default 240 s; QEMU, the server and the lease holder are killed).
# Prints the guest's KTEST lines, the host's HOST lines and a one-line summary
# ("kernel9p: PASS ..." or "kernel9p: FAIL (why) ..."; on failure also the tails of the
# console and server logs). Everything it starts and its temp dir are removed on every
# exit path (--keep keeps the temp dir: console.log, server.log, export/).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$here/lib.sh"

usage() {
    sed -n '/^# Usage:/,/^# Exit status/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

server_cmd=""
timeout_s=240
msize=65536
aname=""
subdir="."
block=""
flush_wait=10
check_timeout=60
mount_opts=""
user_ids=""
xcpu=""
host_check=1
keep=0
while [[ $# -gt 0 ]]; do
    case "$1" in
    --server | --timeout | --msize | --aname | --subdir | --block | --flush-wait | --check-timeout | --mount-opts | --user | --xcpu)
        [[ $# -ge 2 ]] || usage
        case "$1" in
        --server) server_cmd=$2 ;;
        --timeout) timeout_s=$2 ;;
        --msize) msize=$2 ;;
        --aname) aname=$2 ;;
        --subdir) subdir=$2 ;;
        --block) block=$2 ;;
        --flush-wait) flush_wait=$2 ;;
        --check-timeout) check_timeout=$2 ;;
        --mount-opts) mount_opts=$2 ;;
        --user) user_ids=$2 ;;
        --xcpu) xcpu=$2 ;;
        esac
        shift 2
        ;;
    --no-host-check)
        host_check=0
        shift
        ;;
    --keep)
        keep=1
        shift
        ;;
    -h | --help) usage ;;
    *)
        echo "kernel9p: unknown argument: $1" >&2
        usage
        ;;
    esac
done
[[ -n "$server_cmd" ]] || {
    echo "kernel9p: --server CMD is required" >&2
    usage
}
for n in "$timeout_s" "$msize" "$flush_wait" "$check_timeout"; do
    [[ "$n" =~ ^[0-9]+$ && "$n" -gt 0 ]] || k9p_die "expected a positive integer, got '$n'"
done
for v in "$aname" "$subdir" "$block" "$mount_opts" "$xcpu"; do
    [[ "$v" != *[[:space:]]* ]] || k9p_die "'$v': no white space allowed (it goes on the kernel command line)"
done
if [[ -n "$user_ids" ]]; then
    [[ "$user_ids" =~ ^([0-9]+):([0-9]+)$ ]] || k9p_die "--user wants UID:GID (numbers), got '$user_ids'"
    ((BASH_REMATCH[1] != 0)) || k9p_die "--user: the permission checks need an unprivileged uid, not 0"
    [[ $(id -u) == 0 ]] || k9p_die "--user needs root (the export's fixtures are root's, and the server must be able to act as UID)"
fi
[[ "$server_cmd" == *"{sock}"* ]] || k9p_die "--server CMD must contain {sock} (the unix socket it listens on)"
[[ "$server_cmd" == *"{dir}"* ]] || k9p_log "warning: --server CMD has no {dir}; the server must export the harness's directory some other way"

command -v qemu-system-x86_64 >/dev/null 2>&1 || k9p_die "qemu-system-x86_64 not found (run tests/kernel9p/setup.sh; package qemu-system-x86)"
command -v perl >/dev/null 2>&1 || k9p_die "perl not found (package perl-base)"
command -v setsid >/dev/null 2>&1 || k9p_die "setsid not found (package util-linux)"
k9p_find_kernel

wall_start=$SECONDS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernel9p.XXXXXX")
dir=$tmp/export
sock=$tmp/9p.sock
console=$tmp/console.log
srvlog=$tmp/server.log
initrd=$tmp/initramfs.cpio.gz
server_pid=""
qemu_pid=""
lease_pid=""

# stop_group PID: SIGTERM the process group led by PID, SIGKILL it after 3 s.
stop_group() {
    local pid=$1 _
    [[ -n "$pid" ]] || return 0
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
    for _ in 1 2 3 4 5 6; do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    stop_group "$qemu_pid"
    stop_group "$server_pid"
    if [[ -n "$lease_pid" ]]; then
        kill "$lease_pid" 2>/dev/null || true
        wait "$lease_pid" 2>/dev/null || true
    fi
    if ((keep)); then
        k9p_log "kept $tmp (console.log, server.log, export/)"
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- the export directory ----
mkdir -p "$dir/sub"
printf 'hello from kernel9p\n' >"$dir/hello.txt"
printf 'nested file\n' >"$dir/sub/nested.txt"
head -c 300000 /dev/urandom >"$dir/data.bin"
datasum=$(sha256sum "$dir/data.bin" | cut -d' ' -f1)
hellosum=$(sha256sum "$dir/hello.txt" | cut -d' ' -f1)
mkfifo "$dir/fifo"
: >"$dir/blocking"
if [[ -n "$user_ids" ]]; then
    mkdir -m 0755 "$dir/ro_dir" "$dir/sticky"
    chmod 1777 "$dir/sticky"
    printf 'root file\n' >"$dir/ro_dir/file"
    printf 'root secret\n' >"$dir/secret"
    printf 'root file\n' >"$dir/sticky/rootfile"
    printf 'suid\n' >"$dir/sticky/suid"
    chmod 0644 "$dir/ro_dir/file"
    chmod 0600 "$dir/secret"
    chmod 0666 "$dir/sticky/rootfile"
    chmod 04777 "$dir/sticky/suid"
    host_links=$(cat /proc/sys/fs/protected_hardlinks 2>/dev/null || echo 1)
fi

if [[ -z "$block" ]]; then
    perl "$here/hold-lease.pl" "$dir/blocking" "$timeout_s" >"$tmp/lease.out" 2>&1 &
    lease_pid=$!
    for _ in $(seq 50); do
        grep -q leased "$tmp/lease.out" 2>/dev/null && break
        kill -0 "$lease_pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -q leased "$tmp/lease.out" 2>/dev/null ||
        k9p_die "could not take a lease on $dir/blocking: $(cat "$tmp/lease.out"); use TMPDIR on a local filesystem, or --block for a server-side blocking file"
    lbt=$(cat /proc/sys/fs/lease-break-time 2>/dev/null || echo '?')
    k9p_log "lease held on {dir}/blocking (lease-break-time $lbt s)"
    if [[ "$lbt" =~ ^[0-9]+$ ]] && ((lbt < 20)); then
        k9p_log "warning: lease-break-time $lbt s is short; the blocked open may end before the guest's flush check sees it"
    fi
fi

# ---- the initramfs ----
"$here/mkinitramfs.sh" "$initrd" 2>"$tmp/mkinitramfs.log" || {
    cat "$tmp/mkinitramfs.log" >&2
    k9p_die "building the initramfs failed"
}

# ---- the server ----
q_dir=$(printf '%q' "$dir")
q_sock=$(printf '%q' "$sock")
cmd=${server_cmd//\{dir\}/"$q_dir"}
cmd=${cmd//\{sock\}/"$q_sock"}
k9p_log "server: $cmd"
setsid bash -c "$cmd" </dev/null >"$srvlog" 2>&1 &
server_pid=$!
for _ in $(seq 200); do
    [[ -S "$sock" ]] && break
    if ! kill -0 "$server_pid" 2>/dev/null; then
        tail -n 20 "$srvlog" >&2
        k9p_die "the server exited before creating $sock"
    fi
    sleep 0.1
done
[[ -S "$sock" ]] || {
    tail -n 20 "$srvlog" >&2
    k9p_die "the server did not create the unix socket $sock within 20 s"
}
sleep 0.2 # socket file exists: give the server a moment to listen()

# ---- QEMU ----
append="console=ttyS0 quiet loglevel=3 panic=-1 nf9p.port=nf9p nf9p.msize=$msize"
append+=" nf9p.subdir=$subdir nf9p.flushwait=$flush_wait nf9p.checktimeout=$check_timeout"
append+=" nf9p.datasum=$datasum"
[[ -n "$block" ]] && append+=" nf9p.block=$block"
[[ -n "$xcpu" ]] && append+=" nf9p.xcpu=$xcpu"
[[ -n "$aname" ]] && append+=" nf9p.aname=${aname//\{dir\}/"$dir"}"
[[ -n "$mount_opts" ]] && append+=" nf9p.mopts=$mount_opts"
[[ -n "$user_ids" ]] && append+=" nf9p.user=$user_ids nf9p.hostlinks=$host_links"
# shellcheck disable=SC2054 # the commas are QEMU's option syntax
qemu=(qemu-system-x86_64 -machine q35 -accel tcg -m 256 -smp 1
    -nographic -no-reboot -nic none
    -kernel "$K9P_VMLINUZ" -initrd "$initrd" -append "$append"
    -device virtio-serial-pci,id=vser0
    -chardev "socket,id=c9p,path=${sock//,/,,}"
    -device virtserialport,bus=vser0.0,chardev=c9p,name=nf9p)
k9p_log "booting $K9P_VMLINUZ under QEMU/TCG (timeout ${timeout_s}s)"
boot_start=$SECONDS
setsid "${qemu[@]}" </dev/null >"$console" 2>&1 &
qemu_pid=$!

timed_out=0
done_at=""
server_died_at=""
while kill -0 "$qemu_pid" 2>/dev/null; do
    if [[ -z "$server_died_at" ]] && ! kill -0 "$server_pid" 2>/dev/null &&
        ! grep -aq 'KTEST done' "$console"; then
        server_died_at=$((SECONDS - boot_start))
        k9p_log "note: the server exited while the guest was running (${server_died_at}s after boot)"
    fi
    if ((SECONDS - wall_start >= timeout_s)); then
        timed_out=1
        break
    fi
    if [[ -z "$done_at" ]] && grep -aq 'KTEST done' "$console" 2>/dev/null; then
        done_at=$SECONDS
    fi
    # The guest said it was done but QEMU is still up (poweroff failed): stop waiting.
    if [[ -n "$done_at" ]] && ((SECONDS - done_at > 20)); then
        break
    fi
    sleep 0.5
done
qemu_rc=0
if kill -0 "$qemu_pid" 2>/dev/null; then
    stop_group "$qemu_pid"
    qemu_rc=killed
else
    wait "$qemu_pid" || qemu_rc=$?
fi
qemu_pid=""
guest_s=$((SECONDS - boot_start))
stop_group "$server_pid"
server_pid=""

# ---- results ----
ktest=$(tr -d '\r' <"$console" | sed -n 's/.*\(KTEST \(ok\|FAIL\|info\|done\)\)/\1/p')
printf '%s\n' "$ktest"
n_ok=$(grep -c '^KTEST ok ' <<<"$ktest" || true)
n_fail=$(grep -c '^KTEST FAIL ' <<<"$ktest" || true)
saw_done=0
grep -qx 'KTEST done' <<<"$ktest" && saw_done=1

host_fail=0
host() { # host NAME OK? WHY
    if [[ "$2" == 1 ]]; then
        echo "HOST ok $1"
    else
        echo "HOST FAIL $1 $3"
        host_fail=$((host_fail + 1))
    fi
}
if ((host_check && saw_done)); then
    got=$(cat "$dir/guest-wrote.txt" 2>/dev/null || true)
    [[ "$got" == "written by the guest" ]] && r=1 || r=0
    host guest_write_visible "$r" "{dir}/guest-wrote.txt holds '$got'"
    bigsum=$(sed -n 's/^KTEST info bigsum //p' <<<"$ktest")
    got=$(sha256sum "$dir/big.bin" 2>/dev/null | cut -d' ' -f1 || true)
    [[ -n "$bigsum" && "$got" == "$bigsum" ]] && r=1 || r=0
    host dd_write_visible "$r" "{dir}/big.bin sha256 '$got', guest wrote '$bigsum'"
    [[ ! -e "$dir/gdir" && ! -e "$dir/many" ]] && r=1 || r=0
    host rm_visible "$r" "{dir}/gdir or {dir}/many still exists"
    [[ "$(sha256sum "$dir/data.bin" | cut -d' ' -f1)" == "$datasum" &&
        "$(sha256sum "$dir/hello.txt" | cut -d' ' -f1)" == "$hellosum" ]] && r=1 || r=0
    host originals_intact "$r" "data.bin or hello.txt changed"
fi
n_host=$((4 * host_check))
if ((host_check && saw_done)) && [[ -n "$user_ids" ]]; then
    n_host=$((n_host + 4))
    # attrs PATH: "uid:gid mode links" of PATH, or "missing".
    attrs() { stat -c '%u:%g %a %h' "$1" 2>/dev/null || echo missing; }
    got=$(attrs "$dir/sticky/ufile")
    [[ "$got" == "$user_ids 600 1" ]] && r=1 || r=0
    host user_file_owner_mode "$r" "{dir}/sticky/ufile: '$got', want '$user_ids 600 1' (made by the user, then chmod 600)"
    got="$(attrs "$dir/sticky/suid") $(tr '\n' '|' 2>/dev/null <"$dir/sticky/suid" || true)"
    [[ "$got" == "0:0 777 1 suid|appended by the user|" ]] && r=1 || r=0
    host setuid_cleared_by_write "$r" "{dir}/sticky/suid: '$got', want '0:0 777 1 suid|appended by the user|' (the user's write clears S_ISUID)"
    got="$(attrs "$dir/sticky/rootfile") $(cat "$dir/sticky/rootfile" 2>/dev/null || true)"
    [[ "$got" == "0:0 666 1 written by the user" ]] && r=1 || r=0
    host sticky_rootfile_written "$r" "{dir}/sticky/rootfile: '$got', want '0:0 666 1 written by the user'"
    got="$(attrs "$dir/secret") $(cat "$dir/secret" 2>/dev/null || true) | $(attrs "$dir/ro_dir") $(attrs "$dir/ro_dir/file")"
    got+=" | $( (cd "$dir" && find ro_dir sticky -mindepth 1) 2>/dev/null | LC_ALL=C sort | tr '\n' ' ' || true)"
    want="0:0 600 1 root secret | 0:0 755 2 0:0 644 1 | ro_dir/file sticky/rootfile sticky/suid sticky/udir sticky/ufile "
    [[ "$got" == "$want" ]] && r=1 || r=0
    host root_entries_intact "$r" "got '$got', want '$want'"
fi

wall=$((SECONDS - wall_start))
status=0
why=()
if ((timed_out)); then
    status=124
    why+=("hard timeout after ${timeout_s}s")
fi
((saw_done)) || why+=("no 'KTEST done' from the guest")
((n_fail == 0)) || why+=("$n_fail check(s) failed")
((n_ok > 0)) || why+=("no check passed")
((host_fail == 0)) || why+=("$host_fail host check(s) failed")
[[ -z "$server_died_at" ]] || why+=("the server exited ${server_died_at}s after boot, before the guest finished")
if ((${#why[@]})); then
    ((status)) || status=1
    echo "---- console (last 40 lines) ----"
    tr -d '\r' <"$console" | tail -n 40
    echo "---- server log (last 20 lines) ----"
    tail -n 20 "$srvlog"
    reasons=$(printf '%s; ' "${why[@]}")
    echo "kernel9p: FAIL (${reasons%; }); $n_ok ok, $n_fail failed, qemu status $qemu_rc; guest ${guest_s}s, wall ${wall}s"
else
    echo "kernel9p: PASS ($n_ok guest checks ok, $n_host host checks ok); guest ${guest_s}s, wall ${wall}s"
fi
exit "$status"
