"""The world under every launcher: messages, collectives, failures, interrupts."""

import os
import signal
import subprocess
import sys

import pytest
from conftest import PROGS, REPO, job_env


@pytest.mark.parametrize("n", [1, 2, 4])
def test_messages_under_nf_run(job, n):
    job.run(n, "messages")


def test_messages_started_by_hand_as_one_rank(job):
    job.run(1, "messages", launcher="hand")


def test_messages_under_mpirun_through_pmix(job):
    job.run(2, "messages", launcher="mpirun")


def test_messages_under_hydra_through_pmi2(job):
    job.run(2, "messages", launcher="hydra")


@pytest.mark.parametrize("launcher", ["nf", "mpirun"])
def test_an_exception_in_one_rank_ends_the_job_naming_it(job, launcher):
    p = job.run(3, "fails", launcher=launcher, check=False)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "deliberate failure in rank 2" in p.stderr
    assert "ninefold: rank 2 of 3 failed with ValueError" in p.stderr, p.stderr
    assert "unreachable" not in p.stdout + p.stderr


def _where(pid):
    """What a stuck process is doing: its signal masks and each thread's state and wait channel."""
    out = []
    try:
        with open(f"/proc/{pid}/status") as f:
            out += [ln.strip() for ln in f if ln.startswith(("State", "Sig", "Shd"))]
        for t in sorted(os.listdir(f"/proc/{pid}/task")):
            base = f"/proc/{pid}/task/{t}"
            with open(f"{base}/comm") as c, open(f"{base}/wchan") as w, open(f"{base}/stat") as st:
                state = st.read().rsplit(")", 1)[1].split()[0]
                out.append(f"thread {t} {c.read().strip()} {state} wchan={w.read().strip() or '-'}")
    except OSError as e:
        out.append(f"(could not read /proc/{pid}: {e})")
    return "; ".join(out)


def _sigint_as_at_a_terminal():
    """In the child before exec: SIGINT back to its default. A shell starts background
    commands (CI's, `cmd &`) with it ignored, and Python then installs no Ctrl-C handler."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_ends_a_blocked_receive():
    p = subprocess.Popen(
        [sys.executable, str(PROGS / "interrupt.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=job_env(),
        cwd=REPO,
        preexec_fn=_sigint_as_at_a_terminal,
    )
    try:
        assert p.stdout.readline() == "waiting\n"
        p.send_signal(signal.SIGINT)
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no exit within 30 s of SIGINT; the process then: {_where(p.pid)}")
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert "KeyboardInterrupt" in err and "rank 0 of 1 failed" in err, err


def test_version_from_the_command_line():
    import ninefold

    out = subprocess.run(
        [sys.executable, "-m", "ninefold", "--version"], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out == f"ninefold {ninefold.__version__}\n"


def test_use_before_init_says_so():
    code = "import ninefold as nf\ntry:\n    nf.GlobalArray(3)\nexcept RuntimeError as e:\n    print(e)\n"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=job_env(), check=True
    ).stdout
    assert "call ninefold.init() first" in out


def test_env_without_nf_run_is_an_error_not_a_hang():
    env = job_env()
    env["NF_PMI_ADDR"] = os.path.join(REPO, "target", "no-such-socket")
    p = subprocess.run(
        [sys.executable, str(PROGS / "messages.py")], capture_output=True, text=True, timeout=120, env=env
    )
    assert p.returncode == 1 and "ninefold.init" in p.stderr, p.stderr
