"""The last rank raises while the others wait for it: the job must end, naming it."""

import sys

import numpy as np
from common import start

w, r, n = start()
w.barrier()
if r == n - 1:
    raise ValueError(f"deliberate failure in rank {r}")
# The others wait for a message that never comes.
w.recv(n - 1, 5, out=np.zeros(1))
sys.exit("unreachable: the receive should have failed")
