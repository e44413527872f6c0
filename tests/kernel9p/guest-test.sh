#!/bin/sh
# Guest-side checks of the kernel 9P harness (busybox sh, run by /init once the server is
# mounted on /mnt). Prints one "KTEST ok NAME [detail]" or "KTEST FAIL NAME WHY" line per
# check and "KTEST info ..." lines the host uses for its own checks. Exits 0 when it got
# to the end (whatever the results); /init then prints "KTEST done" and powers off.
#
# Kernel command line parameters (set by run.sh):
#   nf9p.subdir=REL      where the harness's export directory appears under /mnt (.)
#   nf9p.block=REL       file under /mnt whose open or read blocks in the server
#                        (default: SUBDIR/blocking, a file the host holds a lease on)
#   nf9p.flushwait=S     seconds a blocked reader may take to exit after SIGINT (10)
#   nf9p.checktimeout=S  seconds one check may take before it is killed (60)
#   nf9p.datasum=SHA256  checksum of SUBDIR/data.bin
#   nf9p.user=UID:GID    run the permission checks (c_u_*) as this unprivileged user
#                        (none: they are not run, and an info line says so)
#   nf9p.hostlinks=0|1   the host's fs.protected_hardlinks (what a local user there gets)
#   nf9p.xcpu=REL        XCPU job files at /mnt/REL: start a job with echo and cat
#                        (check xcpu_job; none: not run, and an info line says so)
#
# The export directory prepared by run.sh holds:
#   hello.txt ("hello from kernel9p\n"), data.bin (random, sha256 = datasum),
#   sub/nested.txt ("nested file\n"), fifo (a FIFO), blocking (lease-held regular file),
#   and with nf9p.user, owned by root: ro_dir/ (0755) holding file (0644), secret (0600,
#   "root secret\n"), sticky/ (1777) holding rootfile (0666) and suid (04777).

# The c_* checks are called indirectly ("c_$2"), and ls is part of what is tested.
# shellcheck disable=SC2317,SC2010,SC2012
PATH=/bin
param() { # param KEY DEFAULT
    v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^nf9p\.$1=//p" | tail -n 1)
    echo "${v:-$2}"
}

SUBDIR=$(param subdir .)
if [ "$SUBDIR" = . ]; then R=/mnt; else R=/mnt/$SUBDIR; fi
BLOCK=$(param block "")
if [ -z "$BLOCK" ]; then BLOCK=$R/blocking; else BLOCK=/mnt/$BLOCK; fi
FLUSH_WAIT=$(param flushwait 10)
CHECK_TIMEOUT=$(param checktimeout 60)
DATASUM=$(param datasum "")
HELLO="hello from kernel9p"
W=$R/gdir
USER_IDS=$(param user "")
HOST_LINKS=$(param hostlinks 1)
XCPU=$(param xcpu "")
GUEST_USER=nf9puser
S=$R/sticky
UDIR=$S/udir

fail() {
    echo "$*"
    exit 1
}

sha() { sha256sum "$1" | cut -d' ' -f1; }

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# expect_err ERROR WHAT CMD...: CMD must fail, and its message must name ERROR (the
# strerror text: "Permission denied" is EACCES, "Operation not permitted" EPERM).
expect_err() {
    want=$1 what=$2
    shift 2
    if out=$("$@" 2>&1 </dev/null); then
        fail "$what succeeded, want $want"
    fi
    case "$out" in
    *"$want"*) ;;
    *) fail "$what failed with '$out', want $want" ;;
    esac
}

# ---- the checks (each runs in its own process, under a timeout) ----

c_ls_root() {
    out=$(ls -a "$R") || fail "ls $R failed"
    for n in hello.txt data.bin sub fifo; do
        echo "$out" | grep -qx "$n" || fail "ls $R lacks $n (got: $(echo "$out" | tr '\n' ' '))"
    done
}

c_cat() {
    got=$(cat "$R/hello.txt") || fail "cat hello.txt failed"
    [ "$got" = "$HELLO" ] || fail "hello.txt reads '$got'"
}

