"""ninefold for Python: ranks, messages, global arrays with numpy slicing, node files.

Start a program with ``nf run -n 4 python3 prog.py`` (or ``mpirun``, ``srun``, or by
hand as one rank)::

    import ninefold as nf
    w = nf.init()
    a = nf.GlobalArray((1000, 1000), "float64")
    a[w.rank, :] = w.rank
    a.sync()
    print(a[:, 0].sum())

The runtime belongs to the thread that called :func:`init`. A rank that raises an
uncaught exception ends the job: it exits at once with status 1, naming itself, and
the other ranks see a :class:`PeerError` (or are stopped by their launcher) instead of
hanging.
"""

import atexit as _atexit
import os as _os
import sys as _sys

from . import _native, files
from ._native import (
    ANY_SOURCE,
    ANY_TAG,
    Counter,
    GlobalArray,
    NinefoldError,
    PeerError,
    Request,
    Status,
    World,
    fence,
    finalize,
    initialized,
)
from .linalg import matmul

__version__ = _native.__version__

__all__ = [
    "ANY_SOURCE",
    "ANY_TAG",
    "Counter",
    "GlobalArray",
    "NinefoldError",
    "PeerError",
    "Request",
    "Status",
    "World",
    "__version__",
    "fence",
    "files",
    "finalize",
    "init",
    "initialized",
    "matmul",
    "waitall",
]

_hook_installed = False


def _abort_on_uncaught(kind, value, tb):
    """Prints the traceback naming this rank, then leaves at once.

    A collective finalize at exit would wait for ranks that are themselves waiting
    for this one; exiting without it lets them see a dead peer (or their launcher
    stop them) instead of hanging.
    """
    rank = "?"
    if _native.initialized():
        try:
            w = _native.init()
            rank = f"{w.rank} of {w.size}"
        except Exception:  # noqa: BLE001 - the original error matters more
            pass
    _sys.__excepthook__(kind, value, tb)
    _sys.stderr.write(f"ninefold: rank {rank} failed with {kind.__name__}; ending the job\n")
    _sys.stderr.flush()
    _sys.stdout.flush()
    _os._exit(130 if issubclass(kind, KeyboardInterrupt) else 1)


def _finalize_at_exit():
    if _native.initialized():
        _native.finalize()


def init(comm=None):
    """Joins the job and returns this rank's :class:`World` (the same one on every call).

    The job comes from the launcher: ``nf run``, ``mpirun`` (PMIx), ``srun`` /
    hydra (PMI-2), or none (a single rank). A program that already uses mpi4py joins
    through MPI itself: pass ``comm=MPI.COMM_WORLD``, or let ``init`` find a running
    mpi4py. Collective: every rank calls it.
    """
    global _hook_installed
    w = _native.init(comm)
    if not _hook_installed:
        _hook_installed = True
        _sys.excepthook = _abort_on_uncaught
        _atexit.register(_finalize_at_exit)
    return w


def waitall(requests):
    """Waits for every request; returns their results in order."""
    return [r.wait() for r in requests]
