# shellcheck shell=bash disable=SC2034 # it sets variables for the scripts that source it
# Pieces shared by the comparison scripts in bench/ (source it; bash only). A script
# sets repo (the checkout's root) before it sources this file.
#
#   die MESSAGE              print "<script>: MESSAGE" to stderr and exit 1
#   usage                    print the script's header comment (up to `set -euo`)
#   parse_opts SPEC ARGS...  the script's command line (see below)
#   need TOOL HINT           die with HINT unless TOOL is on PATH
#   check_int NAME VALUE     die unless VALUE is a positive integer
#   check_count NAME VALUE   die unless VALUE is a non-negative integer
#   check_sizes VALUE        die unless VALUE is a list like 8,64,4096
#   check_words NAME VALUE WORD...
#                            die unless VALUE is a comma-separated list of the WORDs
#                            (plain words: letters, digits, -)
#   out_dir NAME             sets out (absolute, created): the --out the script was
#                            given, else bench/out/NAME-<UTC timestamp>
#   git_arg                  sets git_arg: (--git REV) naming this checkout's commit
#                            (git describe --always --dirty), or () outside git
#   build_release PKG...     cargo build --release -p PKG... in repo; sets release (the
#                            absolute release directory, CARGO_TARGET_DIR honoured)
#   need_built FILE...       die unless every FILE exists (after build_release)
#   build_c CC BIN SRC ARG...
#                            compile the C benchmark SRC (its path under bench/) with
#                            bench/c/ppreport.c into BIN: CC -O2 -Wall, ARGs before -lm
#   turn_order K ITEM...     sets order: the ITEMs as given when K is odd, reversed when
#                            K is even (alternating runs: no side always goes first)
#   ompi_as_root             export what lets Open MPI's mpirun run as root
#   netns_hosts NF_NETNS K   K namespace hosts for the script's lifetime (see below)
#   mpirun_across DIR [MPIRUN [N0 N1]]
#                            sets mpirun_across: Open MPI's mpirun over the namespace
#                            hosts of netns_hosts (see below)
#   apt_install PKG...       installs the PKGs with apt-get (no recommended packages),
#                            first saying which, and what they pull in; with
#                            NF_BENCH_NO_INSTALL=1 installs nothing and says so;
#                            returns 1 when nothing was installed
#   fetch_openblas DIR       sets openblas_dir: Debian's OpenBLAS (libopenblas0-pthread,
#                            apt-get download, unpacked under DIR once) whose
#                            libblas.so.3 goes first in LD_LIBRARY_PATH; empty if the
#                            download fails