c_stat() {
    got=$(stat -c '%s %F' "$R/hello.txt") || fail "stat hello.txt failed"
    [ "$got" = "20 regular file" ] || fail "stat hello.txt: '$got', want '20 regular file'"
    got=$(stat -c '%F' "$R/sub") || fail "stat sub failed"
    [ "$got" = directory ] || fail "stat sub: '$got'"
}

c_statfs() {
    stat -f "$R" >/dev/null || fail "statfs $R failed"
}

c_read_big() {
    [ -n "$DATASUM" ] || fail "no nf9p.datasum given"
    got=$(sha "$R/data.bin") || fail "reading data.bin failed"
    [ "$got" = "$DATASUM" ] || fail "data.bin sha256 $got, want $DATASUM"
}

c_read_offset() {
    a=$(dd if="$R/data.bin" bs=1000 skip=123 count=7 2>/dev/null | sha256sum) || fail "dd skip failed"
    b=$(tail -c +123001 "$R/data.bin" | head -c 7000 | sha256sum) || fail "tail failed"
    [ "$a" = "$b" ] || fail "dd skip=123 bs=1000 count=7 differs from the same bytes read sequentially"
}

c_subdir() {
    ls "$R/sub" | grep -qx nested.txt || fail "ls sub lacks nested.txt"
    got=$(cat "$R/sub/nested.txt") || fail "cat sub/nested.txt failed"
    [ "$got" = "nested file" ] || fail "sub/nested.txt reads '$got'"
}

c_mkdir() {
    mkdir "$W" || fail "mkdir $W failed"
    mkdir -p "$W/a/b" || fail "mkdir -p $W/a/b failed"
    [ -d "$W/a/b" ] || fail "$W/a/b is not a directory after mkdir"
}

c_echo_write() {
    mkdir -p "$W"
    echo "hello-guest" >"$W/echo.txt" || fail "echo > echo.txt failed"
    got=$(cat "$W/echo.txt") || fail "cat echo.txt failed"
    [ "$got" = hello-guest ] || fail "echo.txt reads '$got'"
}

c_echo_append() {
    mkdir -p "$W"
    echo one >"$W/app.txt" || fail "echo > app.txt failed"
    echo two >>"$W/app.txt" || fail "echo >> app.txt failed"
    got=$(tr '\n' ' ' <"$W/app.txt") || fail "reading app.txt failed"
    [ "$got" = "one two " ] || fail "app.txt reads '$got'"
}

c_cp() {
    mkdir -p "$W"
    cp "$R/data.bin" "$W/copy.bin" || fail "cp data.bin failed"
    cmp "$R/data.bin" "$W/copy.bin" || fail "copy.bin differs from data.bin"
}

c_dd_write() {
    dd if=/dev/urandom of=/tmp/rand bs=65536 count=16 2>/dev/null || fail "local dd failed"
    # 100000-byte writes: not a multiple of any msize, so writes straddle message limits.
    dd if=/tmp/rand of="$R/big.bin" bs=100000 conv=fsync 2>/dev/null || fail "dd to big.bin failed"
    a=$(sha /tmp/rand)
    b=$(sha "$R/big.bin") || fail "reading big.bin back failed"
    [ "$a" = "$b" ] || fail "big.bin reads back $b, wrote $a"
    echo "$a" >/tmp/bigsum
}

c_dd_notrunc() {
    mkdir -p "$W"
    head -c 4096 /dev/zero | tr '\0' a >"$W/patch.bin" || fail "creating patch.bin failed"
    printf XYZ | dd of="$W/patch.bin" bs=1 seek=1000 conv=notrunc 2>/dev/null || fail "dd seek=1000 conv=notrunc failed"
    got=$(stat -c %s "$W/patch.bin")
    [ "$got" = 4096 ] || fail "patch.bin size $got after an in-place write, want 4096"
    got=$(dd if="$W/patch.bin" bs=1 skip=999 count=5 2>/dev/null)
    [ "$got" = aXYZa ] || fail "bytes 999..1003 read '$got', want aXYZa"
}

