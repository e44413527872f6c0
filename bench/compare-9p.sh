#!/usr/bin/env bash
# 9P file service: ninefold's server against Debian's diod on this machine, same run.
#
# usage: bench/compare-9p.sh [--out DIR] [nf bench 9p options ...]
#
#   --out DIR   default bench/out/compare-9p-<UTC timestamp>/
#
# Builds nf (release) and runs `nf bench 9p`, which starts both servers on the same
# export directory, alternates them in short rounds per msize (8 KiB ... 1 MiB), and
# prints per-msize ratios ours / diod (diod offers at most 64 KiB, so larger msizes
# have no ratio). Any other option goes to `nf bench 9p` (see `nf bench 9p --help`,
# e.g. --alternations 10, --msizes 8192,65536). Writes compare.{txt,json,csv} and
# compare-{read,write}.png into the out directory.
set -euo pipefail

die() {
    echo "compare-9p: $*" >&2
    exit 1
}

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=""
pass=()
while (($#)); do
    case $1 in
        -h | --help)
            sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
            exit 0
            ;;
        --out)
            (($# >= 2)) || die "--out needs a value"
            out=$2
            shift 2
            ;;
        *)
            pass+=("$1")
            shift
            ;;
    esac
done

command -v diod >/dev/null 2>&1 || die "diod not found: run scripts/setup.sh or apt-get install diod"
command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (see scripts/setup.sh)"

out=${out:-$repo/bench/out/compare-9p-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)

echo "compare-9p: building nf (release) ..." >&2
(cd "$repo" && cargo build --release -p nf-cli)
nf=${CARGO_TARGET_DIR:-$repo/target}/release/nf
[[ $nf = /* ]] || nf=$repo/$nf
[[ -x $nf ]] || die "no nf binary at $nf after cargo build"

(cd "$repo" && "$nf" bench 9p --json "$out/compare.json" --csv "$out/compare.csv" \
    --plot "$out/compare" "${pass[@]}") | tee "$out/compare.txt"
echo "compare-9p: results in $out" >&2
