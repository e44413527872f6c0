#!/usr/bin/env bash
# Starting a program on N hosts: ninefold's launchers against pdcp + pdsh, Open MPI's
# mpirun and Slurm, measured in the same run, alternating, with the targets
# (bench/spawn_report.py).
#
# usage: bench/compare-spawn.sh [--hosts LIST] [--sizes LIST] [--repeats R]
#                               [--tools LIST] [--fanout F] [--exec-fanout K]
#                               [--timeout S] [--out DIR]
#
#   --hosts LIST     host counts N, default 8,16,32,64 (namespace hosts: as many as the
#                    largest N are brought up once; each measurement uses the first N)
#   --sizes LIST     binary sizes in bytes, default 65536,1048576,8388608,16777216
#   --repeats R      samples per (tool, N, size), default 3; the order of the tools
#                    alternates from one sample to the next
#   --tools LIST     any of pdsh,mpirun,nf-ssh,nf-exec,slurm (default all)
#   --fanout F       pdsh / pdcp fan-out (-f), default 32 (pdsh's own default)
#   --exec-fanout K  nf exec --fanout K, where this build's nf exec has it; default:
#                    nf exec's own default
#   --timeout S      limit of one sample, default 300 s (a sample over it fails)
#   --out DIR        default bench/out/compare-spawn-<UTC timestamp>/
#
# The program is bench/spawn/prog.c (exits 0), built with cc and padded with random
# bytes after the ELF image to each size. A sample is the wall-clock time from the start
# of the copy to the exit of the last copy; each side copies the binary to every host:
#   pdsh     pdcp -R ssh (to the host's own disk), then pdsh -R ssh -S runs it everywhere
#   mpirun   Open MPI's mpirun over ssh, tree spawn on (--mca plm_rsh_no_tree_spawn 0,
#            routed radix at its default), 1 rank per host from a hostfile of the
#            hosts' addresses, --preload-binary when it works here (probed once; Open
#            MPI 4.1's preload fails with "could not access or execute an executable:
#            ./prog" on Debian 12), else pdcp then mpirun of the copy (said in
#            summary.txt and spawn.json)
#   nf-ssh   pdcp as for pdsh, then nf run --hosts A0:1,... --remote 'ssh -F CONFIG
#            {host}' --pmi-bind A0 (nf run does not copy)
#   nf-exec  nf exec over TLS to an nf serve on every host (certificates from nf cert;
#            jobs run as the system account nf-bench, made if missing), which copies
#            and runs in one command, through its tree (--exec-fanout); skipped, and said so, when this
#            build has no `nf exec`
#   slurm    salloc -N N -w HOSTS, inside it sbcast to each host's disk and srun (one
#            slurmctld in host 0, a slurmd per host, munged; slurm-wlm 22.05); when
#            Slurm cannot be brought up here, the error is recorded and the side skipped
# For the sides that copy and run in two commands, both are timed (copy_s, run_s).
#
# The hosts are network namespaces (nf-netns, from nf-testkit), each also with its own
# mount and UTS namespace (bench/spawn/host-shell.sh): its own host name, and its own
# "disk" (out/nodes/HOST bind-mounted on out/node), so a copy to every host writes one
# file per host. Each host runs a real sshd on its address (per-run host and user key,
# config and known_hosts in the out dir; nothing under /etc/ssh or ~/.ssh); every
# launcher runs in host 0 and reaches host 0 itself over the network too. Everything
# started is stopped when this script ends, however it ends. Installs what it lacks
# (pdsh, openssh-server, openmpi-bin, slurmd, slurmctld, slurm-client, munge, and
# python3-matplotlib for the plot) with apt-get, without recommended packages, after
# saying which and what they pull in; NF_BENCH_NO_INSTALL=1 installs nothing (bench/lib.sh
# apt_install). Needs root.
#
# nf comes from NF_BIN_DIR (a directory with nf and nf-netns) when set, else from a
# cargo build --release of this checkout.
#
# Outputs in the out directory: spawn.csv and spawn.json (every sample: tool, hosts,
# size, repeat, seconds, ok, copy_s, run_s; the JSON adds the setup, notes and the load
# average at start and end), summary.txt (medians, nf-exec / pdsh ratios, the
# targets), spawn.png (time against hosts, one line per tool, one panel per size),
# logs/ (each sample's output), and the daemons' logs.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
hosts=8,16,32,64
sizes=65536,1048576,8388608,16777216
repeats=3
tools=pdsh,mpirun,nf-ssh,nf-exec,slurm
fanout=32
exec_fanout=""
timeout=300
out=""
parse_opts "hosts sizes repeats tools fanout exec-fanout timeout out" "$@"