c_truncate() {
    mkdir -p "$W"
    printf 0123456789 >"$W/trunc.txt" || fail "write trunc.txt failed"
    truncate -s 4 "$W/trunc.txt" || fail "truncate -s 4 failed"
    got=$(cat "$W/trunc.txt")
    [ "$got" = 0123 ] || fail "after truncate -s 4 reads '$got'"
    truncate -s 8 "$W/trunc.txt" || fail "truncate -s 8 failed"
    got=$(stat -c %s "$W/trunc.txt")
    [ "$got" = 8 ] || fail "size $got after truncate -s 8"
}

c_chmod() {
    mkdir -p "$W"
    : >"$W/mode.txt" || fail "create mode.txt failed"
    chmod 640 "$W/mode.txt" || fail "chmod 640 failed"
    got=$(stat -c %a "$W/mode.txt")
    [ "$got" = 640 ] || fail "mode $got after chmod 640"
}

c_rename() {
    mkdir -p "$W/rdir"
    echo r >"$W/old.txt" || fail "write old.txt failed"
    mv "$W/old.txt" "$W/new.txt" || fail "mv old.txt new.txt failed"
    [ ! -e "$W/old.txt" ] || fail "old.txt still exists after mv"
    mv "$W/new.txt" "$W/rdir/moved.txt" || fail "mv into a subdirectory failed"
    got=$(cat "$W/rdir/moved.txt")
    [ "$got" = r ] || fail "moved.txt reads '$got'"
}

c_symlink() {
    mkdir -p "$W"
    ln -s ../hello.txt "$W/link" || fail "ln -s failed"
    got=$(readlink "$W/link")
    [ "$got" = ../hello.txt ] || fail "readlink gives '$got'"
    got=$(cat "$W/link")
    [ "$got" = "$HELLO" ] || fail "cat through the symlink reads '$got'"
}

c_readdir_many() {
    mkdir "$R/many" || fail "mkdir many failed"
    i=0
    while [ "$i" -lt 300 ]; do
        : >"$R/many/file-with-a-longish-name-$i" || fail "create file $i failed"
        i=$((i + 1))
    done
    n=$(ls "$R/many" | wc -l)
    [ "$n" = 300 ] || fail "ls many lists $n entries, want 300"
    rm -r "$R/many" || fail "rm -r many failed"
}

c_fifo() {
    [ -p "$R/fifo" ] || fail "fifo is not a FIFO here: $(stat -c %F "$R/fifo" 2>&1)"
    # Opening a FIFO on a 9P mount gives a pipe local to this kernel (v9fs makes it a
    # special inode); its data never goes over 9P. This checks that the server's mode
    # bits are right and that mkfifo (Tmknod) works.
    (echo ping >"$R/fifo") &
    read -r line <"$R/fifo"
    wait
    [ "$line" = ping ] || fail "read '$line' from the fifo"
    mkdir -p "$W"
    mkfifo "$W/newfifo" || fail "mkfifo (Tmknod) failed"
    [ -p "$W/newfifo" ] || fail "newfifo is not a FIFO"
}

c_rm() {
    mkdir -p "$W"
    echo x >"$W/gone.txt" || fail "write gone.txt failed"
    rm "$W/gone.txt" || fail "rm gone.txt failed"
    [ ! -e "$W/gone.txt" ] || fail "gone.txt still there after rm"
    rm -r "$W" || fail "rm -r $W failed"
    [ ! -e "$W" ] || fail "$W still there after rm -r"
}

c_host_write() {
    echo "written by the guest" >"$R/guest-wrote.txt" || fail "write guest-wrote.txt failed"
}

c_after_flush() {
    got=$(cat "$R/hello.txt") || fail "cat hello.txt failed after the flush"
    [ "$got" = "$HELLO" ] || fail "hello.txt reads '$got' after the flush"
    ls "$R" >/dev/null || fail "ls failed after the flush"
}

