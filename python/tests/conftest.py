"""Fixtures of the Python suite: the `nf` binary, and running a program on ranks.

Programs in ``progs/`` run as real jobs (``nf run``, ``mpirun``, hydra, or by hand)
and check themselves against numpy; a test passes when every rank printed its
``OK`` line and the job exited 0. Every run has a timeout.
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PROGS = pathlib.Path(__file__).resolve().parent / "progs"
RUN_TIMEOUT = 180


def find_nf():
    """The nf binary: $NF_BIN, else the workspace's release or debug build."""
    env = os.environ.get("NF_BIN")
    candidates = [pathlib.Path(env)] if env else [REPO / "target/release/nf", REPO / "target/debug/nf"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    raise RuntimeError(
        f"no nf binary at {', '.join(map(str, candidates))}: build it (cargo build -p nf-cli) or set NF_BIN"
    )


@pytest.fixture(scope="session")
def nf_bin():
    return find_nf()


def job_env():
    env = dict(os.environ)
    # One BLAS thread per rank: ranks share the machine's cores.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class Job:
    """Runs ``progs/NAME.py`` under a launcher and reports what happened."""

    def __init__(self, nf):
        self.nf = nf

    def command(self, launcher, n, prog, args):
        py = [sys.executable, str(PROGS / f"{prog}.py"), *args]
        if launcher == "nf":
            return [self.nf, "run", "-n", str(n), "--timeout", str(RUN_TIMEOUT - 10), "--", *py]
        if launcher == "mpirun":
            return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(n), *py]
        if launcher == "hydra":
            return ["mpiexec.hydra", "-launcher", "fork", "-n", str(n), *py]
        if launcher == "hand":
            assert n == 1
            return py
        raise ValueError(launcher)

    def run(self, n, prog, *args, launcher="nf", check=True):
        if launcher in ("mpirun", "hydra"):
            exe = "mpirun" if launcher == "mpirun" else "mpiexec.hydra"
            if shutil.which(exe) is None:
                pytest.fail(f"{exe} is not installed (scripts/setup.sh installs it)")
        p = subprocess.run(
            self.command(launcher, n, prog, args),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env=job_env(),
            cwd=REPO,
        )
        if check:
            oks = re.findall(r"OK \w+ rank \d+ of \d+\n", p.stdout)
            assert p.returncode == 0 and len(oks) == n, (
                f"{prog} on {n} ranks ({launcher}) exited {p.returncode} with {len(oks)} OK lines\n"
                f"--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}"
            )
        return p


@pytest.fixture(scope="session")
def job(nf_bin):
    return Job(nf_bin)
