#!/usr/bin/env bash
# The main job: 4 local ranks exchange active messages, run collectives, and end
# with a short ping-pong summary. Extra arguments go to `nf demo` (e.g. -n 8).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh demo
# nf, and the check program the README's tour starts under every launcher.
cargo build --release --quiet -p nf-cli -p nf-checks --bins
exec target/release/nf demo "$@"