# ---- permission checks, run as the unprivileged user nf9p.user (pjdfstest style) ----
# Each expects what a local user gets on a local filesystem. The guest kernel checks
# modes itself first (v9fs mirrors the server's attributes), but it attaches for this
# uid (n_uname), so whatever it lets through is decided by the server acting as the
# user; the host-side checks of run.sh confirm the outcome on the host's files.

c_u_identity() {
    got="$(id -u):$(id -g)"
    [ "$got" = "$USER_IDS" ] || fail "running as $got, want $USER_IDS"
}

c_u_sticky_create() {
    mkdir "$UDIR" || fail "mkdir sticky/udir failed"
    echo user >"$S/ufile" || fail "create sticky/ufile failed"
    got=$(stat -c %u:%g "$S/ufile")
    [ "$got" = "$USER_IDS" ] || fail "sticky/ufile owned by $got, want $USER_IDS"
}

c_u_chmod_own() {
    chmod 600 "$S/ufile" || fail "chmod 600 of an own file failed"
    got=$(stat -c %a "$S/ufile")
    [ "$got" = 600 ] || fail "mode $got after chmod 600"
}

c_u_chown_own_to_root() {
    expect_err "Operation not permitted" "chown 0 of an own file" chown 0 "$S/ufile"
    expect_err "Operation not permitted" "chgrp 0 of an own file" chgrp 0 "$S/ufile"
}

c_u_unlink_own() {
    echo gone >"$S/ugone" || fail "create sticky/ugone failed"
    rm -f "$S/ugone" || fail "rm of an own file in the sticky dir failed"
    [ ! -e "$S/ugone" ] || fail "sticky/ugone still there after rm"
}

c_u_ro_dir_create() {
    # shellcheck disable=SC2016 # $1 is the inner shell's
    expect_err "Permission denied" "create in ro_dir" sh -c ': >"$1"' sh "$R/ro_dir/new"
    expect_err "Permission denied" "mkdir in ro_dir" mkdir "$R/ro_dir/newdir"
}

c_u_ro_dir_unlink() {
    expect_err "Permission denied" "rm ro_dir/file" rm -f "$R/ro_dir/file"
    [ -e "$R/ro_dir/file" ] || fail "ro_dir/file is gone"
}

c_u_ro_dir_rename() {
    expect_err "Permission denied" "mv within ro_dir" mv -f "$R/ro_dir/file" "$R/ro_dir/file2"
    expect_err "Permission denied" "mv out of ro_dir" mv -f "$R/ro_dir/file" "$UDIR/file"
}

c_u_secret_read() {
    expect_err "Permission denied" "cat secret" cat "$R/secret"
}

c_u_secret_write() {
    # shellcheck disable=SC2016 # $1 is the inner shell's
    expect_err "Permission denied" "open secret for append" sh -c 'echo x >>"$1"' sh "$R/secret"
    expect_err "Permission denied" "open secret for write" dd if=/dev/zero of="$R/secret" bs=1 count=1 conv=notrunc
}

c_u_secret_chmod() {
    expect_err "Operation not permitted" "chmod 666 secret" chmod 666 "$R/secret"
}

c_u_secret_chown() {
    expect_err "Operation not permitted" "chown to self of secret" chown "${USER_IDS%:*}" "$R/secret"
}

c_u_sticky_write() {
    # shellcheck disable=SC2016 # $1 is the inner shell's
    out=$(sh -c 'echo "appended by the user" >>"$1"' sh "$S/rootfile" 2>&1) ||
        fail "append to the 0666 sticky/rootfile failed: $out"
    got=$(tr '\n' '|' <"$S/rootfile")
    [ "$got" = "root file|appended by the user|" ] || fail "sticky/rootfile reads '$got'"
}

