#!/bin/sh
# /init of the kernel 9P harness's initramfs (busybox sh). Mounts the 9P server that the
# host connected to the virtio-serial port named "nf9p" on /mnt with trans=fd (through a
# pipe relay, see below), runs /guest-test.sh, and powers off. Every result is a
# "KTEST ..." line on the console.
#
# Kernel command line parameters (set by run.sh):
#   nf9p.port=NAME      virtio-serial port name (default nf9p)
#   nf9p.msize=N        9P msize asked for (default 65536)
#   nf9p.aname=NAME     attach name (default: none)
#   nf9p.mopts=A,B      extra mount options
# The others (nf9p.subdir, nf9p.block, ...) are read by /guest-test.sh.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t tmpfs tmpfs /tmp

finish() {
    echo "KTEST done"
    sync
    poweroff -f
    sleep 5
}

param() { # param KEY DEFAULT: value of nf9p.KEY on the kernel command line
    v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^nf9p\.$1=//p" | tail -n 1)
    echo "${v:-$2}"
}

PORT=$(param port nf9p)
MSIZE=$(param msize 65536)
ANAME=$(param aname "")
MOPTS=$(param mopts "")

# Load modules in the order the host resolved from modules.dep.
while read -r ko; do
    [ -n "$ko" ] || continue
    if ! out=$(insmod "/lib/modules/$ko" 2>&1); then
        case "$out" in
        *"File exists"*) ;; # already loaded (or built in)
        *)
            echo "KTEST FAIL modules insmod $ko: $out"
            finish
            ;;
        esac
    fi
done </etc/modules.order
echo "KTEST ok modules"

# Find the virtio-serial port by name: /sys/class/virtio-ports/vportXpY/name.
dev=""
i=0
while [ $i -lt 100 ]; do
    for n in /sys/class/virtio-ports/*/name; do
        [ -r "$n" ] || continue
        if [ "$(cat "$n")" = "$PORT" ]; then
            dev=/dev/$(basename "$(dirname "$n")")
        fi
    done
    [ -n "$dev" ] && [ -c "$dev" ] && break
    dev=""
    i=$((i + 1))
    sleep 0.1
done
if [ -z "$dev" ]; then
    ports=""
    for n in /sys/class/virtio-ports/*; do
        [ -e "$n/name" ] && ports="$ports $(basename "$n")=$(cat "$n/name")"
    done
    echo "KTEST FAIL port no virtio-serial port named $PORT (ports:${ports:- none})"
    finish
fi
echo "KTEST ok port $dev"

# trans=fd needs files the kernel can read and write itself (kernel_read/kernel_write
# want read_iter/write_iter); a virtio-serial port has only read/write ("kernel write
# not supported for file /vport0p1"). So the 9P stream goes through two pipes, and two
# relay processes copy between the pipes and the port (one open file description:
# virtio_console allows a single open of a port).
opts="trans=fd,rfdno=3,wfdno=4,version=9p2000.L,msize=$MSIZE"
[ -n "$ANAME" ] && opts="$opts,aname=$ANAME"
[ -n "$MOPTS" ] && opts="$opts,$MOPTS"
mkfifo /tmp/9p.in /tmp/9p.out
exec 5<>"$dev"
cat <&5 >/tmp/9p.in &   # port -> kernel
cat </tmp/9p.out >&5 &  # kernel -> port
exec 3</tmp/9p.in 4>/tmp/9p.out 5>&-
if out=$(mount -t 9p -o "$opts" nf9p /mnt 2>&1); then
    # The kernel keeps its own references to the pipes; close ours so that no child
    # process can read from the 9P stream.
    exec 3<&- 4>&-
    echo "KTEST ok mount $opts (virtio-serial $dev relayed through pipes)"
else
    exec 3<&- 4>&-
    echo "KTEST FAIL mount $opts: $out"
    dmesg | tail -n 20
    finish
fi

sh /guest-test.sh
rc=$?
[ "$rc" -eq 0 ] || echo "KTEST FAIL guest-test exited with status $rc before the end"
finish
