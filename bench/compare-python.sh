#!/usr/bin/env bash
# ninefold from Python (the `ninefold` package, python/) against mpi4py, ScaLAPACK's
# pdgemm and numpy, on the same 2 local ranks, same run.
#
# usage: bench/compare-python.sh [--alternations K] [--parts LIST] [--iters N]
#                                [--warmup W] [--n N] [--reps R] [--nb NB]
#                                [--pdgemm-blas LIST] [--timeout S] [--venv DIR]
#                                [--out DIR]
#
#   --alternations K  rounds, default 3; each runs every side once, odd rounds in the
#                     order ninefold, mpi4py, pdgemm, numpy, even rounds reversed, so
#                     no side always runs first on a cold or a warm machine
#   --parts LIST      p2p,get,matmul (default all): ping-pong (8 B, 1 MiB), one-sided
#                     get (8 float64, 1 MiB), matmul
#   --iters N         timed operations per size, default 10000 (fewer above 64 KiB:
#                     max(20, min(N, N * 64 KiB / size)), as nf_bench::pingpong::iters_for)
#   --warmup W        untimed operations per size, default 1000
#   --n N             matrix order of the matmul, default 2048
#   --reps R          timed products per run, after one untimed, default 5
#   --nb NB           pdgemm's block size, default 128
#   --pdgemm-blas L   openblas,system (default): the BLAS under Debian's libscalapack:
#                     OpenBLAS (Debian's libopenblas0-pthread, fetched with apt-get
#                     download and unpacked under the venv, put first with
#                     LD_LIBRARY_PATH; nothing installed system-wide) and the system's
#                     libblas.so.3 alternative (reference BLAS on a plain Debian)
#   --timeout S       limit of every run, default 600 s
#   --venv DIR        the benchmark's own venv, default bench/out/python-venv (kept
#                     between runs: numpy, matplotlib, maturin, mpi4py >= 4 built from
#                     source against this machine's Open MPI; ninefold reinstalled
#                     from ./python, release build, every run)
#   --out DIR         default bench/out/compare-python-<UTC timestamp>/
#
# Sides (bench/python/): nf_bench.py under `nf run -n 2 --bind-to core` (World.send /
# recv(out=) ping-pong; GlobalArray a[i:j] gets from rank 1's block; nf.matmul);
# mpi4py_bench.py under Open MPI's mpirun -np 2 --bind-to core, pml ob1, btl vader,self
# (Comm.Send / Recv ping-pong; Win.Allocate + Lock_all, Win.Get + Flush); pdgemm.c,
# ScaLAPACK pdgemm on a 1 x 2 BLACS grid under the same mpirun; numpy_matmul.py, one
# process, with 1 thread, as many threads as ranks (the like-for-like one: same
# cores) and all cores. Every multi-rank run has OPENBLAS_NUM_THREADS=1 and
# OMP_NUM_THREADS=1: 2 ranks use 2 cores. Bandwidth is ping-pong: size / median half
# round trip, on both sides. Latencies are medians over N operations after W; each
# report also has p10 / p90 / p99 / min / max. Every matmul is checked against the
# exact product (integer-valued matrices: equal checksum, spot checks).
#
# Targets (ratio ninefold / anchor, best of K per side): p2p 8 B <= 1.0x mpi4py,
# 1 MiB bandwidth >= 1.2x; get 8 elements <= 0.5x Win.Get + Flush, 1 MiB >= 1.0x;
# nf.matmul >= 0.8x pdgemm on OpenBLAS (the other anchors: reported). Everything
# lands in the out directory: runs/*.{json,txt}, notes.txt (load average at start
# and end, BLAS, versions), compare.{txt,csv,json} and compare.png
# (bench/python/report.py).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
alternations=3
parts=p2p,get,matmul
iters=10000
warmup=1000
n=2048
reps=5
nb=128
pdgemm_blas=openblas,system
timeout=600
venv=""
out=""
parse_opts "alternations parts iters warmup n reps nb pdgemm-blas timeout venv out" "$@"