c_u_sticky_open_trunc() {
    # ">" opens with O_TRUNC: v9fs sends Tsetattr size 0 with mtime and ctime "now"
    # (P9_ATTR_MTIME without P9_ATTR_MTIME_SET), which a user with write permission
    # may ask of a file it does not own, as open(O_TRUNC) on a local filesystem.
    # shellcheck disable=SC2016 # $1 is the inner shell's
    out=$(sh -c 'echo "written by the user" >"$1"' sh "$S/rootfile" 2>&1) ||
        fail "open(O_TRUNC) and write of the 0666 sticky/rootfile failed: $out"
    got=$(cat "$S/rootfile")
    [ "$got" = "written by the user" ] || fail "sticky/rootfile reads '$got'"
}

c_u_sticky_unlink() {
    expect_err "Operation not permitted" "rm root's file in the sticky dir" rm -f "$S/rootfile"
    [ -e "$S/rootfile" ] || fail "sticky/rootfile is gone"
}

c_u_sticky_rename() {
    expect_err "Operation not permitted" "mv root's file within the sticky dir" mv -f "$S/rootfile" "$S/renamed"
    expect_err "Operation not permitted" "mv root's file out of the sticky dir" mv -f "$S/rootfile" "$UDIR/moved"
    [ -e "$S/rootfile" ] || fail "sticky/rootfile is gone"
}

c_u_suid_write() {
    # Appending (no O_TRUNC): the write itself must clear the setuid bit (run.sh checks
    # the mode on the host).
    # shellcheck disable=SC2016 # $1 is the inner shell's
    out=$(sh -c 'echo "appended by the user" >>"$1"' sh "$S/suid" 2>&1) ||
        fail "append to the 04777 sticky/suid failed: $out"
}

c_u_link_secret() {
    # With the host's protected_hardlinks a local user may not link a file it cannot
    # read and write; the guest's own protection is off, so the server decides.
    got=$(cat /proc/sys/fs/protected_hardlinks)
    [ "$got" = 0 ] || fail "the guest's fs.protected_hardlinks is $got: the guest kernel would refuse the link itself"
    if [ "$HOST_LINKS" = 0 ]; then
        ln "$R/secret" "$UDIR/secret-link" || fail "ln secret failed (the host has protected_hardlinks=0)"
        rm -f "$UDIR/secret-link"
    else
        expect_err "Operation not permitted" "ln root's 0600 secret into an own dir" ln "$R/secret" "$UDIR/secret-link"
    fi
}

c_u_link_rootfile() {
    # A root file the user may read and write may be linked, protected_hardlinks or not.
    ln "$S/rootfile" "$UDIR/rootfile-link" || fail "ln of the 0666 sticky/rootfile into an own dir failed"
    got=$(stat -c %h "$S/rootfile")
    [ "$got" = 2 ] || fail "sticky/rootfile has $got links after ln, want 2"
    rm -f "$UDIR/rootfile-link" || fail "rm of the link in an own dir failed"
}

c_u_link_into_ro_dir() {
    expect_err "Permission denied" "ln into ro_dir" ln "$S/ufile" "$R/ro_dir/ulink"
}

# user_setup: an account for USER_IDS in the guest's own /etc/passwd (su needs a name;
# the server sees only the uid the kernel attaches with), and no hard-link protection
# in the guest, so link requests reach the server.
user_setup() {
    echo "root:x:0:0:root:/:/bin/sh" >/etc/passwd
    echo "$GUEST_USER:x:${USER_IDS%:*}:${USER_IDS#*:}::/tmp:/bin/sh" >>/etc/passwd
    echo "root:x:0:" >/etc/group
    echo "$GUEST_USER:x:${USER_IDS#*:}:" >>/etc/group
    echo 0 >/proc/sys/fs/protected_hardlinks
}

