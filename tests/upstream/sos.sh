#!/usr/bin/env bash
# Sandia OpenSHMEM's test suite against ninefold's libshmem: every C program of
# test/unit and test/spec-example of a tests-sos checkout
# (https://github.com/openshmem-org/tests-sos, not fetched here: pass its path),
# built with nfshcc and run under `nf run -n NPES` (or, with LAUNCHER=mpirun, Open
# MPI's `mpirun -np NPES`: the PEs join through PMIx), each bounded in time.
#
#   tests/upstream/sos.sh TESTS_SOS_DIR [NPES] [NAME...]
#
# Prints one line per program (ok, FAIL(exit code), BUILD-FAIL, or known: ...) and a
# summary; exits 1 if a program outside KNOWN failed. Needs `cargo build --release
# -p nf-cli -p nf-shmem` first (or NF=... and LIB=... pointing at other builds).
# Logs: $OUT (default target/sos).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
src=${1:?usage: sos.sh TESTS_SOS_DIR [NPES] [NAME...]}
npes=${2:-2}
shift $(( $# < 2 ? $# : 2 ))
nf=${NF:-$here/target/release/nf}
lib=${LIB:-$here/target/release/libshmem.so}
out=${OUT:-$here/target/sos}
limit=${LIMIT:-120}
case ${LAUNCHER:-nf} in
    nf) launch=("$nf" run -n "$npes") ;;
    mpirun) launch=(mpirun --allow-run-as-root --oversubscribe --bind-to none -np "$npes") ;;
    *) echo "sos.sh: LAUNCHER is nf or mpirun, not '$LAUNCHER'" >&2; exit 2 ;;
esac
# Not failures of ours: programs testing SOS's own extensions or OpenSHMEM 1.6.
KNOWN="hybrid_mpi_mapping_id:sos-extension hybrid_mpi_mapping_id_shmem_comm:sos-extension
shmem_team_ptr:openshmem-1.6"
for f in "$nf" "$lib"; do
    [ -e "$f" ] || { echo "sos.sh: $f is missing; cargo build --release -p nf-cli -p nf-shmem" >&2; exit 2; }
done
[ -d "$src/test/unit" ] || { echo "sos.sh: $src/test/unit: not a tests-sos checkout" >&2; exit 2; }
mkdir -p "$out/bin" "$out/logs"
bash "$here/scripts/install.sh" --shmem-lib "$lib" "$out/prefix" > "$out/logs/install" 2>&1 ||
    { cat "$out/logs/install" >&2; exit 2; }
if [ $# -gt 0 ]; then
    progs=()
    for n in "$@"; do progs+=("$(ls "$src"/test/{unit,spec-example}/"$n".c 2>/dev/null | head -1)"); done
else
    mapfile -t progs < <(ls "$src"/test/unit/*.c "$src"/test/spec-example/*.c |
        grep -v -e '/cxx_' -e '_f\.' -e '/pcontrol\.c' -e '/mt_lock\.c')
fi
ok=0 known=0 bad=()
for p in "${progs[@]}"; do
    [ -f "$p" ] || continue
    name=$(basename "$p" .c)
    extra=()
    [ "$name" = mt_lock_test ] && extra=("$src/test/unit/mt_lock.c")
    why=$(tr ' ' '\n' <<< "$KNOWN" | sed -n "s/^$name://p")
    if ! "$out/prefix/bin/nfshcc" -std=gnu11 -O1 -pthread -I"$src/test/include" \
        -o "$out/bin/$name" "$p" "${extra[@]}" -lm > "$out/logs/$name.build" 2>&1; then
        result=BUILD-FAIL
    else
        timeout -k 5 "$limit" "${launch[@]}" "$out/bin/$name" > "$out/logs/$name.$npes" 2>&1
        rc=$?
        result=$([ $rc = 0 ] && echo ok || echo "FAIL($rc)")
    fi
    if [ "$result" = ok ]; then
        ok=$((ok + 1)); echo "ok $name"
    elif [ -n "$why" ]; then
        known=$((known + 1)); echo "known: $result $name ($why)"
    else
        bad+=("$name"); echo "$result $name (log: $out/logs/$name.*)"
    fi
done
echo "sos.sh: ${LAUNCHER:-nf} with $npes PEs: $ok passed, $known known, ${#bad[@]} failed${bad[*]:+: ${bad[*]}}"
[ ${#bad[@]} -eq 0 ]