check_int --alternations "$alternations"
check_words --parts "$parts" p2p get matmul
check_int --iters "$iters"
check_count --warmup "$warmup"
check_int --n "$n"
check_int --reps "$reps"
check_int --nb "$nb"
check_words --pdgemm-blas "$pdgemm_blas" openblas system
check_int --timeout "$timeout"
has_part() { [[ ,$parts, == *,$1,* ]]; }
has_blas() { [[ ,$pdgemm_blas, == *,$1,* ]]; }

for tool in mpicc mpirun; do
    need "$tool" "run scripts/setup.sh (openmpi-bin libopenmpi-dev)"
done
need python3 "install python3 and python3-venv"
need cargo "install Rust (see scripts/setup.sh)"
need timeout "install coreutils"
# mpi4py and pdgemm are built against Open MPI: its wrappers even where MPICH is the default.
mpicc=$(command -v mpicc.openmpi || command -v mpicc)
mpirun=$(command -v mpirun.openmpi || command -v mpirun)
libdir=/usr/lib/x86_64-linux-gnu
if has_part matmul; then
    [[ -e $libdir/libscalapack-openmpi.so ]] ||
        die "ScaLAPACK is missing: apt-get install libscalapack-openmpi-dev (scripts/setup.sh)"
fi

ompi_as_root
out_dir compare-python
git_arg
mkdir -p "$out/runs"
notes=$out/notes.txt # one "key<TAB>value" line per fact; report.py reads it
: >"$notes"
note() { printf '%s\t%s\n' "$1" "$2" >>"$notes"; }
note load_start "$(cut -d' ' -f1-3 /proc/loadavg)"
note cores "$(nproc)"
note git "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo none)"
note n "$n"
note p2p_method "ping-pong on both sides: half round trip; bandwidth = size / median half round trip"
bound=(timeout --kill-after=10 "$timeout")

# The venv: numpy, matplotlib, maturin, mpi4py (from source, this machine's Open MPI).
venv=${venv:-$repo/bench/out/python-venv}
py=$venv/bin/python
if [[ ! -x $py ]]; then
    echo "compare-python: creating the venv $venv ..." >&2
    python3 -m venv "$venv"
fi
"$py" -c 'import numpy, matplotlib, maturin' 2>/dev/null ||
    "${bound[@]}" "$py" -m pip install -q numpy matplotlib maturin >&2
if ! "$py" -c 'import mpi4py, sys; sys.exit(int(mpi4py.__version__.split(".")[0]) < 4)' 2>/dev/null; then
    echo "compare-python: building mpi4py >= 4 against $mpicc ..." >&2
    MPICC=$mpicc "${bound[@]}" "$py" -m pip install -q --no-binary mpi4py "mpi4py>=4" >&2
fi
mpi_ext=$("$py" -c 'import glob, os, mpi4py; print(glob.glob(os.path.join(os.path.dirname(mpi4py.__file__), "MPI*.so"))[0])')
note mpi4py "$("$py" -c 'import mpi4py; print(mpi4py.__version__)') linked with $(ldd "$mpi_ext" | awk '/libmpi/ {print $3}' | paste -sd' ')"
echo "compare-python: installing ninefold from $repo/python (release build) ..." >&2
"${bound[@]}" "$py" -m pip install -q --force-reinstall --no-deps "$repo/python" >&2

echo "compare-python: building nf (release) ..." >&2
build_release nf-cli
nf=$release/nf
need_built "$nf"

# pdgemm, and the BLAS under it.
openblas_dir=""
if has_part matmul; then
    build_c "$mpicc" "$out/pdgemm" python/pdgemm.c -lscalapack-openmpi
    note system_blas "$(readlink -f "$libdir/libblas.so.3")"
    if has_blas openblas; then
        fetch_openblas "$venv/openblas"
        [[ -n $openblas_dir ]] ||
            note skipped_pdgemm_openblas "apt-get download libopenblas0-pthread failed"
        [[ -z $openblas_dir ]] || note pdgemm_blas_openblas "$(basename "$openblas_dir"/libopenblasp-r*.so)"
    fi