# A job on the server's host through its XCPU files, with the shell alone: the open
# clone holds the session while the check runs.
c_xcpu_job() {
    X=/mnt/$XCPU
    exec 4<"$X/clone" || fail "open $X/clone failed"
    read -r id <&4 || fail "reading clone gave no session number"
    echo "/bin/sh -c 'echo hello from \$NF_XCPU_SESSION; read l; echo got \$l; exit 4'" >"$X/$id/argv" ||
        fail "writing argv failed"
    echo exec >"$X/$id/ctl" || fail "writing exec to ctl failed ($(cat "$X/$id/state"))"
    echo guest-line >"$X/$id/stdin" || fail "writing stdin failed"
    got=$(cat "$X/$id/wait") || fail "reading wait failed"
    [ "$got" = "exit 4" ] || fail "wait says '$got', want 'exit 4'"
    line=$(grep "^$id " "$X/procs") || fail "procs does not list session $id"
    # The job sees its session's number on the host that runs it: $id, or where the
    # server placed the session on another host (a gateway's procs line is
    # "ID HOST N"), that host's number N.
    sid=$(echo "$line" | awk 'NF == 3 && $3 ~ /^[0-9]+$/ { print $3 }')
    sid=${sid:-$id}
    out=$(cat "$X/$id/stdout" | tr '\n' '|') || fail "reading stdout failed"
    [ "$out" = "hello from $sid|got guest-line|" ] || fail "stdout '$out', want 'hello from $sid|got guest-line|' (procs: $line)"
    echo wipe >"$X/$id/ctl" || fail "writing wipe failed"
    exec 4<&-
    [ ! -e "$X/$id" ] || fail "session $id still there after wipe"
}

if [ "${1:-}" = one ]; then
    "c_$2"
    exit $?
fi

run() { # run NAME [user]: c_NAME in its own process (as the test user with "user")
    if [ "${2:-}" = user ]; then
        out=$(timeout -s KILL "$CHECK_TIMEOUT" su -s /bin/sh "$GUEST_USER" -c "sh $0 one $1" 2>&1 </dev/null)
    else
        out=$(timeout -s KILL "$CHECK_TIMEOUT" sh "$0" one "$1" 2>&1)
    fi
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "KTEST ok $1"
    else
        why=$(printf '%s\n' "$out" | sed '/^$/d' | tail -n 1)
        [ $rc -ge 128 ] && why="killed after ${CHECK_TIMEOUT}s (hung?) $why"
        echo "KTEST FAIL $1 ${why:-exit status $rc}"
    fi
}

