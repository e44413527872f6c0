#!/usr/bin/env bash
# The Python package's tests: installs the package the way a user does
# (`pip install ./python`, a release build by maturin) into a virtual environment
# under target/, with numpy, pytest and mpi4py from PyPI, then runs python/tests
# against the workspace's `nf` binary. scripts/test.sh calls it.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/pyenv
if [[ ! -x $venv/bin/python ]]; then
    python3 -m venv "$venv" || {
        echo "test-python: python3 -m venv failed; install python3-venv" >&2
        exit 1
    }
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.5,<2" numpy pytest "mpi4py>=4"
# The same install a user runs; maturin from the venv, so no download per run.
PATH="$PWD/$venv/bin:$PATH" "$venv/bin/pip" install --quiet --disable-pip-version-check --no-build-isolation --force-reinstall --no-deps ./python

cargo build --quiet -p nf-cli --bin nf
NF_BIN=$PWD/target/debug/nf "$venv/bin/python" -m pytest -q python/tests "$@"