die() {
    echo "$(basename "$0" .sh): $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# parse_opts SPEC ARGS...    SPEC names the options, without their dashes: NAME takes
#                            a value (--NAME V sets the variable NAME, dashes read as
#                            underscores: --pp-sizes V sets pp_sizes), NAME! is a flag
#                            (--NAME sets NAME to 1), and a lone * lets every other
#                            argument through, in order, into the array rest; -h and
#                            --help print usage and exit 0; anything else is an error
parse_opts() {
    # Locals start with _ so that no option's variable is one of them.
    local -A _kind=()
    local -a _words
    local _word _arg _name _rest=0
    read -r -a _words <<<"$1"
    for _word in "${_words[@]}"; do
        case $_word in
            \*) _rest=1 ;;
            *!) _kind[=--${_word%!}]=flag ;;
            *) _kind[=--$_word]=value ;;
        esac
    done
    shift
    rest=()
    while (($#)); do
        _arg=$1
        _name=${_arg#--}
        _name=${_name//-/_}
        case ${_kind[=$_arg]:-} in
            flag) printf -v "$_name" 1 ;;
            value)
                (($# >= 2)) || die "$_arg needs a value"
                printf -v "$_name" %s "$2"
                shift
                ;;
            *)
                if [[ $_arg = -h || $_arg = --help ]]; then
                    usage
                    exit 0
                elif ((_rest)); then
                    rest+=("$_arg")
                else
                    usage >&2
                    die "unknown argument '$_arg'"
                fi
                ;;
        esac
        shift
    done
}

need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"
}

check_int() {
    [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 must be a positive integer, not '$2'"
}

check_count() {
    [[ $2 =~ ^[0-9]+$ ]] || die "$1 must be a non-negative integer, not '$2'"
}

check_sizes() {
    [[ $1 =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "size lists look like 8,64,4096, not '$1'"
}

check_words() {
    local name=$1 value=$2 alt words
    shift 2
    alt=$(IFS='|' && echo "$*")
    words=$(printf '%s, ' "$@")
    [[ $value =~ ^($alt)(,($alt))*$ ]] || die "$name takes a comma-separated list of ${words%, }; not '$value'"
}

out_dir() {
    out=${out:-$repo/bench/out/$1-$(date -u +%Y%m%dT%H%M%SZ)}
    mkdir -p "$out"
    out=$(cd "$out" && pwd)
}

git_arg() {
    local rev
    rev=$(git -C "$repo" describe --always --dirty 2>/dev/null || true)
    git_arg=()
    [[ -z $rev ]] || git_arg=(--git "$rev")
}

build_release() {
    local pkg args=()
    for pkg; do
        args+=(-p "$pkg")
    done
    (cd "$repo" && cargo build --release "${args[@]}")
    release=${CARGO_TARGET_DIR:-$repo/target}/release
    [[ $release = /* ]] || release=$repo/$release
}

need_built() {
    local f
    for f; do
        [[ -e $f ]] || die "no $f after cargo build (is the target directory elsewhere?)"
    done
}

build_c() {
    local cc=$1 bin=$2 src=$3
    shift 3
    "$cc" -O2 -Wall -I"$repo/bench/c" -o "$bin" "$repo/bench/$src" "$repo/bench/c/ppreport.c" "$@" -lm
}

turn_order() {
    local k=$1 i
    shift
    order=("$@")
    if ((k % 2 == 0)); then
        order=()
        for ((i = $#; i >= 1; i--)); do
            order+=("${!i}")
        done
    fi
}

ompi_as_root() {
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
}

# netns_hosts NF_NETNS K     bring up K namespace hosts with nf-netns (from nf-testkit)
#                            for as long as the script runs: sets H[i] (host names),
#                            A[i] (their addresses) and subnet; nf-netns keeps them
#                            while its stdin is open, so they go when the script exits,
#                            however it exits (the EXIT trap closes it)
netns_hosts() {
    coproc NETNS { exec "$1" --hosts "$2"; }
    # shellcheck disable=SC2153 # NETNS_PID is set by coproc
    netns_pid=$NETNS_PID
    trap netns_hosts_release EXIT
    trap 'exit 130' INT TERM
    declare -ga H A
    subnet=""
    local kind a b c
    while read -r -u "${NETNS[0]}" kind a b c; do
        case $kind in
            host) H[a]=$b A[a]=$c ;;
            subnet) subnet=$a ;;
            ready) break ;;
        esac
    done
    [[ -n ${H[$2 - 1]:-} && -n $subnet ]] || die "nf-netns did not bring the hosts up (see its message above)"
}

netns_hosts_release() {
    # shellcheck disable=SC1083 # {NETNS[1]} names the fd to close
    exec {NETNS[1]}>&- 2>/dev/null || true
    wait "$netns_pid" 2>/dev/null || true
}

# on HOST CMD...              after netns_hosts: CMD in that host's network namespace
#                            (nsenter, which leaves /sys be, and execs CMD: a
#                            background one's $! is CMD's pid)
on() {
    local h=$1
    shift
    nsenter --net="/var/run/netns/$h" "$@"
}

# daemon HOST LOG CMD...      starts CMD in HOST in the background, output in LOG, and
#                            appends its pid to the caller's array daemon_pids
daemon() {
    local h=$1 log=$2
    shift 2
    nsenter --net="/var/run/netns/$h" "$@" >"$log" 2>&1 &
    daemon_pids+=($!)
}

# wait_listen HOST PORT      waits (at most 10 s) until something listens on tcp PORT
#                            in HOST; fails after that
wait_listen() {
    local tries=0
    until on "$1" ss -Hltn "sport = :$2" | grep -q .; do
        ((++tries < 200)) || return 1
        sleep 0.05
    done
}

# mpirun_across DIR [MPIRUN [N0 N1]]
#                            after netns_hosts: sets the array mpirun_across to a
#                            command that runs MPIRUN (default mpirun; Open MPI's)
#                            inside H[0], N0 ranks on H[0] then N1 on H[1] (default
#                            one each; append options and the program), over pml ob1
#                            and btl tcp,self on the hosts' subnet (vader,tcp,self
#                            when a host holds more than one rank); mpirun starts its
#                            daemons through tests/netns/mpirun-agent.sh and keeps
#                            its session directory in DIR (made here): the namespaces
#                            share this machine's host name, and other jobs'
#                            leftovers in the shared /tmp/ompi.<host>.<uid> can collide
mpirun_across() {
    local n0=${3:-1} n1=${4:-1} btl=tcp,self
    ((n0 == 1 && n1 == 1)) || btl=vader,tcp,self
    mkdir -p "$1"
    mpirun_across=(ip netns exec "${H[0]}" "${2:-mpirun}" --allow-run-as-root
        --mca orte_tmpdir_base "$1"
        --mca plm_rsh_agent "$repo/tests/netns/mpirun-agent.sh"
        --mca oob_tcp_if_include "$subnet" --mca btl_tcp_if_include "$subnet"
        --mca pml ob1 --mca btl "$btl" --host "${H[0]}:$n0,${H[1]}:$n1" -np $((n0 + n1)))
}

# Writes DIR/config for ssh and scp to a benchmark's own sshd: root by the key DIR/id,
# host keys kept in DIR/known_hosts and never asked about, no prompts.
ssh_client_config() { # DIR
    cat >"$1/config" <<EOF
Host *
  User root
  IdentityFile $1/id
  IdentitiesOnly yes
  UserKnownHostsFile $1/known_hosts
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking no
  BatchMode yes
  ConnectTimeout 30
  LogLevel ERROR
EOF
}

# fetch_openblas DIR: sets openblas_dir (see the list at the top). Debian's
# libscalapack links the system libblas.so.3, the reference BLAS unless an alternative
# is installed; this puts an optimised one beside it without changing the machine.
fetch_openblas() {
    openblas_dir=$1/usr/lib/x86_64-linux-gnu/openblas-pthread
    [[ -e $openblas_dir/libblas.so.3 ]] && return 0
    echo "${0##*/}: fetching Debian's libopenblas0-pthread into $1 ..." >&2
    rm -rf "$1" && mkdir -p "$1/deb"
    if (cd "$1/deb" && timeout 300 apt-get download libopenblas0-pthread >&2) &&
        dpkg-deb -x "$1"/deb/libopenblas0-pthread_*.deb "$1"; then
        return 0
    fi
    echo "${0##*/}: no libopenblas0-pthread (apt-get download failed)" >&2
    openblas_dir=""
}

# apt_install PKG...: what a bench script lacks, announced before anything is installed
# (the packages named and, as apt-get would install them, what they pull in), without
# recommended packages (python3-matplotlib alone would pull in scipy and sympy), and
# skipped when NF_BENCH_NO_INSTALL=1 (the sides that need them then fail, saying why).
apt_install() {
    (($#)) || return 0
    local me
    me=$(basename "$0" .sh)
    if [[ ${NF_BENCH_NO_INSTALL:-0} == 1 ]]; then
        echo "$me: not installing $* (NF_BENCH_NO_INSTALL=1); what needs them will fail" >&2
        return 1
    fi
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y --no-install-recommends)
    local all
    all=$("${apt[@]}" -s install "$@" 2>/dev/null | sed -n 's/^Inst \([^ ]*\).*/\1/p' | paste -sd ' ')
    echo "$me: installing with apt-get: $*${all:+ (with what they need: $all)}" >&2
    echo "$me: (NF_BENCH_NO_INSTALL=1 skips this; install them yourself to avoid it)" >&2
    "${apt[@]}" install "$@" >&2 ||
        { apt-get update >&2 && "${apt[@]}" install "$@" >&2; } || {
        echo "$me: apt-get install $* failed; what needs them will fail" >&2
        return 1
    }
}