# ---- blocked read interrupted by a signal (Tflush) ----
# A reader opens and reads BLOCK; a prober waits until the reader sleeps inside a 9P
# request (p9_client_rpc in /proc/PID/wchan or stack), sends SIGINT, and requires the
# reader to exit within FLUSH_WAIT seconds. The kernel answers the signal by sending
# Tflush for the pending tag and waiting (uninterruptibly) for Rflush, so a server that
# never answers the flush leaves the reader stuck for good: the prober then reports the
# failure and powers the guest off itself.
# The reader runs in the foreground: background jobs of a shell without job control
# ignore SIGINT, which would make the signal a no-op.
flush_check() {
    name=flush_blocked_read
    if [ ! -e "$BLOCK" ]; then
        echo "KTEST FAIL $name $BLOCK does not exist"
        return
    fi
    if [ -p "$BLOCK" ]; then
        echo "KTEST FAIL $name $BLOCK is a FIFO: the kernel serves FIFO I/O locally, no 9P request would block"
        return
    fi
    rm -f /tmp/rdr.pid /tmp/flush.res
    (
        i=0
        while [ ! -s /tmp/rdr.pid ] && [ $i -lt 100 ]; do
            sleep 0.1
            i=$((i + 1))
        done
        pid=$(cat /tmp/rdr.pid 2>/dev/null)
        if [ -z "$pid" ]; then
            echo "FAIL the reader did not start" >/tmp/flush.res
            exit 0
        fi
        i=0
        op=""
        while [ "$i" -lt 150 ]; do
            if ! kill -0 "$pid" 2>/dev/null; then
                echo "FAIL the reader of $BLOCK finished without blocking" >/tmp/flush.res
                exit 0
            fi
            wchan=$(cat "/proc/$pid/wchan" 2>/dev/null)
            stack=$(cat "/proc/$pid/stack" 2>/dev/null)
            case "$wchan $stack" in
            *p9_client_rpc* | *p9_client_zc_rpc*)
                op=$(echo "$stack" | grep -o 'p9_client_[a-z_]*' | grep -v '_rpc$' | head -n 1)
                op=${op:-$wchan}
                break
                ;;
            esac
            sleep 0.1
            i=$((i + 1))
        done
        if [ -z "$op" ]; then
            echo "FAIL the reader of $BLOCK is not waiting in a 9P request after 15 s (wchan: $wchan)" >/tmp/flush.res
            kill -KILL "$pid" 2>/dev/null
            exit 0
        fi
        # Still asleep in the same 9P request a second later: blocked, not just slow.
        sleep 1
        wchan=$(cat "/proc/$pid/wchan" 2>/dev/null)
        stack=$(cat "/proc/$pid/stack" 2>/dev/null)
        case "$wchan $stack" in
        *"$op"*) ;;
        *)
            echo "FAIL the reader of $BLOCK left $op within 1 s (not blocked; wchan now: ${wchan:-none})" >/tmp/flush.res
            exit 0
            ;;
        esac
        t0=$(uptime_s)
        kill -INT "$pid"
        while kill -0 "$pid" 2>/dev/null; do
            dt=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }')
            if awk -v d="$dt" -v w="$FLUSH_WAIT" 'BEGIN { exit !(d > w) }'; then
                echo "KTEST FAIL $name reader blocked in $op still there ${FLUSH_WAIT}s after SIGINT (Tflush not answered?)"
                echo "KTEST FAIL aborted the remaining checks (a reader is stuck in 9P); powering off"
                sync
                poweroff -f
                exit 0
            fi
            sleep 0.1
        done
        dt=$(awk -v a="$t0" -v b="$(uptime_s)" 'BEGIN { printf "%.1f", b - a }')
        echo "ok blocked in $op, exited ${dt}s after SIGINT" >/tmp/flush.res
    ) &
    prober=$!
    sh -c 'echo $$ >/tmp/rdr.pid; exec cat "$1" >/dev/null' sh "$BLOCK"
    rc=$?
    wait "$prober"
    res=$(cat /tmp/flush.res 2>/dev/null)
    case "$res" in
    ok*)
        if [ "$rc" -eq 130 ]; then
            echo "KTEST ok $name ${res#ok }"
        else
            echo "KTEST FAIL $name the reader exited with status $rc, not killed by SIGINT (130) (${res#ok })"
        fi
        ;;
    FAIL*) echo "KTEST FAIL $name ${res#FAIL }" ;;
    *) echo "KTEST FAIL $name no result from the prober (reader status $rc)" ;;
    esac
}

for c in ls_root cat stat statfs read_big read_offset subdir mkdir echo_write echo_append \
    cp dd_write dd_notrunc truncate chmod rename symlink readdir_many fifo rm host_write; do
    run "$c"
done
[ -s /tmp/bigsum ] && echo "KTEST info bigsum $(cat /tmp/bigsum)"
if [ -n "$XCPU" ]; then
    run xcpu_job
else
    echo "KTEST info the XCPU check did not run (no nf9p.xcpu)"
fi
if [ -n "$USER_IDS" ]; then
    user_setup
    for c in identity sticky_create chmod_own chown_own_to_root unlink_own ro_dir_create \
        ro_dir_unlink ro_dir_rename secret_read secret_write secret_chmod secret_chown \
        sticky_write sticky_open_trunc sticky_unlink sticky_rename suid_write link_secret \
        link_rootfile link_into_ro_dir; do
        run "u_$c" user
    done
else
    echo "KTEST info the permission checks did not run (no nf9p.user)"
fi
flush_check
run after_flush
cd /
if out=$(umount /mnt 2>&1); then
    echo "KTEST ok umount"
else
    echo "KTEST FAIL umount $out"
fi
exit 0