check_sizes "$hosts"
check_sizes "$sizes"
check_int --repeats "$repeats"
check_int --fanout "$fanout"
check_int --timeout "$timeout"
[[ -z $exec_fanout ]] || check_int --exec-fanout "$exec_fanout"
check_words --tools "$tools" pdsh mpirun nf-ssh nf-exec slurm
[[ $(id -u) -eq 0 ]] || die "network namespaces, mounts and sshd need root; run as root"
max_hosts=0
for n in ${hosts//,/ }; do
    ((n <= 250)) || die "--hosts: at most 250 hosts, not $n"
    ((n > max_hosts)) && max_hosts=$n
done
has_tool() { [[ ,$tools, == *,$1,* ]]; }

# What this machine lacks, installed in one apt-get.
pkgs=()
want() { command -v "$1" >/dev/null 2>&1 || pkgs+=("$2"); }
want cc gcc
want ip iproute2
want nsenter util-linux
want ssh-keygen openssh-client
want /usr/sbin/sshd openssh-server
want python3 python3
if has_tool pdsh || has_tool nf-ssh || has_tool mpirun; then
    want pdsh pdsh
    want pdcp pdsh
fi
has_tool mpirun && want mpirun openmpi-bin
if has_tool slurm; then
    want slurmd slurmd
    want slurmctld slurmctld
    want sbcast slurm-client
    want munged munge
fi
if ! /usr/bin/python3 -c 'import matplotlib' 2>/dev/null && ! python3 -c 'import matplotlib' 2>/dev/null; then
    pkgs+=(python3-matplotlib)
fi
if ((${#pkgs[@]})); then
    apt_install "${pkgs[@]}" || true
fi

out_dir compare-spawn
git_arg
if [[ -n ${NF_BIN_DIR:-} ]]; then
    release=$(cd "$NF_BIN_DIR" && pwd)
else
    echo "compare-spawn: building nf, nf-netns (release) ..." >&2
    build_release nf-cli nf-testkit
fi
nf=$release/nf
need_built "$nf" "$release/nf-netns"

node=$out/node     # every host's own disk is bind-mounted here in its mount namespace
mkdir -p "$node" "$out/nodes" "$out/bin" "$out/logs" "$out/ssh"
csv=$out/spawn.csv
echo "tool,hosts,size,repeat,seconds,ok,copy_s,run_s" >"$csv"
notes=$out/notes.txt # one "key<TAB>value" line per fact; spawn_report.py reads it
: >"$notes"
note() { printf '%s\t%s\n' "$1" "$2" >>"$notes"; }
note load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
note cores "$(nproc)"
note git "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo none)"
note nf "$nf"
note pdsh_fanout "$fanout"

# The programs, one per size.
cc -O2 -o "$out/bin/prog" "$repo/bench/spawn/prog.c"
base_size=$(stat -c %s "$out/bin/prog")
for s in ${sizes//,/ }; do
    cp "$out/bin/prog" "$out/bin/prog-$s"
    if ((s > base_size)); then
        head -c $((s - base_size)) /dev/urandom >>"$out/bin/prog-$s"
    else
        note "size_$s" "the program is already $base_size B; not padded"
    fi
    "$out/bin/prog-$s" || die "the padded program of $s B does not run"
done

# ---------------------------------------------------------------------------------
# Hosts, their namespaces, and the cleanup of everything started.
declare -a hold_pids=() daemon_pids=()
made_run_sshd=0
cleanup() {
    local p
    set +e
    for p in "${daemon_pids[@]}"; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in "${daemon_pids[@]}"; do
        timeout 10 tail --pid="$p" -f /dev/null 2>/dev/null || kill -KILL "$p" 2>/dev/null
    done
    for p in "${hold_pids[@]}"; do
        kill -KILL "$p" 2>/dev/null
    done
    for p in "${daemon_pids[@]}" "${hold_pids[@]}"; do
        timeout 5 tail --pid="$p" -f /dev/null 2>/dev/null
    done
    ((made_run_sshd)) && rmdir /run/sshd 2>/dev/null
    netns_hosts_release
}
netns_hosts "$release/nf-netns" "$max_hosts"
trap cleanup EXIT
echo "compare-spawn: $max_hosts hosts ${H[0]} ... on $subnet" >&2

for ((i = 0; i < max_hosts; i++)); do
    mkdir -p "$out/nodes/${H[i]}"
    # (nsenter --net, not ip netns exec: that remounts /sys, and slurmd then finds no
    # /sys/fs/cgroup)
    unshare -m -u --propagation private nsenter --net="/var/run/netns/${H[i]}" \
        "$repo/bench/spawn/host-shell.sh" "${H[i]}" "$out/nodes/${H[i]}" "$node" &
    hold_pids[i]=$!
    disown $!
done
# Each holder has mounted its disk once its host name is set and the mount is there.
for ((i = 0; i < max_hosts; i++)); do
    for ((t = 0; ; t++)); do
        h=$(nsenter -t "${hold_pids[i]}" -u hostname 2>/dev/null || true)
        [[ $h == "${H[i]}" ]] && nsenter -t "${hold_pids[i]}" -m mountpoint -q "$node" && break
        ((t < 100)) || die "host ${H[i]} did not come up"
        sleep 0.05
    done
done
# "${in0[@]}" CMD runs CMD in host 0 (its network, mount and UTS namespaces): every
# launcher runs there. on I CMD does the same in host I (an exec: $! is CMD's pid).
in0=(nsenter -t "${hold_pids[0]}" -n -m -u)
on() {
    local i=$1
    shift
    exec nsenter -t "${hold_pids[i]}" -n -m -u "$@"
}

# Waits (at most 10 s) until something listens on tcp PORT in host I.
wait_listen() { # I PORT
    local tries=0
    until (on "$1" ss -Hltn "sport = :$2") | grep -q .; do
        ((++tries < 200)) || return 1
        sleep 0.05
    done
}

# sshd on every host, with this run's keys.
ssh_dir=$out/ssh
ssh-keygen -q -t ed25519 -N "" -C nfspawn-host -f "$ssh_dir/host_key"
ssh-keygen -q -t ed25519 -N "" -C nfspawn-user -f "$ssh_dir/id"
cp "$ssh_dir/id.pub" "$ssh_dir/authorized_keys"
cat >"$ssh_dir/sshd_config" <<EOF
HostKey $ssh_dir/host_key
AuthorizedKeysFile $ssh_dir/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
MaxStartups 1000
MaxSessions 100
LogLevel ERROR
EOF
ssh_client_config "$ssh_dir"
if [[ ! -d /run/sshd ]]; then
    mkdir -p /run/sshd # sshd's privilege-separation directory
    made_run_sshd=1
fi
for ((i = 0; i < max_hosts; i++)); do
    on "$i" /usr/sbin/sshd -D -e -f "$ssh_dir/sshd_config" -o "ListenAddress=${A[i]}" \
        -o "PidFile=$ssh_dir/sshd-$i.pid" >"$ssh_dir/sshd-$i.log" 2>&1 &
    daemon_pids+=($!)
    disown $!
done
for ((i = 0; i < max_hosts; i++)); do
    wait_listen "$i" 22 || die "sshd did not start in host $i; see $ssh_dir/sshd-$i.log"
done
"${in0[@]}" ssh -F "$ssh_dir/config" "${A[max_hosts - 1]}" true ||
    die "ssh from host 0 to host $((max_hosts - 1)) failed"
export PDSH_SSH_ARGS="-F $ssh_dir/config -x -l%u %h"
note ssh "OpenSSH $(ssh -V 2>&1 | head -1)"

addr_list() { # N [SUFFIX]: the first N addresses, comma-separated, each + SUFFIX
    local i l=""
    for ((i = 0; i < $1; i++)); do
        l+=${l:+,}${A[i]}${2:-}
    done
    echo "$l"
}
host_list() { # N: the first N host names, comma-separated
    local i l=""
    for ((i = 0; i < $1; i++)); do
        l+=${l:+,}${H[i]}
    done
    echo "$l"
}
bound=(timeout --kill-after=10 "$timeout")

# Long commands run in the background and are waited for, so a signal ends the script
# at once (bash defers a trap while a foreground command runs).
run() {
    "$@" &
    wait $!
}

now() { echo "$EPOCHREALTIME"; }
since() { python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.4f}")' "$1" "$2"; }

# ---------------------------------------------------------------------------------
# The sides. Each sets ok (1/0), copy_s and run_s (empty when one command does both),
# and total (seconds); output goes to the log file $log.
pdcp_to() { # N SIZE: copy the program to every host's disk
    run "${bound[@]}" "${in0[@]}" pdcp -R ssh -f "$fanout" -w "$(addr_list "$1")" \
        "$out/bin/prog-$2" "$node/prog-$2" >>"$log" 2>&1
}

side_pdsh() { # N SIZE
    local t0 t1 t2 rc=0
    t0=$(now)
    pdcp_to "$1" "$2" || rc=$?
    t1=$(now)
    if ((rc == 0)); then
        run "${bound[@]}" "${in0[@]}" pdsh -R ssh -S -f "$fanout" -w "$(addr_list "$1")" \
            "$node/prog-$2" >>"$log" 2>&1 || rc=$?
    fi
    t2=$(now)
    copy_s=$(since "$t0" "$t1") run_s=$(since "$t1" "$t2") total=$(since "$t0" "$t2")
    ok=$((rc == 0))
}

mpi_preload=0
mpirun_cmd() { # HOSTFILE N: mpirun in host 0 over ssh to N hosts, 1 rank each
    mpirun_cmd=("${in0[@]}" mpirun --allow-run-as-root
        --mca plm_rsh_agent ssh --mca plm_rsh_args "-F $ssh_dir/config"
        --mca plm_rsh_no_tree_spawn 0
        --mca oob_tcp_if_include "$subnet" --mca btl_tcp_if_include "$subnet"
        --mca orte_tmpdir_base "$node/tmp"
        --hostfile "$1" -np "$2" --map-by node --bind-to none)
}
side_mpirun() { # N SIZE
    local t0 t1 t2 rc=0
    mpirun_cmd "$out/hostfile-$1" "$1"
    t0=$(now)
    if ((mpi_preload)); then
        run "${bound[@]}" "${mpirun_cmd[@]}" --preload-binary "$out/bin/prog-$2" >>"$log" 2>&1 || rc=$?
        t2=$(now)
        copy_s="" run_s="" total=$(since "$t0" "$t2")
    else
        pdcp_to "$1" "$2" || rc=$?
        t1=$(now)
        ((rc)) || run "${bound[@]}" "${mpirun_cmd[@]}" "$node/prog-$2" >>"$log" 2>&1 || rc=$?
        t2=$(now)
        copy_s=$(since "$t0" "$t1") run_s=$(since "$t1" "$t2") total=$(since "$t0" "$t2")
    fi
    ok=$((rc == 0))
}

side_nf_ssh() { # N SIZE
    local t0 t1 t2 rc=0
    t0=$(now)
    pdcp_to "$1" "$2" || rc=$?
    t1=$(now)
    if ((rc == 0)); then
        run "${bound[@]}" "${in0[@]}" "$nf" run --hosts "$(addr_list "$1" :1)" \
            --remote "ssh -F $ssh_dir/config {host}" --pmi-bind "${A[0]}" \
            --timeout "$timeout" -- "$node/prog-$2" >>"$log" 2>&1 || rc=$?
    fi
    t2=$(now)
    copy_s=$(since "$t0" "$t1") run_s=$(since "$t1" "$t2") total=$(since "$t0" "$t2")
    ok=$((rc == 0))
}

exec_port=5640
exec_args=()
side_nf_exec() { # N SIZE
    local t0 t2 rc=0 i targets=""
    for ((i = 0; i < $1; i++)); do
        targets+=${targets:+,}tls:${A[i]}:$exec_port
    done
    t0=$(now)
    run "${bound[@]}" "${in0[@]}" "$nf" exec "${exec_args[@]}" "$targets" -- "$out/bin/prog-$2" \
        >>"$log" 2>&1 || rc=$?
    t2=$(now)
    copy_s="" run_s="" total=$(since "$t0" "$t2")
    ok=$((rc == 0))
}

side_slurm() { # N SIZE
    local t0 t2 rc=0
    t0=$(now)
    run "${bound[@]}" "${in0[@]}" env SLURM_CONF="$slurm_conf" salloc -N "$1" -w "$(host_list "$1")" \
        --quiet -- bash -c "sbcast -f '$out/bin/prog-$2' '$node/prog-$2' && \
            srun -N $1 --ntasks-per-node=1 '$node/prog-$2'" >>"$log" 2>&1 || rc=$?
    t2=$(now)
    copy_s="" run_s="" total=$(since "$t0" "$t2")
    ok=$((rc == 0))
}

# ---------------------------------------------------------------------------------
# Setup of the sides that need more than ssh; a side that cannot run here is skipped
# with its reason in notes (spawn.json, summary.txt).
active=()
skip() { # TOOL REASON
    note "skipped_$1" "$2"
    echo "compare-spawn: $1 skipped: $2" >&2
}
for n in ${hosts//,/ }; do
    for ((i = 0; i < n; i++)); do
        echo "${A[i]} slots=1"
    done >"$out/hostfile-$n"
done

has_tool pdsh && active+=(pdsh)
has_tool nf-ssh && active+=(nf-ssh)

if has_tool mpirun; then
    # Does --preload-binary work here? One try on two hosts.
    log=$out/logs/mpirun-preload-probe.txt
    : >"$log"
    for ((i = 0; i < max_hosts; i++)); do mkdir -p "$out/nodes/${H[i]}/tmp"; done
    n_probe=$((max_hosts < 2 ? max_hosts : 2))
    printf '%s slots=1\n' "${A[@]:0:n_probe}" >"$out/hostfile-probe"
    mpirun_cmd "$out/hostfile-probe" "$n_probe"
    if run "${bound[@]}" "${mpirun_cmd[@]}" --preload-binary "$out/bin/prog" >>"$log" 2>&1; then
        mpi_preload=1
        note mpirun_copy "--preload-binary (mpirun copies the binary)"
    else
        why=$(grep -m1 -A3 'unable to launch\|rror' "$log" | tr '\n' ' ' | tr -s ' ' || true)
        note mpirun_copy "pdcp, then mpirun of the copy: --preload-binary failed here (${why:-see logs/mpirun-preload-probe.txt})"
    fi
    note mpirun "$(mpirun --version 2>&1 | head -1); tree spawn on, routed radix $(ompi_info --param routed radix --level 9 2>/dev/null | sed -n 's/.*"routed_radix" (current value: "\([0-9]*\)".*/\1/p')"
    active+=(mpirun)
fi

if has_tool nf-exec; then
    if ! "$nf" exec --help >"$out/logs/nf-exec-help.txt" 2>&1; then
        skip nf-exec "not available in this build ($(head -1 "$out/logs/nf-exec-help.txt"))"
    else
        certs=$out/certs
        mkdir -p "$certs"
        "$nf" cert ca --dir "$certs" >/dev/null
        # Jobs run as an ordinary account: a node hands a session on for a user but
        # never for root (tree spawn), so the side uses a system account of its own.
        id -u nf-bench >/dev/null 2>&1 ||
            useradd --system --no-create-home --shell /usr/sbin/nologin nf-bench
        "$nf" cert user nf-bench --dir "$certs" >/dev/null
        for ((i = 0; i < max_hosts; i++)); do
            "$nf" cert node "${A[i]}" --dir "$certs" >/dev/null
        done
        for ((i = 0; i < max_hosts; i++)); do
            mkdir -p "$out/nodes/${H[i]}/export"
            on "$i" "$nf" serve -f --unix "$node/nf.sock" --tcp "${A[i]}:$exec_port" \
                --tls-cert "$certs/${A[i]}.pem" --tls-key "$certs/${A[i]}.key" \
                --tls-client-ca "$certs/ca.pem" --export "$node/export" \
                --mem-registry "$node/mem" >"$out/logs/nf-serve-$i.txt" 2>&1 &
            daemon_pids+=($!)
            disown $!
        done
        served=1
        for ((i = 0; i < max_hosts; i++)); do
            wait_listen "$i" "$exec_port" || { served=0 && break; }
        done
        exec_args=(--cert "$certs/nf-bench.pem" --key "$certs/nf-bench.key" --ca "$certs/ca.pem")
        if [[ -n $exec_fanout ]] && grep -q -- --fanout "$out/logs/nf-exec-help.txt"; then
            exec_args+=(--fanout "$exec_fanout")
        fi
        if ((served)); then
            active+=(nf-exec)
            note nf_exec "nf exec ${exec_args[*]//$certs\//} (fan-out: ${exec_fanout:-nf exec default})"
        else
            skip nf-exec "nf serve did not listen in host $i; see logs/nf-serve-$i.txt"
        fi
    fi
fi

if has_tool slurm; then
    # shellcheck source=bench/spawn/slurm.sh
    source "$repo/bench/spawn/slurm.sh"
    if slurm_up; then
        active+=(slurm)
        note slurm "$(sinfo --version 2>&1); TreeWidth $slurm_tree_width"
    else
        skip slurm "$slurm_error"
    fi
fi

((${#active[@]})) || die "no side can run here; see $notes"
echo "compare-spawn: sides ${active[*]}" >&2

# ---------------------------------------------------------------------------------
# The measurements: for each N and size, R samples; the order of the sides alternates.
declare -A fails=()
k=0
for n in ${hosts//,/ }; do
    for s in ${sizes//,/ }; do
        for ((r = 1; r <= repeats; r++)); do
            k=$((k + 1))
            turn_order "$k" "${active[@]}"
            for tool in "${order[@]}"; do
                if ((${fails[$tool]:-0} >= 3)); then
                    continue
                fi
                rm -rf "$out"/nodes/*/prog-* "$out"/nodes/*/tmp/* "$out"/nodes/*/export/*
                log=$out/logs/$tool-$n-$s-$r.txt
                : >"$log"
                ok=0 copy_s="" run_s="" total=""
                "side_${tool//-/_}" "$n" "$s"
                echo "$tool,$n,$s,$r,$total,$ok,$copy_s,$run_s" >>"$csv"
                printf 'compare-spawn: %-7s N=%-3d %9d B #%d  %8s s%s\n' "$tool" "$n" "$s" "$r" \
                    "$total" "$( ((ok)) || echo "  FAILED (see $log)")" >&2
                if ((ok)); then
                    fails[$tool]=0
                else
                    fails[$tool]=$((${fails[$tool]:-0} + 1))
                    ((fails[$tool] < 3)) || note "gave_up_$tool" "three failures in a row, from N=$n size=$s; see $log"
                fi
            done
        done
    done
done
rm -rf "$out"/nodes/*/prog-*

note load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$repo/bench/spawn_report.py" --dir "$out" | tee "$out/summary.txt"
plot_py=""
for p in python3 /usr/bin/python3; do
    if "$p" -c 'import matplotlib' 2>/dev/null; then
        plot_py=$p
        break
    fi
done
if [[ -n $plot_py ]]; then
    "$plot_py" "$repo/bench/spawn/plot.py" "$out/spawn.csv" "$out/spawn.png" &&
        echo "compare-spawn: plot in $out/spawn.png" >&2
else
    echo "compare-spawn: no matplotlib; no plot" >&2
fi
echo "compare-spawn: results in $out" >&2
