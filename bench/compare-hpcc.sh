#!/usr/bin/env bash
# External references: Debian's hpcc (HPC Challenge, over Open MPI) against
# nf bench rings, NetPIPE (over Open MPI and over TCP) against nf bench pingpong, and
# ScaLAPACK's pdgemm against nf bench app, on the same ranks and hosts, in the same
# run, alternating, with ratios ours / theirs.
#
# usage: bench/compare-hpcc.sh [--parts LIST] [--np N] [--hosts 1|2] [--alternations K]
#                              [--orderings R] [--sizes LIST] [--iters N] [--warmup W]
#                              [--nf-transports LIST] [--n N] [--nb NB] [--reps R]
#                              [--timeout S] [--out DIR]
#
#   --parts LIST        any of rings,netpipe,app (default all), run in that order
#   --np N              ranks of the rings part, default 2 (NetPIPE is always 2)
#   --hosts H           1 (default): every rank on this machine; 2: two namespace
#                       hosts (nf-netns, from nf-testkit; removed when this script
#                       ends, however it ends; needs root), the first ceil(N/2) ranks
#                       in host 0 and the rest in host 1, the same for both sides
#   --alternations K    rounds, default 3; each round runs every side of a part once,
#                       in the opposite order of the round before
#   --orderings R       random rings of nf bench rings, default 10 (hpcc draws 30 for
#                       latency and 10 for bandwidth)
#   --sizes LIST        nf bench pingpong sizes, default 8 B ... 8 MiB (powers of two);
#                       NetPIPE runs from the smallest to the largest in its own steps
#   --iters N           nf bench pingpong timed round trips per size, default 2000
#                       (fewer above 64 KiB: nf_bench::pingpong::iters_for)
#   --warmup W          its untimed round trips per size, default 200
#   --nf-transports L   NF_TRANSPORTS of ninefold's default-transport runs (rings, and
#                       nf-default of netpipe); default: unset (nf's own default,
#                       shm,ofi,tcp)
#   --n N               app: matrix order, default 2048
#   --nb NB             app: pdgemm's block size, default 128
#   --reps R            app: timed products per run and side (the best counts), default 3
#   --timeout S         limit of every single run, default 300 s
#   --out DIR           default bench/out/compare-hpcc-<UTC timestamp>/
#
# Parts (each a function part_NAME below; another part is one more function, one more
# word in --parts and one more section of bench/hpcc_report.py):
#   rings    hpcc's whole suite under Open MPI's mpirun (hpccinf.txt written here keeps
#            HPL, PTRANS, FFT, STREAM, RandomAccess and DGEMM tiny: N 256, NB 32, a
#            1 x N process grid; a run takes seconds), and nf bench rings with hpcc's
#            sizes (8 B latency, 2,000,000 B bandwidth) under nf run. From hpccoutf.txt:
#            Min/Avg/Max PingPong latency and bandwidth, naturally and randomly ordered
#            ring latency and bandwidth. nf bench rings' figures are recomputed from its
#            per-rank JSON the way hpcc defines them (bench/hpcc_report.py): ring
#            latency = the slowest rank's iteration time / 2 (each iteration sends two
#            messages), ring bandwidth = 2 x 2,000,000 B / the slowest rank's
#            iteration time, random rings: geometric mean over orderings.
#   netpipe  two ranks: NPopenmpi (Debian's netpipe-openmpi; NetPIPE's "NPmpi") under
#            mpirun, NPtcp (netpipe-tcp; receiver and transmitter as two processes,
#            over loopback, or host 1 <- host 0), nf bench pingpong with the default
#            transports and with NF_TRANSPORTS=tcp. NetPIPE runs with -p 0 (no +-3 B
#            perturbations). Its np.out columns are bytes, "Mbps" (2^20 bit/s) and the
#            half round trip in seconds; the report uses bytes and seconds: MB/s =
#            bytes / half round trip / 10^6, latency in us.
#   app      nf bench app (C = A.B, n x n doubles, row blocks in global memory, the
#            next panel fetched while the current one is multiplied; teams of 1 and N
#            ranks) against ScaLAPACK's pdgemm (bench/python/pdgemm.c, a 1 x N BLACS
#            grid, block size NB) on Debian's OpenBLAS (libopenblas0-pthread, fetched
#            with apt-get download into bench/out/openblas; the reference BLAS when that
#            fails, said in the notes), one BLAS thread per rank. GFLOP/s = 2 n^3 / the
#            best product's time on both sides; both check their products exactly. On
#            one host nf bench app also reads its blocks through the node's /mem files
#            (an nf serve started here, shm 9P), alternating with one-sided gets in the
#            same job: files / direct time, the ratio CellFS was measured by.
# Per metric and side the report takes the best of the K rounds (latency: smallest,
# bandwidth: largest), as compare_report.py does; every round's figure is kept in the
# JSON. Ratios are ours / theirs: below 1 is better for latency, above 1 for bandwidth.
# On one host Open MPI uses its defaults (vader), across the namespace hosts pml ob1,
# btl tcp,self (vader,tcp,self within a host); neither side binds ranks to cores, so
# more ranks than cores oversubscribe both (figures then measure the scheduler).
#
# Installs hpcc, netpipe-openmpi, netpipe-tcp, libscalapack-openmpi-dev and
# python3-matplotlib (apt-get, announced first; NF_BENCH_NO_INSTALL=1 skips it) when
# missing. The load average is recorded at the start, around each part and at the end.
# Outputs in the out directory: summary.txt (every table), rings.{json,csv} and
# netpipe.{json,csv,png}, app.{json,csv} (bench/hpcc_report.py; nf bench report DIR
# shows them), notes.txt, and each run's files under rings/, netpipe/ and app/.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
parts=rings,netpipe,app
np=2
hosts=1
alternations=3
orderings=10
sizes=$(python3 -c 'print(",".join(str(1 << p) for p in range(3, 24)))' 2>/dev/null || echo 8)
iters=2000
warmup=200
nf_transports=""
n=2048
nb=128
reps=3
timeout=300
out=""
command_line="bench/compare-hpcc.sh $*"
parse_opts "parts np hosts alternations orderings sizes iters warmup nf-transports n nb reps timeout out" "$@"

