"""Blocks in a receive from itself until a signal arrives (run by hand, one rank)."""

import sys

from common import start

w, r, n = start()
sys.stdout.write("waiting\n")
sys.stdout.flush()
w.recv(0, 1)
