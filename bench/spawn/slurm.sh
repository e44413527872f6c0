# shellcheck shell=bash disable=SC2154 # sourced by bench/compare-spawn.sh, which sets
# out, node, H, A, max_hosts, hold_pids, daemon_pids and the functions on, note
#
# slurm_up   brings up a Slurm cluster on the namespace hosts, everything under
#            $out/slurm: munged (its own key and socket), slurmctld in host 0, a slurmd
#            in every host (NodeName = NodeHostname = the host's name, NodeAddr its
#            address; spool, pid and log on the host's own disk, out/nodes/HOST/slurmd),
#            and waits until every node is idle. Sets slurm_conf (export SLURM_CONF to
#            use it) and slurm_tree_width. Returns 1 with slurm_error set to what
#            stopped it (the first error line of the daemon or command that failed).
slurm_tree_width=50
slurm_fail() { # MESSAGE [LOG]
    slurm_error=$1
    if [[ -n ${2:-} && -s $2 ]]; then
        local line
        line=$(grep -m1 -iE 'error|fatal|failed|refused|denied|invalid' "$2" || tail -1 "$2")
        slurm_error+=": $(echo "$line" | tr -s ' ' | cut -c1-300) (see ${2#"$out"/})"
    fi
    return 1
}

slurm_up() {
    local d=$out/slurm i nodes="" t
    mkdir -p "$d/state" "$d/munge"
    chmod 700 "$d/munge"
    slurm_conf=$d/slurm.conf
    for bin in munged slurmctld slurmd salloc sbcast srun sinfo; do
        command -v "$bin" >/dev/null 2>&1 || { slurm_fail "$bin not found (apt-get install slurmd slurmctld slurm-client munge)"; return 1; }
    done

    # munged: a unix socket on the shared filesystem, so one serves every host; it runs
    # in host 0 (so it goes with the hosts).
    head -c 1024 /dev/urandom >"$d/munge/munge.key"
    chmod 400 "$d/munge/munge.key"
    on 0 munged -F --force --key-file="$d/munge/munge.key" --socket="$d/munge/munge.sock" \
        --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
        --seed-file="$d/munge/munged.seed" >"$d/munged.out" 2>&1 &
    daemon_pids+=($!)
    disown $!
    for ((t = 0; t < 100; t++)); do
        [[ -S $d/munge/munge.sock ]] && break
        sleep 0.05
    done
    [[ -S $d/munge/munge.sock ]] || { slurm_fail "munged did not start" "$d/munged.out"; return 1; }

    {
        echo "ClusterName=nfspawn"
        echo "SlurmctldHost=${H[0]}(${A[0]})"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        echo "AuthInfo=socket=$d/munge/munge.sock"
        echo "StateSaveLocation=$d/state"
        echo "SlurmctldPidFile=$d/slurmctld.pid"
        echo "SlurmctldLogFile=$d/slurmctld.log"
        echo "SlurmdSpoolDir=$node/slurmd"
        echo "SlurmdPidFile=$node/slurmd/slurmd.pid"
        echo "SlurmdLogFile=$node/slurmd/slurmd.log"
        echo "SlurmctldPort=6817"
        echo "SlurmdPort=6818"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SwitchType=switch/none"
        echo "MpiDefault=none"
        echo "SchedulerType=sched/builtin"
        echo "SelectType=select/linear"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/none"
        echo "ReturnToService=2"
        echo "SlurmdTimeout=300"
        echo "InactiveLimit=0"
        echo "KillWait=5"
        echo "TreeWidth=$slurm_tree_width"
        echo "SlurmdParameters=config_overrides"
        echo "PlugStackConfig=$d/plugstack.conf"
        for ((i = 0; i < max_hosts; i++)); do
            echo "NodeName=${H[i]} NodeHostname=${H[i]} NodeAddr=${A[i]} CPUs=1 State=UNKNOWN"
            nodes+=${nodes:+,}${H[i]}
        done
        echo "PartitionName=all Nodes=$nodes Default=YES MaxTime=INFINITE State=UP"
    } >"$slurm_conf"
    : >"$d/plugstack.conf"
    export SLURM_CONF=$slurm_conf

    on 0 slurmctld -D -c -f "$slurm_conf" >"$d/slurmctld.out" 2>&1 &
    local ctld=$! slurmds=()
    daemon_pids+=("$ctld")
    disown "$ctld"
    for ((i = 0; i < max_hosts; i++)); do
        mkdir -p "$out/nodes/${H[i]}/slurmd"
        on "$i" slurmd -D -f "$slurm_conf" -N "${H[i]}" >"$d/slurmd-$i.out" 2>&1 &
        slurmds[i]=$!
        daemon_pids+=($!)
        disown $!
    done
    # Every node idle within 60 s.
    local idle=0
    for ((t = 0; t < 120; t++)); do
        idle=$("${in0[@]}" sinfo -h -N -t idle -o %N 2>"$d/sinfo.err" | sort -u | wc -l) || idle=0
        ((idle >= max_hosts)) && break
        kill -0 "$ctld" 2>/dev/null || {
            slurm_fail "slurmctld exited" "$d/slurmctld.log"
            [[ -s $d/slurmctld.log ]] || slurm_fail "slurmctld exited" "$d/slurmctld.out"
            return 1
        }
        for ((i = 0; i < max_hosts; i++)); do
            kill -0 "${slurmds[i]}" 2>/dev/null && continue
            slurm_fail "slurmd of ${H[i]} exited" "$out/nodes/${H[i]}/slurmd/slurmd.log"
            [[ -s $out/nodes/${H[i]}/slurmd/slurmd.log ]] || slurm_fail "slurmd of ${H[i]} exited" "$d/slurmd-$i.out"
            return 1
        done
        sleep 0.5
    done
    if ((idle < max_hosts)); then
        "${in0[@]}" sinfo -N >"$d/sinfo.txt" 2>&1 || true
        slurm_fail "only $idle of $max_hosts slurmd nodes idle after 60 s" "$d/slurmctld.log"
        return 1
    fi
    # One job on one host proves the whole path.
    if ! "${in0[@]}" timeout 60 salloc -N 1 -w "${H[0]}" --quiet -- srun -N 1 true >"$d/probe.txt" 2>&1; then
        slurm_fail "a 1-host srun failed" "$d/probe.txt"
        return 1
    fi
}
