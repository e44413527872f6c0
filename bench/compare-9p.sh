#!/usr/bin/env bash
# 9P file service: ninefold's node daemon (nf serve) against Debian's diod, same run.
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

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib.sh
source "$repo/bench/lib.sh"
out=""
parse_opts "out *" "$@"

need diod "run scripts/setup.sh or apt-get install diod"
need cargo "install Rust (see scripts/setup.sh)"

out_dir compare-9p

echo "compare-9p: building nf (release) ..." >&2
build_release nf-cli
nf=$release/nf
need_built "$nf"

(cd "$repo" && "$nf" bench 9p --json "$out/compare.json" --csv "$out/compare.csv" \
    --plot "$out/compare" "${rest[@]}") | tee "$out/compare.txt"
echo "compare-9p: results in $out" >&2