check_words --parts "$parts" rings netpipe app
check_int --n "$n"
check_int --nb "$nb"
check_int --reps "$reps"
check_int --np "$np"
((np >= 2)) || die "--np must be at least 2: rings exchange between ranks"
[[ $hosts =~ ^[12]$ ]] || die "--hosts must be 1 or 2, not '$hosts'"
check_int --alternations "$alternations"
check_int --orderings "$orderings"
check_sizes "$sizes"
check_int --iters "$iters"
check_count --warmup "$warmup"
check_int --timeout "$timeout"
[[ -z $nf_transports ]] || check_words --nf-transports "$nf_transports" shm ofi tcp
((hosts == 1)) || [[ $(id -u) -eq 0 ]] || die "--hosts 2 needs root (network namespaces)"
has_part() { [[ ,$parts, == *,$1,* ]]; }

# What this machine lacks, installed in one apt-get.
pkgs=()
want() { command -v "$1" >/dev/null 2>&1 || pkgs+=("$2"); }
want mpirun.openmpi openmpi-bin
has_part rings && want hpcc hpcc
if has_part netpipe; then
    want NPopenmpi netpipe-openmpi
    want NPtcp netpipe-tcp
    want ss iproute2
fi
((hosts == 1)) || want ip iproute2
if has_part app; then
    want mpicc.openmpi libopenmpi-dev
    [[ -e /usr/lib/x86_64-linux-gnu/libscalapack-openmpi.so ]] || pkgs+=(libscalapack-openmpi-dev)
