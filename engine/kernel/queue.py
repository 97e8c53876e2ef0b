"""The event queue: a tournament tree of every CPU's next event (`engine.kernel.events` says
which event that is)."""

from __future__ import annotations

import numpy as np

from engine.jit import compiled

# A tournament tree over the CPUs' next events: leaf P + c (P, a power of four >= the CPU count)
# holds CPU c's key, (time << CPU_BITS) | c with the time capped at T_CAP (past any run), and
# every inner node the smaller of its two children. The root is the next event, ties going to
# the lower CPU; changing a CPU's event replays the log2(P) matches on its leaf's path, with no
# data-dependent branch (a binary heap's sifting took ~40% of the loop).
CPU_BITS = 10  # config.MAX_CPUS = 512 fits
CPU_MASK = (1 << CPU_BITS) - 1
T_CAP = 1 << 52
NO_CPU = (1 << 63) - 1  # the key of a leaf with no CPU behind it


def new_queue(n_cpus: int) -> np.ndarray:
    """An event queue for n_cpus CPUs, none of them scheduled yet."""
    bits = max(n_cpus - 1, 0).bit_length()
    leaves = 1 << (bits + (bits & 1))  # a power of 4, so queue_set climbs two levels per turn
    return np.full(2 * leaves, NO_CPU, dtype=np.int64)


@compiled(inline=True)
def queue_set(queue: np.ndarray, c: int, t: int) -> None:
    i = queue.shape[0] // 2 + c
    key = (min(t, T_CAP) << CPU_BITS) | c
    queue[i] = key
    while i > 1:
        key = min(key, queue[i ^ 1])
        i >>= 1
        queue[i] = key
        key = min(key, queue[i ^ 1])
        i >>= 1
        queue[i] = key