fi
note numpy_blas "$("$py" -c 'import numpy as np; b = np.show_config(mode="dicts")["Build Dependencies"]["blas"]; print(np.__version__, b.get("name"), b.get("version"))' 2>/dev/null || echo unknown)"

# Every multi-rank run: one BLAS thread per rank.
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
common=(--iters "$iters" --warmup "$warmup" "${git_arg[@]}")
ompi=("$mpirun" --allow-run-as-root -np 2 --bind-to core --mca pml ob1 --mca btl "vader,self"
    -x OPENBLAS_NUM_THREADS -x OMP_NUM_THREADS -x MKL_NUM_THREADS)
nf_parts=$parts
mpi_parts=$(tr , '\n' <<<"$parts" | grep -v '^matmul$' | paste -sd, || true)

run_ninefold() {
    echo "== round $1/$alternations: ninefold ($nf_parts)" >&2
    "${bound[@]}" "$nf" run -n 2 --bind-to core --timeout "$timeout" -- \
        "$py" "$repo/bench/python/nf_bench.py" --parts "$nf_parts" "${common[@]}" \
        --n "$n" --reps "$reps" --json "$out/runs/ninefold-$1.json" |
        tee "$out/runs/ninefold-$1.txt"
}

run_mpi4py() {
    [[ -n $mpi_parts ]] || return 0
    echo "== round $1/$alternations: mpi4py ($mpi_parts)" >&2
    "${bound[@]}" "${ompi[@]}" "$py" "$repo/bench/python/mpi4py_bench.py" --parts "$mpi_parts" \
        "${common[@]}" --json "$out/runs/mpi4py-$1.json" | tee "$out/runs/mpi4py-$1.txt"
}

run_pdgemm() {
    has_part matmul || return 0
    local blas
    for blas in openblas system; do
        has_blas "$blas" || continue
        local env=()
        if [[ $blas = openblas ]]; then
            [[ -n $openblas_dir ]] || continue
            env=(-x "LD_LIBRARY_PATH=$openblas_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
        fi
        echo "== round $1/$alternations: pdgemm on $blas BLAS" >&2
        "${bound[@]}" "${ompi[@]}" "${env[@]}" "$out/pdgemm" --n "$n" --nb "$nb" --reps "$reps" \
            --side "pdgemm-$blas" "${git_arg[@]}" --json "$out/runs/pdgemm-$blas-$1.json" |
            tee "$out/runs/pdgemm-$blas-$1.txt"
    done
}

run_numpy() {
    has_part matmul || return 0
    local t
    for t in $(printf '%s\n' 1 2 "$(nproc)" | sort -nu); do
        echo "== round $1/$alternations: numpy @, $t thread(s)" >&2
        OPENBLAS_NUM_THREADS=$t OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t "${bound[@]}" \
            "$py" "$repo/bench/python/numpy_matmul.py" --n "$n" --reps "$reps" \
            --side "numpy-${t}t" "${git_arg[@]}" --json "$out/runs/numpy-${t}t-$1.json" |
            tee "$out/runs/numpy-${t}t-$1.txt"
    done
}

for ((k = 1; k <= alternations; k++)); do
    turn_order "$k" ninefold mpi4py pdgemm numpy
    for side in "${order[@]}"; do
        "run_$side" "$k"
    done
    [[ -s $out/runs/ninefold-$k.json ]] || die "round $k: ninefold wrote no report"
done
note load_end "$(cut -d' ' -f1-3 /proc/loadavg)"
skipped=$("$py" -c 'import json, sys; print("; ".join(f"{k}: {v}" for k, v in json.load(open(sys.argv[1]))["params"].get("skipped", {}).items()))' "$out/runs/ninefold-1.json")
[[ -z $skipped ]] || note skipped_ninefold "$skipped (not run)"

echo >&2
"$py" "$repo/bench/python/report.py" --dir "$out" --ranks 2 | tee "$out/compare.txt"
echo "compare-python: results in $out" >&2