fi
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null || pkgs+=(python3-matplotlib)
if ((${#pkgs[@]})); then
    apt_install "${pkgs[@]}" || true
fi
need mpirun.openmpi "apt-get install openmpi-bin"
has_part rings && need hpcc "apt-get install hpcc"
if has_part netpipe; then
    need NPopenmpi "apt-get install netpipe-openmpi"
    need NPtcp "apt-get install netpipe-tcp"
fi
if has_part app; then
    need mpicc.openmpi "apt-get install libopenmpi-dev"
    [[ -e /usr/lib/x86_64-linux-gnu/libscalapack-openmpi.so ]] ||
        die "ScaLAPACK is missing: apt-get install libscalapack-openmpi-dev"
fi
need python3 "needed for the tables"
need cargo "install Rust (see scripts/setup.sh)"
# hpcc and NPopenmpi are linked against Open MPI: its mpirun, whatever the default is.
mpirun=$(command -v mpirun.openmpi)

ompi_as_root
out_dir compare-hpcc
mkdir -p "$out/rings" "$out/netpipe" "$out/app"
notes=$out/notes.txt # one "key<TAB>value" line per fact; hpcc_report.py reads it
: >"$notes"
note() { printf '%s\t%s\n' "$1" "$2" >>"$notes"; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
note command "$command_line"
note load_start "$(loadavg)"
note cores "$(nproc)"
note git "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo none)"
note parts "$parts"
note alternations "$alternations"
note hosts "$hosts"
has_part rings && note hpcc "$(dpkg-query -W -f '${Package} ${Version}' hpcc 2>/dev/null || echo hpcc)"
has_part netpipe && note netpipe "$(dpkg-query -W -f '${Package} ${Version}\n' netpipe-openmpi netpipe-tcp 2>/dev/null | paste -sd, || echo NetPIPE)"
note openmpi "$("$mpirun" --version 2>/dev/null | head -1)"

echo "compare-hpcc: building nf (release) ..." >&2
packages=(nf-cli)
((hosts == 1)) || packages+=(nf-testkit)
build_release "${packages[@]}"
nf=$release/nf
need_built "$nf"
"$nf" bench rings --help >/dev/null 2>&1 || die "$nf has no 'bench rings'"

# Ranks per host: all here, or the first ceil(N/2) in host 0 and the rest in host 1.
n0=$(((np + 1) / 2)) n1=$((np / 2))
if ((hosts == 2)); then
    need_built "$release/nf-netns"
    # The hosts, removed on any exit of this script.
    netns_hosts "$release/nf-netns" 2
    echo "compare-hpcc: hosts ${H[0]} (${A[0]}) and ${H[1]} (${A[1]}) on $subnet" >&2
    note placement "$n0 rank(s) in ${H[0]} (${A[0]}), $n1 in ${H[1]} (${A[1]}); network namespaces on $subnet"
    note netpipe_placement "one rank in each namespace host"
    note npmpi_path "ob1, btl tcp"
    note nptcp_path "host 0 -> host 1"
else
    note placement "$np ranks on this machine"
    note netpipe_placement "both ranks on this machine"
    note npmpi_path "Open MPI's defaults: vader"
    note nptcp_path "loopback"
fi

bound=(timeout --kill-after=10 "$timeout")
# Long commands run in the background and are waited for: bash defers a trap while a
# foreground command runs, and this way a signal ends the script at once.
run() {
    "$@" &
    wait $!
}

# mpi_cmd N0 N1 SESSION_DIR: sets mpi to Open MPI's mpirun for N0 (+ N1) ranks, here or
# across the namespace hosts (append options and the program).
mpi_cmd() {
    if ((hosts == 1)); then
        mpi=("$mpirun" --allow-run-as-root -np $(($1 + $2)) --oversubscribe --bind-to none)
    else
        mpirun_across "$3" "$mpirun" "$1" "$2"
        mpi=("${mpirun_across[@]}" --oversubscribe --bind-to none)
    fi
}

# nf_cmd N0 N1: sets nfrun to nf run for N0 (+ N1) ranks, here or across the hosts
# (append the program after --).
nf_cmd() {
    if ((hosts == 1)); then
        nfrun=("$nf" run -n $(($1 + $2)) --timeout "$timeout")
    else
        nfrun=(ip netns exec "${H[0]}" "$nf" run --hosts "${H[0]}:$1,${H[1]}:$2"
            --remote "ip netns exec {host}" --pmi-bind "${A[0]}:0" --timeout "$timeout")
    fi
}

# nf_env TRANSPORTS: sets nfenv (an env prefix) for NF_TRANSPORTS=TRANSPORTS, or for
# nf's default when TRANSPORTS is empty.
nf_env() {
    nfenv=(env)
    [[ -z $1 ]] || nfenv+=("NF_TRANSPORTS=$1")
}

# ---------------------------------------------------------------------------------
# rings: hpcc against nf bench rings.

write_hpccinf() { # FILE NPROCS: a tiny problem everywhere, grid 1 x NPROCS
    cat >"$1" <<EOF
HPLinpack benchmark input file (bench/compare-hpcc.sh: everything tiny but b_eff)
Innovative Computing Laboratory, University of Tennessee
HPL.out      output file name (if any)
8            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
256          Ns
1            # of NBs
32           NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
1            Ps
$2           Qs
16.0         threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
4            NBMINs (>= 1)
1            # of panels in recursion
2            NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
1            BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
1            DEPTHs (>=0)
2            SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
##### This line (no. 32) is ignored (it serves as a separator). ######
0            Number of additional problem sizes for PTRANS
256          values of N
0            number of additional blocking sizes for PTRANS
32           values of NB
EOF
}

run_hpcc() { # K
    local d=$out/rings/hpcc-$1
    echo "== rings round $1/$alternations: hpcc ($np ranks)" >&2
    mkdir -p "$d"
    write_hpccinf "$d/hpccinf.txt" "$np"
    rm -f "$d/hpccoutf.txt" # hpcc appends to it
    mpi_cmd "$n0" "$n1" "$d/ompi"
    (cd "$d" && run "${bound[@]}" "${mpi[@]}" --wdir "$d" hpcc >"$d/stdout.txt" 2>&1) ||
        die "hpcc failed in round $1; see $d/stdout.txt"
    grep -q '^MaxPingPongLatency_usec=' "$d/hpccoutf.txt" 2>/dev/null ||
        die "hpcc wrote no summary in round $1; see $d/hpccoutf.txt and $d/stdout.txt"
    rm -rf "$d/ompi"
}

run_nf_rings() { # K
    local f=$out/rings/nf-$1
    echo "== rings round $1/$alternations: nf bench rings ($np ranks)" >&2
    nf_cmd "$n0" "$n1"
    nf_env "$nf_transports"
    run "${bound[@]}" "${nfenv[@]}" "${nfrun[@]}" -- "$nf" bench rings --quiet \
        --lat-size 8 --bw-size 2000000 --orderings "$orderings" \
        --json "$f.json" --csv "$f.csv" >"$f.txt" 2>&1 ||
        die "nf bench rings failed in round $1; see $f.txt"
}

part_rings() {
    local k side
    note load_rings_start "$(loadavg)"
    for ((k = 1; k <= alternations; k++)); do
        turn_order "$k" hpcc nf_rings
        for side in "${order[@]}"; do
            "run_$side" "$k"
        done
    done
    note load_rings_end "$(loadavg)"
    note rings_nf "nf bench rings --lat-size 8 --bw-size 2000000 --orderings $orderings (iters, bw-iters, warmup: its defaults)${nf_transports:+, NF_TRANSPORTS=$nf_transports}"
}

# ---------------------------------------------------------------------------------
# netpipe: NetPIPE over Open MPI and over TCP against nf bench pingpong.

hi=$(tr , '\n' <<<"$sizes" | sort -n | tail -1)
lo=$(tr , '\n' <<<"$sizes" | sort -n | head -1)
np_args=(-p 0 -l "$lo" -u "$hi")

run_npmpi() { # K
    local f=$out/netpipe/npmpi-$1
    echo "== netpipe round $1/$alternations: NPopenmpi" >&2
    mpi_cmd 1 1 "$f.ompi"
    run "${bound[@]}" "${mpi[@]}" NPopenmpi "${np_args[@]}" -o "$f.out" >"$f.txt" 2>&1 ||
        die "NPopenmpi failed in round $1; see $f.txt"
    [[ -s $f.out ]] || die "NPopenmpi wrote no $f.out in round $1; see $f.txt"
    rm -rf "$f.ompi"
}

# Waits (at most 10 s) until something listens on tcp PORT (in host 1 across hosts).
wait_listen() {
    local tries=0 in1=()
    ((hosts == 1)) || in1=(ip netns exec "${H[1]}")
    until "${in1[@]}" ss -Hltn "sport = :$1" | grep -q .; do
        ((++tries < 100)) || return 1
        sleep 0.1
    done
}

run_nptcp() { # K
    local f=$out/netpipe/nptcp-$1 port=47017 server peer=127.0.0.1 in0=() in1=()
    echo "== netpipe round $1/$alternations: NPtcp" >&2
    if ((hosts == 2)); then
        in0=(ip netns exec "${H[0]}") in1=(ip netns exec "${H[1]}") peer=${A[1]}
    fi
    # The receiver (it writes no np.out) first; the transmitter connects to it.
    (cd "$out/netpipe" && exec "${bound[@]}" "${in1[@]}" NPtcp -P "$port" "${np_args[@]}" \
        -o "$f-receiver.out") >"$f-receiver.txt" 2>&1 &
    server=$!
    wait_listen "$port" || die "NPtcp's receiver did not listen in round $1; see $f-receiver.txt"
    run "${bound[@]}" "${in0[@]}" NPtcp -h "$peer" -P "$port" "${np_args[@]}" -o "$f.out" \
        >"$f.txt" 2>&1 || die "NPtcp failed in round $1; see $f.txt"
    wait "$server" || die "NPtcp's receiver failed in round $1; see $f-receiver.txt"
    [[ -s $f.out ]] || die "NPtcp wrote no $f.out in round $1; see $f.txt"
}

run_nf_pp() { # NAME TRANSPORTS K
    local f=$out/netpipe/$1-$3
    echo "== netpipe round $3/$alternations: $1 (nf bench pingpong${2:+, NF_TRANSPORTS=$2})" >&2
    nf_cmd 1 1
    nf_env "$2"
    run "${bound[@]}" "${nfenv[@]}" "${nfrun[@]}" -- "$nf" bench pingpong --quiet \
        --sizes "$sizes" --iters "$iters" --warmup "$warmup" --json "$f.json" >"$f.txt" 2>&1 ||
        die "$1 failed in round $3; see $f.txt"
}
run_nf_default() { run_nf_pp nf-default "$nf_transports" "$1"; }
run_nf_tcp() { run_nf_pp nf-tcp tcp "$1"; }

part_netpipe() {
    local k side
    note load_netpipe_start "$(loadavg)"
    for ((k = 1; k <= alternations; k++)); do
        turn_order "$k" npmpi nf_default nptcp nf_tcp
        for side in "${order[@]}"; do
            "run_$side" "$k"
        done
    done
    note load_netpipe_end "$(loadavg)"
    note netpipe_args "NPopenmpi / NPtcp ${np_args[*]}; nf bench pingpong --sizes $sizes --iters $iters --warmup $warmup"
}

# ---------------------------------------------------------------------------------
# app: nf bench app against ScaLAPACK's pdgemm.

# What the app part needs before its rounds: pdgemm on OpenBLAS, and on one host a
# node server whose /mem the files way reads (stopped when the script ends).
app_setup() {
    build_c mpicc.openmpi "$out/app/pdgemm" python/pdgemm.c -lscalapack-openmpi
    fetch_openblas "$repo/bench/out/openblas"
    if [[ -n $openblas_dir ]]; then
        note app_blas "pdgemm: $(basename "$openblas_dir"/libopenblasp-r*.so) (Debian's libopenblas0-pthread)"
    else
        note app_blas "pdgemm: the system BLAS, $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3) (OpenBLAS download failed)"
    fi
    app_via=direct
    if ((hosts == 1)); then
        app_via=direct,files
        local sock=$out/app/node/nf.sock
        mkdir -p "$out/app/node/export" "$out/app/node/mem"
        # Bounded as every run is: it outlives the part's rounds, not a killed script.
        timeout $((timeout * (2 * alternations + 1))) \
            "$nf" serve -f --unix "$sock" --export "$out/app/node/export" \
            --mem-registry "$out/app/node/mem" >"$out/app/node/serve.txt" 2>&1 &
        app_server=$!
        local tries=0
        until [[ -S $sock.shm ]]; do
            ((++tries < 100)) || die "nf serve did not start; see $out/app/node/serve.txt"
            sleep 0.1
        done
        app_node=(--node "shm:$sock.shm")
    fi
    note app_nf "nf bench app --n $n --reps $reps --teams 1,$np --via $app_via (panel: its default)"
    note app_pdgemm "pdgemm --n $n --nb $nb --reps $reps, grid 1 x $np, OPENBLAS_NUM_THREADS=1"
}

app_teardown() {
    [[ -z ${app_server:-} ]] && return 0
    kill "$app_server" 2>/dev/null || true
    wait "$app_server" 2>/dev/null || true
}

run_pdgemm() { # K
    local f=$out/app/pdgemm-$1
    echo "== app round $1/$alternations: pdgemm ($np ranks)" >&2
    mpi_cmd "$n0" "$n1" "$f.ompi"
    local env=(-x OPENBLAS_NUM_THREADS=1 -x OMP_NUM_THREADS=1)
    [[ -z $openblas_dir ]] ||
        env+=(-x "LD_LIBRARY_PATH=$openblas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
    run "${bound[@]}" "${mpi[@]}" "${env[@]}" "$out/app/pdgemm" --n "$n" --nb "$nb" \
        --reps "$reps" --side pdgemm --json "$f.json" >"$f.txt" 2>&1 ||
        die "pdgemm failed in round $1; see $f.txt"
    rm -rf "$f.ompi"
}

run_nf_app() { # K
    local f=$out/app/nf-$1
    echo "== app round $1/$alternations: nf bench app ($np ranks, $app_via)" >&2
    nf_cmd "$n0" "$n1"
    nf_env "$nf_transports"
    run "${bound[@]}" "${nfenv[@]}" NF_MEM_REGISTRY="$out/app/node/mem" "${nfrun[@]}" -- \
        "$nf" bench app --quiet --n "$n" --reps "$reps" --teams "1,$np" --via "$app_via" \
        "${app_node[@]}" --json "$f.json" >"$f.txt" 2>&1 ||
        die "nf bench app failed in round $1; see $f.txt"
}

part_app() {
    local k side
    app_node=()
    app_setup
    note load_app_start "$(loadavg)"
    for ((k = 1; k <= alternations; k++)); do
        turn_order "$k" pdgemm nf_app
        for side in "${order[@]}"; do
            "run_$side" "$k"
        done
    done
    note load_app_end "$(loadavg)"
    app_teardown
}

# ---------------------------------------------------------------------------------
IFS=, read -r -a part_list <<<"$parts"
for part in "${part_list[@]}"; do
    echo "compare-hpcc: part $part, $alternations round(s) ..." >&2
    "part_$part"
done
note load_end "$(loadavg)"

echo >&2
/usr/bin/python3 "$repo/bench/hpcc_report.py" --dir "$out" --parts "$parts" \
    --rounds "$alternations" | tee "$out/summary.txt"
echo "compare-hpcc: results in $out" >&2
