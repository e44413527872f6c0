#!/usr/bin/env bash
# The whole test suite: format and lint gates, then every crate's tests.
# This is the README's test command; .ci/run calls it.
set -euo pipefail
cd "$(dirname "$0")/.."
# CI builds each artifact once: incremental caches would only take disk.
export CARGO_INCREMENTAL=0
scripts/setup.sh tests

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo doc -D warnings (no broken or private intra-doc links)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
echo "== cargo test"
# The jobs the tests start measure the single-copy threshold as any first job on a host
# does; they cache it here, not in the user's tune file, where a measurement taken under
# the suite's load would stay for a day.
export NF_TUNE_FILE="$PWD/target/test-tune.json"
rm -f "$NF_TUNE_FILE"
cargo test --workspace --no-fail-fast --quiet 2>&1 | tee target/test.log
echo "== python: pip install ./python, then pytest python/tests (scripts/test-python.sh)"
scripts/test-python.sh
echo "== loom: the shm rings, the tcp handoff, rma's shm locks and the 9P client's reply handoff, model-checked (the loom_*.rs files under crates/transport/src, crates/rma/src/shm and crates/ninep-client/src)"
# Its own target dir: --cfg loom rebuilds everything, and the normal cache survives.
RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=3 \
    cargo test -p nf-transport -p nf-rma -p nf-ninep-client --release --lib --quiet loom
# What the suite took, so a CI disk running short shows up before it fills.
echo "== done: target/ holds $(du -sh target | cut -f1); $(df -h --output=avail . | tail -1 | tr -d ' ') free on its disk"
