"""Shared by the test programs: start the world, and say OK at the end."""

import sys

import ninefold as nf


def start():
    w = nf.init()
    return w, w.rank, w.size


def ok(w, what):
    w.barrier()
    # One write, so ranks' lines do not interleave.
    sys.stdout.write(f"OK {what} rank {w.rank} of {w.size}\n")
    sys.stdout.flush()


def raises(exc, fn, *args, match=None, **kwargs):
    """Asserts that fn(*args) raises exc (with `match` in its message)."""
    try:
        fn(*args, **kwargs)
    except exc as e:
        if match is not None:
            assert match in str(e), f"{exc.__name__} message {str(e)!r} lacks {match!r}"
        return e
    raise AssertionError(f"{getattr(fn, '__name__', fn)} did not raise {exc.__name__}")
